import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { webhookTestConfig } from '../webhooks/receiver.ts'

const server = await startTestServer(webhookTestConfig())
t.teardown(() => server.close())

const admin = await server.platform.users.create('acme', {
  userName: 'ada',
  password: 'correct horse battery staple',
  roles: ['admin']
})
const session = await server.platform.sessions.create('acme', admin.id)
const cookie = `records_session=${session.cookieValue}`

const subscribe = async () => {
  const res = await server.request('POST', '/api/v1/webhooks', {
    body: { url: 'http://127.0.0.1:9/hook', kinds: ['record.created'] }
  })
  if (res.status !== 201) throw new Error(`setup: subscribe answered ${res.status} ${res.text}`)
  return res.body.id as string
}

t.test(
  'a session request without its CSRF token is refused on an API path spelled with extra leading slashes',
  async (t) => {
    const id = await subscribe()
    for (const path of [
      `//api/v1/webhooks/${id}`,
      `///api/v1/webhooks/${id}`,
      `/api//v1/webhooks/${id}`,
      `/api/v1//webhooks/${id}`
    ]) {
      const res = await server.request('DELETE', path, { token: null, headers: { cookie } })
      t.equal(res.status, 403, `DELETE ${path}`)
      t.equal(res.body.code, 'auth.csrf')
    }
    const still = await server.request('GET', `/api/v1/webhooks/${id}`)
    t.equal(still.status, 200, 'the subscription still exists')
    const withToken = await server.request('DELETE', `//api/v1/webhooks/${id}`, {
      token: null,
      headers: { cookie, 'x-csrf-token': session.csrfToken }
    })
    t.equal(withToken.status, 200, 'with the token the same request is served, as the router reads the path')
  }
)

t.test(
  'the route guard reads the path as the router does: POST on an item URL with a doubled slash is 405 and creates nothing',
  async (t) => {
    const created = await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload() }
    })
    const before = (await server.platform.db.system.query('SELECT count(*)::int AS n FROM records')).rows[0].n
    const res = await server.request('POST', `//api/v1/records/${created.body.id}`, {
      body: { moduleKey: 'incident', payload: incidentPayload() }
    })
    t.equal(res.status, 405)
    t.equal(res.headers.get('allow'), 'GET, PATCH, DELETE, HEAD')
    t.equal(
      (await server.platform.db.system.query('SELECT count(*)::int AS n FROM records')).rows[0].n,
      before,
      'nothing was created'
    )
    const collection = await server.request('DELETE', '//api/v1/records')
    t.equal(collection.status, 405, 'DELETE on the collection, doubled slash: 405')
  }
)

t.test('a JSON body sent to an API path with a doubled slash is read as on the canonical path', async (t) => {
  const res = await server.request('POST', '//api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Doubled slash' }) }
  })
  t.equal(res.status, 201)
  t.equal(res.body.payload.title, 'Doubled slash')
})
