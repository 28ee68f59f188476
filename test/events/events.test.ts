import t from 'tap'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * One event per committed change, on every write path, written in the change's own
 * transaction: a replay, an unchanged row, a refused write and a rolled-back dry run
 * produce none.
 */
const server = await startTestServer()
t.teardown(() => server.close())
const pool = server.platform.db.pool
const bulkPath = '/api/modules/incident/bulk'

interface Event { position: string; type: string; record_id: string; module_key: string; actor: { type: string }; data: { number: string; state: string; version: number; changes: Array<{ field: string }>; transition: { key: string; from: string; to: string } | null } }
let seen = 0n
/** The events written since the last call, in position order. */
async function newEvents(tenant = 'acme'): Promise<Event[]> {
  const { rows } = await pool.query<Event>('SELECT position::text, type, record_id, module_key, actor, data FROM events e WHERE tenant_id = $1 AND e.position > $2 ORDER BY e.position', [tenant, String(seen)])
  if (rows.length) seen = BigInt(rows.at(-1)!.position)
  return rows
}

t.test('single writes: created, updated with the changed fields, transitioned with from and to, deleted', async (t) => {
  await newEvents()
  const created = await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })
  const id = created.body.id
  t.match(await newEvents(), [{ type: 'record.created', record_id: id, module_key: 'incident', actor: { type: 'api-key' }, data: { number: created.body.number, state: 'reported', version: 1 } }])
  await server.request('PATCH', `/api/v1/records/${id}`, { body: { payload: { severity: 'high' } } })
  t.match(await newEvents(), [{ type: 'record.updated', data: { version: 2, changes: [{ field: 'severity' }] } }])
  await server.request('POST', `/api/v1/records/${id}:transition`, { body: { transition: 'start-investigation', payload: { investigationLead: '6d1f3c52-3b7e-4c55-9d1e-0c5b8a1f2e11' } } })
  t.match(await newEvents(), [{ type: 'record.transitioned', data: { state: 'investigating', transition: { key: 'start-investigation', from: 'reported', to: 'investigating' } } }])
  await server.request('DELETE', `/api/v1/records/${id}`)
  t.match(await newEvents(), [{ type: 'record.deleted', record_id: id }])
})

t.test('no event for a change that changes nothing, a refused write, or a replay', async (t) => {
  const created = await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload({ severity: 'low' }) }, headers: { 'idempotency-key': 'events-replay-1' } })
  t.equal((await newEvents()).length, 1)
  const again = await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload({ severity: 'low' }) }, headers: { 'idempotency-key': 'events-replay-1' } })
  t.equal(again.headers.get('idempotent-replayed'), 'true')
  t.same(await newEvents(), [], 'a replay: none')
  await server.request('PATCH', `/api/v1/records/${created.body.id}`, { body: { payload: { severity: 'low' } } })
  t.same(await newEvents(), [], 'an unchanged payload: none')
  const refused = await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: { title: 'no description' } } })
  t.equal(refused.status, 400)
  t.same(await newEvents(), [], 'a refused write: none')
})

t.test('bulk: one event per created or updated row, none for unchanged rows, failed rows or a rolled-back dry run', async (t) => {
  await newEvents()
  const rows = [1, 2, 3].map((i) => ({ payload: incidentPayload({ title: `bulk ${i}` }), externalRef: `EV-${i}` }))
  const dry = await bulkCall(server.url, `${bulkPath}?dryRun=true`, server.keys.acme, ndjson(rows))
  t.match(dry.lines.at(-1), { summary: { valid: 3 } })
  t.same(await newEvents(), [], 'a dry run writes and rolls back: none')

  const load = await bulkCall(server.url, bulkPath, server.keys.acme, ndjson([...rows, { payload: { title: 'missing fields' }, externalRef: 'EV-bad' }]))
  t.match(load.lines.at(-1), { summary: { created: 3, errors: 1 } })
  const created = await newEvents()
  t.same(created.map((e) => e.type), ['record.created', 'record.created', 'record.created'])
  t.same(created.map((e) => e.data.number), load.lines.slice(0, 3).map((l) => l.number), 'in row order')

  const upsert = await bulkCall(server.url, bulkPath, server.keys.acme, ndjson([{ payload: { severity: 'critical' }, externalRef: 'EV-1' }, { payload: { title: 'bulk 2' }, externalRef: 'EV-2' }]))
  t.match(upsert.lines.at(-1), { summary: { updated: 1, unchanged: 1 } })
  t.match(await newEvents(), [{ type: 'record.updated', data: { changes: [{ field: 'severity' }] } }])
})

t.test("positions order a tenant's events, and another tenant's writes are not among them", async (t) => {
  await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() }, token: server.keys.globex })
  t.same(await newEvents(), [], "globex's write is not acme's event")
  const { rows } = await pool.query('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', ['globex'])
  t.equal(rows[0].n, 1)
})
