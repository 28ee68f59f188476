// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import { randomUUID } from 'node:crypto'
import t from '../helpers/tap.ts'
import { whileAnswerIsStored } from '../helpers/idempotency.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

// Jobs are not processed here: every export stays queued, which is all these tests look at.
const server = await startTestServer()
t.teardown(async () => {
  await server.close()
  // Agenda leaves a referenced timer behind (see test/idempotency/purge-job.test.ts).
  setTimeout(() => process.exit(), 200).unref()
})
const pool = server.platform.db.system
const exportCount = async () =>
  (await pool.query("SELECT count(*)::int AS n FROM export_jobs WHERE tenant_id = 'acme'")).rows[0].n as number
const renderJobs = async (id: string) =>
  (
    await pool.query(
      "SELECT count(*)::int AS n FROM agenda_jobs WHERE name = 'exports.render' AND data->>'exportId' = $1",
      [id]
    )
  ).rows[0].n as number
const start = (body: unknown, key: string) =>
  server.request('POST', '/api/v1/exports', { body, headers: { 'idempotency-key': key } })

await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })

t.test('an export started again with the same Idempotency-Key answers the stored 202 and queues one job', async (t) => {
  const key = randomUUID()
  const body = { moduleKey: 'incident', format: 'csv', filters: { state: 'reported' } }
  const before = await exportCount()
  const first = await start(body, key)
  t.equal(first.status, 202)
  t.equal(first.headers.get('location'), `/api/v1/exports/${first.body.id}`)
  t.equal(first.headers.get('idempotent-replayed'), null, 'the first answer is no replay')
  const retry = await start(body, key)
  t.equal(retry.status, 202, 'the same status')
  t.equal(retry.text, first.text, 'the same body, byte for byte')
  t.equal(retry.headers.get('location'), first.headers.get('location'), 'the same Location')
  t.equal(retry.headers.get('idempotent-replayed'), 'true')
  t.equal(await exportCount(), before + 1, 'one export')
  t.equal(await renderJobs(first.body.id), 1, 'one render job')
})

t.test('the same key with another export request is 422 idempotency.key_reused and starts nothing', async (t) => {
  const key = randomUUID()
  t.equal((await start({ moduleKey: 'incident', format: 'csv' }, key)).status, 202)
  const before = await exportCount()
  const other = await start({ moduleKey: 'incident', format: 'pdf' }, key)
  t.equal(other.status, 422)
  t.equal(other.body.code, 'idempotency.key_reused')
  t.equal(await exportCount(), before)
})

t.test('a refused export is stored under its key and replayed as it was', async (t) => {
  const key = randomUUID()
  const body = { moduleKey: 'incident', format: 'csv', columns: ['number', 'colour'] }
  const first = await start(body, key)
  t.equal(first.status, 400)
  const retry = await start(body, key)
  t.equal(retry.status, 400)
  t.equal(retry.text, first.text)
  t.equal(retry.headers.get('idempotent-replayed'), 'true')
})

t.test("an export's row commits in the same transaction as its stored answer", async (t) => {
  const key = randomUUID()
  const before = await exportCount()
  const reply = await whileAnswerIsStored(pool, {
    key,
    table: 'export_jobs',
    send: () => start({ moduleKey: 'incident', format: 'xlsx' }, key),
    whileBlocked: async () =>
      void t.equal(await exportCount(), before, 'while its answer cannot be stored, the export is not committed either')
  })
  t.equal(reply.status, 202)
  t.equal(await exportCount(), before + 1)
  const stored = (await pool.query('SELECT state, status, body FROM idempotency_keys WHERE key = $1', [key])).rows[0]
  t.match(stored, { state: 'done', status: 202, body: { id: reply.body.id, status: 'queued' } })
  const retry = await start({ moduleKey: 'incident', format: 'xlsx' }, key)
  t.equal(retry.headers.get('idempotent-replayed'), 'true')
  t.equal(retry.body.id, reply.body.id)
})

t.test('a malformed Idempotency-Key is refused with 400 before anything is queued', async (t) => {
  const before = await exportCount()
  const bad = await start({ moduleKey: 'incident', format: 'csv' }, 'not a key')
  t.equal(bad.status, 400)
  t.equal(bad.body.code, 'idempotency.key_invalid')
  t.equal(await exportCount(), before)
})
