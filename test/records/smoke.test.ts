import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

t.test('creates an incident and reads it back with its activity', async (t) => {
  const created = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload() }
  })
  t.equal(created.status, 201)
  t.match(created.body.number, /^INC-\d{4}-00001$/)
  const got = await server.request('GET', `/api/v1/records/${created.body.id}`)
  t.equal(got.status, 200)
  t.same(got.body.payload, incidentPayload())
  t.equal(got.body.activity.length, 1)
})
