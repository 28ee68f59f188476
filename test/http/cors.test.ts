import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer, type TestServer } from '../helpers/server.ts'
import { loadConfig } from '../../core/config.ts'

const app = 'https://app.example.com'
const open = await startTestServer({
  http: { cors: { origins: [app, 'http://localhost:5173'], credentials: false, maxAgeSeconds: 600 } }
})
const closed = await startTestServer()
t.teardown(async () => {
  await open.close()
  await closed.close()
})

const preflight = (
  s: TestServer,
  path: string,
  method: string,
  origin = app,
  headers = 'authorization, content-type, idempotency-key'
) =>
  s.request('OPTIONS', path, {
    token: null,
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers }
  })

t.test(
  'a preflight from an allowed origin is 204 with the verbs of the path, the headers the API reads and a max age',
  async (t) => {
    const res = await preflight(open, '/api/v1/records', 'POST')
    t.equal(res.status, 204)
    t.equal(res.text, '')
    t.equal(res.headers.get('access-control-allow-origin'), app)
    t.equal(res.headers.get('access-control-allow-methods'), 'GET, POST, HEAD')
    t.equal(res.headers.get('allow'), 'GET, POST, HEAD, OPTIONS')
    const allowed = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(', ')
    for (const h of ['authorization', 'content-type', 'idempotency-key', 'if-match', 'if-none-match', 'traceparent'])
      t.ok(allowed.includes(h), `allows ${h}`)
    t.equal(res.headers.get('access-control-max-age'), '600')
    t.equal(res.headers.get('access-control-allow-credentials'), null, 'no credentials unless configured')
    t.match(res.headers.get('vary') ?? '', /Origin/)
  }
)

t.test('the verbs of a preflight are those of the path it asks about', async (t) => {
  const item = await preflight(open, '/api/v1/records/5f1c0f6e-0000-4000-8000-000000000000', 'PATCH')
  t.equal(item.status, 204)
  t.equal(item.headers.get('access-control-allow-methods'), 'GET, PATCH, DELETE, HEAD')
  const transition = await preflight(open, '/api/v1/records/5f1c0f6e-0000-4000-8000-000000000000:transition', 'POST')
  t.equal(transition.status, 204, 'a colon method')
  t.equal(transition.headers.get('access-control-allow-methods'), 'POST')
  const bulk = await preflight(open, '/api/modules/incident/bulk', 'POST', app, 'authorization, content-type')
  t.equal(bulk.status, 204, "a feature's own streamed route")
  t.equal(bulk.headers.get('access-control-allow-methods'), 'POST')
  const graphql = await preflight(open, '/api/graphql', 'POST')
  t.equal(graphql.headers.get('access-control-allow-methods'), 'GET, POST')
  const nowhere = await preflight(open, '/api/v1/nothing-here', 'GET')
  t.equal(nowhere.status, 404, 'an unknown path stays 404')
  t.equal(nowhere.headers.get('access-control-allow-methods'), null)
})

t.test('a preflight from an origin not listed gets no CORS headers, so the browser stops', async (t) => {
  const res = await preflight(open, '/api/v1/records', 'POST', 'https://evil.example')
  t.equal(res.headers.get('access-control-allow-origin'), null)
  t.equal(res.headers.get('access-control-allow-methods'), null)
})

t.test(
  'without configured origins (the default) no origin is allowed, and OPTIONS is still answered with Allow',
  async (t) => {
    const res = await preflight(closed, '/api/v1/records', 'POST')
    t.equal(res.status, 204)
    t.equal(res.headers.get('allow'), 'GET, POST, HEAD, OPTIONS')
    t.equal(res.headers.get('access-control-allow-origin'), null)
    t.equal(res.headers.get('access-control-allow-methods'), null)
    const plain = await closed.request('OPTIONS', '/api/v1/modules', { token: null })
    t.equal(plain.status, 204, 'a plain OPTIONS (not a preflight) is answered too')
    t.equal(plain.headers.get('allow'), 'GET, HEAD, OPTIONS')
  }
)

t.test(
  'an answer to an allowed origin names it and exposes ETag, Location, X-Trace-Id and the rate-limit headers',
  async (t) => {
    const res = await open.request('POST', '/api/v1/records', {
      headers: { origin: app },
      body: { moduleKey: 'incident', payload: incidentPayload() }
    })
    t.equal(res.status, 201)
    t.equal(res.headers.get('access-control-allow-origin'), app)
    const exposed = (res.headers.get('access-control-expose-headers') ?? '').toLowerCase().split(', ')
    for (const h of [
      'etag',
      'location',
      'x-trace-id',
      'x-ratelimit-limit',
      'x-ratelimit-remaining',
      'x-ratelimit-reset',
      'retry-after'
    ])
      t.ok(exposed.includes(h), `exposes ${h}`)
    const refused = await open.request('GET', '/api/v1/records/not-a-record', { headers: { origin: app } })
    t.equal(refused.status, 404)
    t.equal(refused.headers.get('access-control-allow-origin'), app, 'a problem answer too, so the page can read it')
    const other = await open.request('GET', '/api/v1/modules', { headers: { origin: 'https://evil.example' } })
    t.equal(other.status, 200, 'the request itself is not refused (CORS guards reading, the token guards the API)')
    t.equal(other.headers.get('access-control-allow-origin'), null)
  }
)

t.test('credentials are sent only when configured, and never with the origin *', async (t) => {
  t.throws(
    () => loadConfig({ http: { cors: { origins: ['*'], credentials: true, maxAgeSeconds: 600 } } }),
    /\/http\/cors\/credentials cannot be true with the origin \*/
  )
  t.throws(
    () =>
      loadConfig({
        http: { cors: { origins: ['https://app.example.com/'], credentials: false, maxAgeSeconds: 600 } }
      }),
    /\/http\/cors\/origins has "https:\/\/app\.example\.com\/"/
  )
  const any = await startTestServer({
    http: { cors: { origins: ['*'], credentials: false, maxAgeSeconds: 60 } }
  })
  t.teardown(() => any.close())
  const res = await preflight(any, '/api/v1/records', 'POST', 'https://anyone.example')
  t.equal(res.headers.get('access-control-allow-origin'), '*')
  t.equal(res.headers.get('access-control-allow-credentials'), null)
  const withCookies = await startTestServer({
    http: { cors: { origins: [app], credentials: true, maxAgeSeconds: 60 } }
  })
  t.teardown(() => withCookies.close())
  const cred = await preflight(withCookies, '/api/v1/records', 'POST', app, 'content-type, x-csrf-token')
  t.equal(cred.headers.get('access-control-allow-origin'), app)
  t.equal(cred.headers.get('access-control-allow-credentials'), 'true')
  t.match(cred.headers.get('access-control-allow-headers'), /X-CSRF-Token/)
})
