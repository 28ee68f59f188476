import { createHash, randomUUID } from 'node:crypto'
import { rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import { whileAnswerIsStored } from '../helpers/idempotency.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())
const { storage, db } = server.platform
const pool = db.system

const pdf = Buffer.from('%PDF-1.4\n% Site photo log, bay 4\n%%EOF\n')
const sha = createHash('sha256').update(pdf).digest('hex')
const incident = (
  await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })
).body
const attachmentCount = async () =>
  (
    await pool.query("SELECT count(*)::int AS n FROM attachments WHERE tenant_id = 'acme' AND record_id = $1", [
      incident.id
    ])
  ).rows[0].n as number
const ask = (key: string, overrides: Record<string, unknown> = {}) =>
  server.request('POST', '/api/v1/attachments', {
    body: {
      recordId: incident.id,
      fileName: 'photos.pdf',
      contentType: 'application/pdf',
      size: pdf.length,
      sha256: sha,
      ...overrides
    },
    headers: { 'idempotency-key': key }
  })
const complete = (id: string, key: string) =>
  server.request('POST', `/api/v1/attachments/${id}:complete`, { headers: { 'idempotency-key': key } })

/** The bytes put straight into storage, as an S3 upload would: pending until `:complete`. */
async function storedButPending(): Promise<string> {
  const created = await ask(randomUUID())
  const file = join(tmpdir(), `records-idem-${created.body.id}`)
  writeFileSync(file, pdf)
  await storage.putFile(`acme/${incident.id}/${created.body.id}`, file, 'application/pdf')
  rmSync(file)
  return created.body.id
}

t.test(
  'an upload URL asked for again with the same Idempotency-Key replays the stored 201 and creates one attachment',
  async (t) => {
    const key = randomUUID()
    const before = await attachmentCount()
    const first = await ask(key)
    t.equal(first.status, 201)
    t.equal(first.headers.get('idempotent-replayed'), null)
    const retry = await ask(key)
    t.equal(retry.status, 201)
    t.equal(retry.text, first.text, 'the same attachment and the same upload URL, byte for byte')
    t.equal(retry.headers.get('idempotent-replayed'), 'true')
    t.equal(retry.headers.get('cache-control'), 'no-store', 'the signed URL is not cached on a replay either')
    t.equal(await attachmentCount(), before + 1, 'one attachment')
    const upload = await fetch(retry.body.upload.url, {
      method: 'PUT',
      headers: retry.body.upload.headers,
      body: new Uint8Array(pdf)
    })
    t.equal(upload.status, 200, 'the replayed URL uploads the one attachment')
  }
)

t.test('the same key with another attachment request is 422 idempotency.key_reused and creates nothing', async (t) => {
  const key = randomUUID()
  t.equal((await ask(key)).status, 201)
  const before = await attachmentCount()
  const other = await ask(key, { fileName: 'other.pdf' })
  t.equal(other.status, 422)
  t.equal(other.body.code, 'idempotency.key_reused')
  t.equal(await attachmentCount(), before)
})

t.test("an attachment's row commits in the same transaction as its stored answer", async (t) => {
  const key = randomUUID()
  const before = await attachmentCount()
  const reply = await whileAnswerIsStored(pool, {
    key,
    table: 'attachments',
    send: () => ask(key),
    whileBlocked: async () =>
      void t.equal(
        await attachmentCount(),
        before,
        'while its answer cannot be stored, the attachment is not committed either'
      )
  })
  t.equal(reply.status, 201)
  t.equal(await attachmentCount(), before + 1)
  t.equal((await ask(key)).headers.get('idempotent-replayed'), 'true')
})

t.test(
  ':complete retried with the same key replays its stored answer; with another attachment the key is 422',
  async (t) => {
    const id = await storedButPending()
    const key = randomUUID()
    const first = await complete(id, key)
    t.equal(first.status, 200)
    t.equal(first.body.state, 'ready')
    const retry = await complete(id, key)
    t.equal(retry.status, 200)
    t.equal(retry.text, first.text)
    t.equal(retry.headers.get('idempotent-replayed'), 'true')
    const other = await complete(await storedButPending(), key)
    t.equal(other.status, 422)
    t.equal(other.body.code, 'idempotency.key_reused')
  }
)

t.test(':complete marks the attachment ready in the same transaction as its stored answer', async (t) => {
  const id = await storedButPending()
  const key = randomUUID()
  const state = async () =>
    (await pool.query("SELECT state FROM attachments WHERE tenant_id = 'acme' AND id = $1", [id])).rows[0].state
  const reply = await whileAnswerIsStored(pool, {
    key,
    table: 'attachments',
    send: () => complete(id, key),
    whileBlocked: async () =>
      void t.equal(await state(), 'pending', 'while its answer cannot be stored, the attachment is not ready either')
  })
  t.equal(reply.status, 200)
  t.equal(await state(), 'ready')
})
