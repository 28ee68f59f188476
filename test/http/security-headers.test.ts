import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

const password = 'correct horse battery staple'
await server.platform.users.create('acme', { userName: 'sam', password, roles: ['safety-manager'] })
const signedIn = await fetch(`${server.url}/sign-in`, {
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams({ tenant: 'acme', userName: 'sam', password, next: '/settings/api-keys' }).toString(),
  redirect: 'manual'
})
const cookie = signedIn.headers
  .getSetCookie()
  .find((c) => c.startsWith('records_session='))!
  .split(';')[0]

/** What every HTML page must send, whatever its Content-Security-Policy. */
const shared = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin'
}
/** Directives no page's policy may leave out. */
const required = ["default-src 'none'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"]

const pages: Array<[string, Record<string, string>?]> = [
  ['/errors'],
  ['/errors/validation'],
  ['/api/docs'],
  ['/sign-in'],
  ['/settings/api-keys', { cookie }]
]

for (const [path, headers] of pages) {
  t.test(`${path} is served with the security headers of every HTML page`, async (t) => {
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(server.url + path, { method, headers, redirect: 'manual' })
      t.equal(res.status, 200, `${method} ${path}`)
      t.match(res.headers.get('content-type'), /^text\/html; charset=utf-8/)
      for (const [name, value] of Object.entries(shared)) t.equal(res.headers.get(name), value, `${method}: ${name}`)
      const csp = res.headers.get('content-security-policy') ?? ''
      for (const directive of required)
        t.ok(csp.split(/;\s*/).includes(directive), `${method}: the CSP has ${directive}`)
      if (method === 'HEAD') continue
      // A nonce policy must cover every inline style and script of the page, or the browser drops them.
      const nonce = /'nonce-([^']+)'/.exec(csp)?.[1]
      const html = await res.text()
      const inline = [...html.matchAll(/<(style|script)(\s[^>]*)?>/g)].filter((m) => !/\ssrc=/.test(m[2] ?? ''))
      if (nonce)
        for (const m of inline) t.match(m[0], `nonce="${nonce}"`, `inline <${m[1]}> carries the response's nonce`)
      else t.ok(!inline.length || /'unsafe-inline'/.test(csp), 'inline styles allowed by the policy')
    }
  })
}

t.test('an error page gets a new nonce on every response', async (t) => {
  const nonceOf = async () =>
    /'nonce-([^']+)'/.exec(
      (await fetch(`${server.url}/errors/conflict`)).headers.get('content-security-policy') ?? ''
    )?.[1]
  const first = await nonceOf()
  t.ok(first)
  t.not(await nonceOf(), first)
})
