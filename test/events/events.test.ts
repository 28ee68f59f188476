import t from '../helpers/tap.ts'
import { eventsAfter, type StoredEvent } from '../helpers/events.ts'
import { eventually } from '../helpers/identity.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { ownerPool } from '../helpers/database.ts'

const server = await startTestServer()
t.teardown(() => server.close())
// The tables' owner: one test adds a trigger to idempotency_keys.
const pool = ownerPool(server.platform.db.url)
t.teardown(() => pool.end())
const bulkPath = '/api/modules/incident/bulk'

/** Events of the tenant written since `since` (a position), oldest first. */
async function eventsSince(since: number, tenant = 'acme') {
  const { rows } = await pool.query(
    'SELECT position, type, subject_id, module_key, actor, data FROM events WHERE tenant_id = $1 AND position > $2 ORDER BY position',
    [tenant, since]
  )
  return rows
}
const lastPosition = async () =>
  Number((await pool.query('SELECT coalesce(max(position), 0) AS p FROM events')).rows[0].p)
const create = (overrides: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload(overrides) },
    headers
  })

t.test(
  'each single write that commits writes one event with what changed; a write that changes nothing writes none',
  async (t) => {
    const since = await lastPosition()
    const created = await create({ title: 'evented' })
    t.equal(created.status, 201)
    const id = created.body.id
    const patched = await server.request('PATCH', `/api/v1/records/${id}`, {
      body: { payload: { title: 'evented, renamed', site: 'Hull' } }
    })
    t.equal(patched.status, 200)
    const same = await server.request('PATCH', `/api/v1/records/${id}`, {
      body: { payload: { title: 'evented, renamed' } }
    })
    t.equal(same.status, 200)
    t.equal(same.body.version, 2, 'a patch that changes nothing is no change')
    const moved = await server.request('POST', `/api/v1/records/${id}:transition`, {
      body: {
        transition: 'start-investigation',
        comment: 'on it',
        payload: { investigationLead: '2c9d6f1e-7b3a-4e58-9f0d-1a2b3c4d5e6f' }
      }
    })
    t.equal(moved.status, 200)
    const deleted = await server.request('DELETE', `/api/v1/records/${id}`)
    t.equal(deleted.status, 200)

    const events = await eventsSince(since)
    t.same(
      events.map((e) => e.type),
      ['record.created', 'record.updated', 'record.transitioned', 'record.deleted']
    )
    t.ok(
      events.every((e) => e.subject_id === id && e.module_key === 'incident'),
      'every event names the record and its module'
    )
    t.same(
      events.map((e) => e.data.version),
      [1, 2, 3, 4],
      'each names the version it made'
    )
    t.ok(events.every((e) => e.data.number === created.body.number))
    t.same(
      events[1].data.changedFields.sort(),
      ['site', 'title'],
      'an update names the fields it changed, not their values'
    )
    t.same(events[2].data.transition, { key: 'start-investigation', from: 'reported', to: 'investigating' })
    t.same(events[2].data.changedFields, ['investigationLead'], 'and a transition those set with it')
    t.same(events[0].actor, created.body.createdBy, 'the actor is who made the change')
  }
)

t.test('writes that are refused write no event', async (t) => {
  const since = await lastPosition()
  const created = await create()
  const id = created.body.id
  const refused = [
    await create({ severity: 'catastrophic' }),
    await server.request('PATCH', `/api/v1/records/${id}`, {
      body: { payload: { title: 'stale' } },
      headers: { 'if-match': '"7"' }
    }),
    await server.request('POST', `/api/v1/records/${id}:transition`, { body: { transition: 'close' } }),
    await server.request('PATCH', `/api/v1/records/${id}`, { body: { payload: { severity: 'nope' } } })
  ]
  t.same(
    refused.map((r) => r.status),
    [400, 412, 409, 400]
  )
  t.same(
    (await eventsSince(since)).map((e) => e.type),
    ['record.created'],
    'only the create that went through'
  )
})

t.test('an idempotent replay answers again and writes no second event', async (t) => {
  const since = await lastPosition()
  const headers = { 'idempotency-key': `events-replay-${Date.now()}` }
  const first = await create({ title: 'once' }, headers)
  const again = await create({ title: 'once' }, headers)
  t.equal(first.status, 201)
  t.equal(again.status, 201)
  t.equal(again.body.id, first.body.id)
  const patchHeaders = { 'idempotency-key': `events-replay-patch-${Date.now()}` }
  for (let i = 0; i < 2; i++)
    t.equal(
      (
        await server.request('PATCH', `/api/v1/records/${first.body.id}`, {
          body: { payload: { site: 'York' } },
          headers: patchHeaders
        })
      ).status,
      200
    )
  t.same(
    (await eventsSince(since)).map((e) => e.type),
    ['record.created', 'record.updated']
  )
})

t.test('a write rolled back after its change was written leaves no event and no record', async (t) => {
  // Storing the answer under its Idempotency-Key is the last step of the create's
  // transaction; make it fail there, after the record and its event were written.
  await pool.query(
    `CREATE FUNCTION test_refuse_answer() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`
  )
  await pool.query(
    `CREATE TRIGGER test_refuse_answer BEFORE UPDATE ON idempotency_keys FOR EACH ROW WHEN (NEW.state <> 'in_flight') EXECUTE FUNCTION test_refuse_answer()`
  )
  t.teardown(async () => {
    await pool.query('DROP TRIGGER IF EXISTS test_refuse_answer ON idempotency_keys')
    await pool.query('DROP FUNCTION IF EXISTS test_refuse_answer()')
  })
  const since = await lastPosition()
  const records = async () =>
    Number(
      (
        await pool.query(
          `SELECT count(*) AS n FROM records WHERE tenant_id = 'acme' AND payload->>'title' = 'rolled back'`
        )
      ).rows[0].n
    )
  const failed = await create({ title: 'rolled back' }, { 'idempotency-key': `events-rollback-${Date.now()}` })
  t.equal(failed.status, 500)
  t.equal(await records(), 0, 'the record is gone with the transaction')
  t.same(await eventsSince(since), [], 'and so is its event')
})

t.test(
  'bulk rows write one event each: created, updated when an upsert changed something, none when unchanged, rejected or replayed',
  async (t) => {
    const since = await lastPosition()
    const tag = Date.now()
    const rows = [
      { payload: incidentPayload({ title: 'bulk 1' }), externalRef: `EV-${tag}-1` },
      { payload: incidentPayload({ title: 'bulk 2' }), externalRef: `EV-${tag}-2` },
      { payload: incidentPayload({ severity: 'catastrophic' }), externalRef: `EV-${tag}-3` }
    ]
    const loaded = await bulkCall(server.url, bulkPath, server.keys.acme, ndjson(rows))
    t.same(
      loaded.lines.slice(0, 3).map((l) => l.status),
      ['created', 'created', 'error']
    )
    let events = await eventsSince(since)
    t.same(
      events.map((e) => e.type),
      ['record.created', 'record.created']
    )
    t.same(new Set(events.map((e) => e.subject_id)), new Set([loaded.lines[0].id, loaded.lines[1].id]))
    t.same(new Set(events.map((e) => e.data.number)), new Set([loaded.lines[0].number, loaded.lines[1].number]))

    const mid = await lastPosition()
    const upsert = ndjson([
      { payload: { title: 'bulk 1, renamed' }, externalRef: `EV-${tag}-1` },
      { payload: { title: 'bulk 2' }, externalRef: `EV-${tag}-2` }
    ])
    const key = { 'idempotency-key': `events-bulk-${tag}` }
    const upserted = await bulkCall(server.url, bulkPath, server.keys.acme, upsert, key)
    t.same(
      upserted.lines.slice(0, 2).map((l) => l.status),
      ['updated', 'unchanged']
    )
    events = await eventsSince(mid)
    t.same(
      events.map((e) => [e.type, e.subject_id, e.data.changedFields]),
      [['record.updated', loaded.lines[0].id, ['title']]]
    )

    const replayed = await bulkCall(server.url, bulkPath, server.keys.acme, upsert, key)
    t.equal(replayed.lines.at(-1).summary.replayed, 2)
    const dry = await bulkCall(
      server.url,
      `${bulkPath}?dryRun=true`,
      server.keys.acme,
      ndjson([{ payload: incidentPayload({ title: 'dry' }) }])
    )
    t.equal(dry.lines[0].status, 'valid')
    t.equal((await eventsSince(mid)).length, 1, 'a replayed call and a dry run write none')
  }
)

t.test('a verified attachment writes attachment.added once, naming the record', async (t) => {
  const record = (await create()).body
  const since = await lastPosition()
  const body = Buffer.from('%PDF-1.4 events test')
  const { createHash } = await import('node:crypto')
  const created = await server.request('POST', '/api/v1/attachments', {
    body: {
      recordId: record.id,
      fileName: 'photo.pdf',
      contentType: 'application/pdf',
      size: body.length,
      sha256: createHash('sha256').update(body).digest('hex')
    }
  })
  t.equal(created.status, 201)
  const put = () =>
    fetch(created.body.upload.url, { method: 'PUT', headers: created.body.upload.headers, body: new Uint8Array(body) })
  t.equal((await put()).status, 200)
  t.equal((await server.request('POST', `/api/v1/attachments/${created.body.id}:complete`)).status, 200)
  const events = await eventsSince(since)
  t.same(
    events.map((e) => [e.type, e.subject_id, e.module_key]),
    [['attachment.added', record.id, 'incident']]
  )
  t.match(events[0].data, {
    attachmentId: created.body.id,
    fileName: 'photo.pdf',
    contentType: 'application/pdf',
    size: body.length
  })
})

t.test("events of one tenant are not another tenant's, and a reader gets them in order of position", async (t) => {
  const since = await lastPosition()
  const other = await server.request('POST', '/api/v1/records', {
    token: server.keys.globex,
    body: { moduleKey: 'incident', payload: incidentPayload() }
  })
  t.equal(other.status, 201)
  const mine = await create()
  // A reader waits for transactions still running anywhere on the server (other test files share it) to end.
  let acme: StoredEvent[] = []
  let globex: StoredEvent[] = []
  t.ok(
    await eventually(async () => {
      ;[acme, globex] = await Promise.all([eventsAfter(pool, 'acme', since), eventsAfter(pool, 'globex', since)])
      return acme.length > 0 && globex.length > 0
    }, 10_000),
    'both are readable once written'
  )
  t.same(
    acme.map((e) => e.subjectId),
    [mine.body.id]
  )
  t.same(
    globex.map((e) => e.subjectId),
    [other.body.id]
  )
  t.match(acme[0], { type: 'record.created', moduleKey: 'incident', id: /^[0-9a-f-]{36}$/, occurredAt: /Z$/ })
})

t.test('an export that fails writes export.failed once, however often its failure is recorded', async (t) => {
  const { markFailed } = await import('../../plugins/exports/exports.repository.ts')
  // Jobs are off in this server, so the export stays queued until it is failed here, as the job does when it gives up.
  const created = await server.request('POST', '/api/v1/exports', { body: { moduleKey: 'incident', format: 'csv' } })
  t.equal(created.status, 202)
  const since = await lastPosition()
  const problem = { status: 500, code: 'export.attempts_exhausted', detail: 'given up' }
  await markFailed(pool, 'acme', created.body.id, problem)
  await markFailed(pool, 'acme', created.body.id, problem)
  const events = await eventsSince(since)
  t.same(
    events.map((e) => [e.type, e.subject_id, e.module_key, e.data]),
    [['export.failed', created.body.id, 'incident', { format: 'csv', code: 'export.attempts_exhausted' }]]
  )
  t.match(events[0].actor, { type: 'api-key' }, 'the actor is who asked for the export')
  t.equal((await server.request('GET', `/api/v1/exports/${created.body.id}`)).body.status, 'failed')
})
