import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

const create = async (payload = incidentPayload()) =>
  (await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload } })).body

t.test('incremental sync with includeDeleted sees deletions, which plain lists hide', async (t) => {
  const kept = await create()
  const gone = await create()
  const since = new Date(Date.now() - 60_000).toISOString()
  t.equal((await server.request('DELETE', `/api/v1/records/${gone.id}`)).status, 200)

  const plain = await server.request('GET', `/api/v1/records?moduleKey=incident&updatedSince=${since}`)
  t.same(
    plain.body.items.map((r: any) => r.id),
    [kept.id]
  )

  const sync = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&updatedSince=${since}&includeDeleted=true`
  )
  t.equal(sync.status, 200)
  const byId = new Map(sync.body.items.map((r: any) => [r.id, r]))
  t.ok(byId.has(kept.id))
  t.match(byId.get(gone.id), { id: gone.id, deletedAt: /Z$/ }, 'the deleted record comes with deletedAt')
  t.notOk((byId.get(kept.id) as any).deletedAt)
})

t.test('a cursor issued with includeDeleted is refused without it', async (t) => {
  for (let i = 0; i < 3; i++) await create()
  const first = await server.request('GET', '/api/v1/records?moduleKey=incident&limit=1&includeDeleted=true')
  t.ok(first.body.nextCursor)
  const mixed = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&limit=1&cursor=${encodeURIComponent(first.body.nextCursor)}`
  )
  t.equal(mixed.status, 400)
  t.equal(mixed.body.code, 'cursor.invalid')
})

t.test('a cursor of one tenant is refused for another tenant with the same filters', async (t) => {
  const first = await server.request('GET', '/api/v1/records?moduleKey=incident&limit=1')
  t.ok(first.body.nextCursor)
  const other = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&limit=1&cursor=${encodeURIComponent(first.body.nextCursor)}`,
    { token: server.keys.globex }
  )
  t.equal(other.status, 400)
  t.equal(other.body.code, 'cursor.invalid')
})

t.test(
  'a corrective action stays editable after its incident is deleted, but cannot be pointed at a deleted incident',
  async (t) => {
    const incident = await create()
    const other = await create()
    const action = await server.request('POST', '/api/v1/records', {
      body: {
        moduleKey: 'corrective-action',
        payload: { title: 'Fit mirrors', incident: incident.id, kind: 'corrective' }
      }
    })
    t.equal(action.status, 201)
    t.equal((await server.request('DELETE', `/api/v1/records/${incident.id}`)).status, 200)

    const edit = await server.request('PATCH', `/api/v1/records/${action.body.id}`, {
      body: { payload: { title: 'Fit convex mirrors' } }
    })
    t.equal(edit.status, 200, 'an unrelated field can still change')

    t.equal((await server.request('DELETE', `/api/v1/records/${other.id}`)).status, 200)
    const relink = await server.request('PATCH', `/api/v1/records/${action.body.id}`, {
      body: { payload: { incident: other.id } }
    })
    t.equal(relink.status, 400)
    t.equal(relink.body.errors[0].field, 'payload.incident')
  }
)
