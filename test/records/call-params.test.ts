import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * A caller without HTTP (a GraphQL resolver, the CLI, a job) gives the service what REST
 * sends as headers and routes in plain call params: `ifMatch`, `idempotencyKey`, `id`.
 * The rules are the same as over REST; nothing has to fake a header.
 */
const server = await startTestServer()
t.teardown(() => server.close())
const app = server.running.app
const principal = await server.platform.credentials.authenticate(`Bearer ${server.keys.acme}`)
const records = app.service('api/v1/records')
const count = async () =>
  (await server.platform.db.system.query("SELECT count(*)::int AS n FROM records WHERE tenant_id = 'acme'")).rows[0]
    .n as number

t.test('ifMatch makes a change conditional, as If-Match does', async (t) => {
  const r = await records.create({ moduleKey: 'incident', payload: incidentPayload() }, { principal })
  await t.rejects(records.patch(r.id, { payload: { severity: 'high' } }, { principal, ifMatch: '"7"' }), { code: 412 })
  t.equal((await records.patch(r.id, { payload: { severity: 'high' } }, { principal, ifMatch: '"1"' })).version, 2)
})

t.test('id names the target of a custom method, as the {id} of POST /records/{id}:transition does', async (t) => {
  const r = await records.create({ moduleKey: 'incident', payload: incidentPayload() }, { principal })
  const moved = await records.transition(
    { transition: 'start-investigation', payload: { investigationLead: '6d1f3c52-3b7e-4c55-9d1e-0c5b8a1f2e11' } },
    { principal, id: r.id, ifMatch: '"1"' }
  )
  t.match(moved, { state: 'investigating', version: 2 })
  await t.rejects(records.transition({ transition: 'close' }, { principal }), { code: 404 }, 'no id: no record')
})

t.test('idempotencyKey makes a create safe to retry, as Idempotency-Key does', async (t) => {
  const before = await count()
  const first = await records.create(
    { moduleKey: 'incident', payload: incidentPayload() },
    { principal, idempotencyKey: 'internal-call-1' }
  )
  const again = await records.create(
    { moduleKey: 'incident', payload: incidentPayload() },
    { principal, idempotencyKey: 'internal-call-1' }
  )
  t.equal(again.id, first.id, 'the retry answers the same record')
  t.equal(await count(), before + 1, 'one record written')
})

t.test('over REST, the headers still arrive as those params', async (t) => {
  const created = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload() }
  })
  const stale = await server.request('PATCH', `/api/v1/records/${created.body.id}`, {
    body: { payload: { severity: 'high' } },
    headers: { 'if-match': '"9"' }
  })
  t.equal(stale.status, 412)
})
