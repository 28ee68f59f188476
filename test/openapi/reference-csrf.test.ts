import { runInNewContext } from 'node:vm'
import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * "Try it out" in the API reference, for a signed-in user: Swagger UI sends the request from
 * the page with the session cookie, and a write without the session's X-CSRF-Token is 403
 * auth.csrf. Without a browser here, the page's own script (served at /api/docs/assets/init.js)
 * runs in a VM with what it uses of the page stubbed: fetch goes to the real service with the
 * session cookie, as the browser's would. Its requestInterceptor is then given the request
 * Swagger UI would send, and what it returns is sent to the service.
 */
const server = await startTestServer()
t.teardown(() => server.close())
const user = await server.platform.users.create('acme', {
  userName: 'sam',
  password: 'correct horse battery staple',
  roles: ['safety-manager']
})
const session = await server.platform.sessions.create('acme', user.id)
const cookie = `records_session=${session.cookieValue}`

interface SwaggerRequest {
  url: string
  method: string
  headers: Record<string, string>
  body?: string
  loadSpec?: boolean
}

/** The reference page's script, run as the page runs it; returns the options it gave SwaggerUIBundle. */
async function pageScript(withCookie: boolean) {
  const html = await (await fetch(`${server.url}/api/docs`)).text()
  const src = /<script src="(\/api\/docs\/assets\/init\.js[^"]*)"/.exec(html)?.[1]
  if (!src) throw new Error('the page loads no init.js')
  const code = await (await fetch(server.url + src)).text()
  const fetched: string[] = []
  let options: any
  const SwaggerUIBundle: any = (o: unknown) => {
    options = o
    return {}
  }
  SwaggerUIBundle.presets = { apis: {} }
  SwaggerUIBundle.plugins = { DownloadUrl: {} }
  const sandbox: Record<string, unknown> = {
    SwaggerUIBundle,
    SwaggerUIStandalonePreset: {},
    URL,
    location: new URL(`${server.url}/api/docs`),
    document: { querySelectorAll: () => [] },
    fetch: (url: string, init: RequestInit = {}) => {
      const target = new URL(url, `${server.url}/api/docs`)
      fetched.push(`${init.method ?? 'GET'} ${target.pathname}`)
      // The browser's cookie jar: the session cookie goes to its own origin only.
      const headers = {
        ...(init.headers as Record<string, string>),
        ...(withCookie && target.origin === server.url ? { cookie } : {})
      }
      return fetch(target, { ...init, headers })
    }
  }
  sandbox.window = sandbox
  runInNewContext(code, sandbox)
  return { options, fetched }
}

/** What Swagger UI sends: the intercepted request, with the session cookie. */
async function send(req: SwaggerRequest) {
  const res = await fetch(req.url, { method: req.method, headers: { ...req.headers, cookie }, body: req.body })
  return { status: res.status, body: await res.json() }
}

const createRecord = (): SwaggerRequest => ({
  url: `${server.url}/api/v1/records`,
  method: 'POST',
  headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
  body: JSON.stringify({ moduleKey: 'incident', payload: incidentPayload({ title: 'Tried out' }) })
})

t.test(
  'Try it out on POST /api/v1/records as a signed-in user creates the record: the page adds the session’s CSRF token',
  async (t) => {
    const plain = await send(createRecord())
    t.equal(plain.status, 403, 'as Swagger UI sends it without the page’s help: refused')
    t.equal(plain.body.code, 'auth.csrf')
    const { options, fetched } = await pageScript(true)
    const req = await options.requestInterceptor(createRecord())
    t.equal(req.headers['X-CSRF-Token'], session.csrfToken, 'the interceptor adds the session’s token')
    const res = await send(req)
    t.equal(res.status, 201)
    t.equal(res.body.payload.title, 'Tried out')
    const again = await send(await options.requestInterceptor(createRecord()))
    t.equal(again.status, 201, 'a second write works too')
    t.same(fetched, ['GET /api/v1/me'], 'the token is read once, from GET /api/v1/me')
  }
)

t.test('the CSRF token goes on writes to this origin only, never on reads or to another origin', async (t) => {
  const { options } = await pageScript(true)
  const read = await options.requestInterceptor({
    url: `${server.url}/api/v1/records?moduleKey=incident`,
    method: 'GET',
    headers: {}
  })
  t.notOk('X-CSRF-Token' in read.headers, 'not on a GET')
  const elsewhere = await options.requestInterceptor({
    url: 'https://elsewhere.example/api/v1/records',
    method: 'POST',
    headers: {}
  })
  t.notOk('X-CSRF-Token' in elsewhere.headers, 'not to another origin')
})

t.test('without a session the page sends writes unchanged', async (t) => {
  const { options, fetched } = await pageScript(false)
  const req = await options.requestInterceptor(createRecord())
  t.notOk('X-CSRF-Token' in req.headers)
  t.same(fetched, ['GET /api/v1/me'], 'it asked, and got no token')
})
