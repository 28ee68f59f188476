import t from '../helpers/tap.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * A bulk call's Idempotency-Key is a key of the one state machine (plugins/idempotency,
 * idempotency.keys.ts) with per-row outcomes hanging off it: what that adds and what it
 * shares with single writes.
 */
const server = await startTestServer()
t.teardown(() => server.close())
const token = server.keys.acme
const pool = server.platform.db.system
const path = '/api/modules/incident/bulk'
const file = (tag: string) =>
  ndjson([1, 2].map((i) => ({ payload: incidentPayload({ title: `${tag} ${i}` }), externalRef: `${tag}-${i}` })))

t.test('a complete call sent again with its key replays every row and writes nothing', async (t) => {
  const first = await bulkCall(server.url, path, token, file('AGAIN'), { 'Idempotency-Key': 'bulk-again' })
  const again = await bulkCall(server.url, path, token, file('AGAIN'), { 'Idempotency-Key': 'bulk-again' })
  t.same(
    again.lines.slice(0, 2),
    first.lines.slice(0, 2).map((l: any) => ({ ...l, replayed: true }))
  )
  t.match(again.lines[2].summary, { replayed: 2, created: 2, complete: true })
})

t.test(
  'a key past its retention starts afresh: its stored rows are not replayed, the rows are loaded anew',
  async (t) => {
    const first = await bulkCall(server.url, path, token, file('EXPIRED'), { 'Idempotency-Key': 'bulk-expired' })
    t.same(
      first.lines.slice(0, 2).map((l: any) => l.status),
      ['created', 'created']
    )
    await pool.query(
      "UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE tenant_id = 'acme' AND key = 'bulk-expired'"
    )
    const later = await bulkCall(server.url, path, token, file('EXPIRED'), { 'Idempotency-Key': 'bulk-expired' })
    t.equal(later.status, 200)
    t.same(
      later.lines.slice(0, 2).map((l: any) => [l.status, l.id, l.replayed]),
      first.lines.slice(0, 2).map((l: any) => ['unchanged', l.id, undefined]),
      'written again (the same externalRef: unchanged), not replayed'
    )
    t.match(later.lines[2].summary, { replayed: 0, unchanged: 2, complete: true })
  }
)

t.test('one key, one state machine: a key used by a single write is refused to a bulk call, and back', async (t) => {
  const single = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload() },
    headers: { 'Idempotency-Key': 'shared-key' }
  })
  t.equal(single.status, 201)
  const bulk = await bulkCall(server.url, path, token, file('SHARED'), { 'Idempotency-Key': 'shared-key' })
  t.equal(bulk.status, 422)
  t.equal(bulk.body.code, 'idempotency.key_reused')

  await bulkCall(server.url, path, token, file('SHARED2'), { 'Idempotency-Key': 'bulk-first' })
  const after = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload() },
    headers: { 'Idempotency-Key': 'bulk-first' }
  })
  t.equal(after.status, 422)
  t.equal(after.body.code, 'idempotency.key_reused')
})
