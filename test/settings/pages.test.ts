import t from '../helpers/tap.ts'
import { sendPage, type Page } from '../helpers/pages.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { safeNext } from '../../plugins/settings/security.ts'

// Counted per account and per address, and this file signs in many times a minute from one address.
const server = await startTestServer({ limits: { signInAttemptsPerMinute: 50 } })
// Its own server: the low sign-in limit would otherwise throttle the other tests.
const throttled = await startTestServer({ limits: { signInAttemptsPerMinute: 3 } })
t.teardown(async () => {
  await server.close()
  await throttled.close()
})

const password = 'correct horse battery staple'
const sam = await server.platform.users.create('acme', { userName: 'sam', password, roles: ['safety-manager'] })
await server.platform.users.create('acme', { userName: 'ada', password, roles: ['admin'] })
await server.platform.users.create('globex', { userName: 'sam', password, roles: ['safety-manager'] })
await throttled.platform.users.create('acme', { userName: 'sam', password, roles: ['safety-manager'] })

const send = sendPage

function sessionCookieOf(page: Page): string | undefined {
  const line = page.setCookie.find((c) => c.startsWith('records_session='))
  return line?.slice('records_session='.length).split(';')[0] || undefined
}

async function signIn(
  s: TestServer,
  userName = 'sam',
  tenant = 'acme',
  pw = password,
  extra: Record<string, string> = {}
) {
  const page = await send(s, 'POST', '/sign-in', {
    form: { tenant, userName, password: pw, next: '/settings/api-keys', ...extra }
  })
  return { page, cookie: sessionCookieOf(page) }
}

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1]
const alertOf = (html: string) => /<div class="alert error" role="alert">([^<]*)</.exec(html)?.[1]

/** A signed-in browser: its cookie and the CSRF token its pages carry. */
async function browserOf(s: TestServer, userName = 'sam') {
  const { cookie } = await signIn(s, userName)
  const list = await send(s, 'GET', '/settings/api-keys', { cookie })
  return { cookie: cookie!, csrf: csrfOf(list.html)! }
}

t.test('the sign-in page is a form with a hidden next field, served with the security headers', async (t) => {
  const page = await send(server, 'GET', '/sign-in?next=/settings/api-keys')
  t.equal(page.status, 200)
  t.match(page.headers.get('content-type'), /^text\/html; charset=utf-8/)
  for (const name of ['tenant', 'userName', 'password'])
    t.match(page.html, new RegExp(`name="${name}"`), `has the ${name} field`)
  t.match(page.html, '<input type="hidden" name="next" value="/settings/api-keys">')
  const csp = page.headers.get('content-security-policy') ?? ''
  const nonce = /'nonce-([^']+)'/.exec(csp)?.[1]
  t.ok(nonce, 'the CSP carries a nonce')
  t.match(page.html, `<style nonce="${nonce}">`, 'the stylesheet carries the nonce of this response')
  t.match(csp, "frame-ancestors 'none'")
  t.match(csp, "form-action 'self'")
  t.notMatch(csp, 'unsafe-inline')
  t.equal(page.headers.get('x-content-type-options'), 'nosniff')
  // Not no-referrer: with it browsers send Origin: null on the pages' own form posts (see security.ts).
  t.equal(page.headers.get('referrer-policy'), 'same-origin')
  const again = await send(server, 'GET', '/sign-in')
  t.not(
    /'nonce-([^']+)'/.exec(again.headers.get('content-security-policy') ?? '')?.[1],
    nonce,
    'a new nonce per response'
  )
})

t.test(
  'signing in sets the session cookie HttpOnly, Secure, SameSite=Lax for the session lifetime and redirects to next',
  async (t) => {
    const { page, cookie } = await signIn(server)
    t.equal(page.status, 303)
    t.equal(page.location, '/settings/api-keys')
    t.ok(cookie, 'a session cookie is set')
    const line = page.setCookie.find((c) => c.startsWith('records_session='))!
    const attributes = line
      .split(';')
      .slice(1)
      .map((a) => a.trim())
    t.ok(attributes.includes('HttpOnly'), 'HttpOnly')
    t.ok(attributes.includes('Secure'), 'Secure')
    t.ok(attributes.includes('SameSite=Lax'), 'SameSite=Lax')
    t.ok(attributes.includes('Path=/'), 'Path=/')
    t.ok(
      attributes.includes(`Max-Age=${server.platform.config.sessions.ttlHours * 3600}`),
      'Max-Age is the session lifetime'
    )
    const user = await server.platform.users.get('acme', sam.id)
    t.ok(user?.lastSignInAt, 'the sign-in is recorded on the user')
  }
)

t.test(
  'a wrong password is refused with 401 and the generic message, and an unknown user or organisation gets the same',
  async (t) => {
    const wrong = await signIn(server, 'sam', 'acme', 'not the password at all')
    const unknownUser = await signIn(server, 'nobody-here', 'acme', 'not the password at all')
    const unknownTenant = await signIn(server, 'sam', 'no-such-org', password)
    for (const [what, r] of Object.entries({ wrong, unknownUser, unknownTenant })) {
      t.equal(r.page.status, 401, `${what}: 401`)
      t.equal(r.cookie, undefined, `${what}: no session cookie`)
      t.equal(
        alertOf(r.page.html),
        'The organisation, user name or password is not right.',
        `${what}: the generic message`
      )
    }
    t.notMatch(wrong.page.html, 'not the password at all', 'the password is not echoed back')
    t.match(wrong.page.html, 'value="sam"', 'the user name is kept in the form')
    const empty = await send(server, 'POST', '/sign-in', { form: { tenant: 'acme', userName: 'sam', password: '' } })
    t.equal(empty.status, 400, 'a missing field is a 400 asking for all three')
  }
)

t.test('a sign-in posted from another origin is refused with 403 and signs nobody in', async (t) => {
  const cross = await signIn(server, 'sam', 'acme', password, {})
  t.equal(cross.page.status, 303, 'no Origin header (not a browser form): accepted')
  const evil = await send(server, 'POST', '/sign-in', {
    form: { tenant: 'acme', userName: 'sam', password },
    headers: { origin: 'http://evil.example' }
  })
  t.equal(evil.status, 403)
  t.equal(sessionCookieOf(evil), undefined, 'no session cookie')
  t.match(evil.html, 'another site')
  const nullOrigin = await send(server, 'POST', '/sign-in', {
    form: { tenant: 'acme', userName: 'sam', password },
    headers: { origin: 'null' }
  })
  t.equal(nullOrigin.status, 403, 'an opaque (null) origin is refused too')
  const same = await send(server, 'POST', '/sign-in', {
    form: { tenant: 'acme', userName: 'sam', password },
    headers: { origin: server.url }
  })
  t.equal(same.status, 303, 'this server’s own origin is accepted')
  const crossSite = await send(server, 'POST', '/sign-in', {
    form: { tenant: 'acme', userName: 'sam', password },
    headers: { 'sec-fetch-site': 'cross-site' }
  })
  t.equal(crossSite.status, 403, 'Sec-Fetch-Site: cross-site is refused even without an Origin')
})

t.test('after signing in, next is followed only when it is a path of this site', async (t) => {
  const cases: Array<[string, string]> = [
    ['/settings/api-keys?tab=1', '/settings/api-keys?tab=1'],
    ['//evil.example/x', '/records'],
    ['/\\evil.example', '/records'],
    ['https://evil.example/', '/records'],
    ['javascript:alert(1)', '/records'],
    ['', '/records']
  ]
  for (const [next, want] of cases) {
    const { page } = await signIn(server, 'sam', 'acme', password, { next })
    t.equal(page.location, want, `next=${JSON.stringify(next)} → ${want}`)
  }
})

/** next values a browser would follow off this site, once the URL parser has read them. */
const hostileNexts = [
  '//evil.com',
  '/\\evil.com',
  '/%2F%2Fevil.com',
  '/%2f/evil.com',
  '/%5Cevil.com',
  '/.//evil.com',
  '/..//evil.com',
  '/%2e//evil.com',
  '/%2E%2E//evil.com',
  '/a/..//evil.com',
  '/settings/../..//evil.com',
  'https://evil.com',
  'HTTPS://evil.com/settings',
  '/\t/evil.com',
  '/\t//evil.com',
  '/\n/evil.com',
  '\t//evil.com',
  '/\r\n//evil.com',
  'javascript:alert(1)',
  ' /settings/api-keys',
  '/.\\evil.com'
]

t.test('safeNext turns every next value that leaves the site into the default page', async (t) => {
  for (const next of hostileNexts) t.equal(safeNext(next), '/settings/api-keys', JSON.stringify(next))
  for (const [next, want] of [
    ['/settings/api-keys?tab=1', '/settings/api-keys?tab=1'],
    ['/settings/./webhooks', '/settings/webhooks'],
    ['/settings/graphql#query', '/settings/graphql#query']
  ])
    t.equal(safeNext(next), want, `${JSON.stringify(next)} is kept, as the browser would read it`)
})

t.test('the sign-in page and the sign-in redirect never point off the site, whatever next says', async (t) => {
  await server.platform.users.create('acme', { userName: 'nia', password, roles: ['safety-manager'] })
  for (const next of hostileNexts) {
    const form = await send(server, 'GET', `/sign-in?next=${encodeURIComponent(next)}`)
    t.match(
      form.html,
      '<input type="hidden" name="next" value="/records">',
      `the form's next for ${JSON.stringify(next)} is the start page, the records workspace`
    )
    const { page } = await signIn(server, 'nia', 'acme', password, { next })
    t.equal(page.status, 303)
    t.equal(page.location, '/records', `after signing in with next=${JSON.stringify(next)}`)
  }
})

t.test('/settings/api-keys without a session redirects to sign-in and back', async (t) => {
  for (const cookie of [undefined, 'not-a-session']) {
    const page = await send(server, 'GET', '/settings/api-keys', { cookie })
    t.equal(page.status, 303, cookie ? 'an unknown cookie: 303' : 'no cookie: 303')
    t.equal(page.location, '/sign-in?next=/settings/api-keys')
  }
})

t.test('the list page shows the caller’s own tokens by prefix, never in full, with no-store', async (t) => {
  const { cookie } = await browserOf(server)
  const principal = (await server.platform.sessions.resolve(cookie))!.principal
  const made = await (server.running.app.service('api/v1/tokens') as any).create(
    { type: 'personal', name: 'made elsewhere <b>bold</b>', scopes: ['records:read'] },
    { provider: 'rest', principal }
  )
  const page = await send(server, 'GET', '/settings/api-keys', { cookie })
  t.equal(page.status, 200)
  t.equal(page.headers.get('cache-control'), 'no-store')
  t.match(page.html, `<code>${made.prefix}…</code>`, 'the prefix with an ellipsis')
  t.notMatch(page.html, made.token, 'not the full token')
  t.match(page.html, 'made elsewhere &lt;b&gt;bold&lt;/b&gt;', 'the name is escaped')
  t.match(page.html, `action="/settings/api-keys/${made.id}/revoke"`, 'a revoke button for the active token')
  t.notMatch(page.html, 'value="api-key"', 'a user who is no admin is not offered tenant API keys')
  const globex = await send(server, 'GET', '/settings/api-keys', {
    cookie: (await signIn(server, 'sam', 'globex')).cookie
  })
  t.notMatch(globex.html, made.prefix, 'another tenant’s user of the same name does not see it')
})

t.test('a create without a CSRF token or with a wrong one is refused with 403 and creates nothing', async (t) => {
  const { cookie, csrf } = await browserOf(server, 'ada')
  const ada = (await server.platform.sessions.resolve(cookie))!.principal
  const before = (await server.platform.credentials.list('acme', { userId: ada.userId })).length
  for (const form of [
    { name: 'forged', type: 'personal', expires: 'never' } as Record<string, string>,
    { name: 'forged', type: 'personal', expires: 'never', csrf: csrf.slice(0, -2) + 'xx' }
  ]) {
    const page = await send(server, 'POST', '/settings/api-keys', { cookie, form })
    t.equal(page.status, 403)
    t.match(page.html, 'nothing was changed')
  }
  t.equal(
    (await server.platform.credentials.list('acme', { userId: ada.userId })).length,
    before,
    'no token was created'
  )
  const noSession = await send(server, 'POST', '/settings/api-keys', {
    form: { name: 'x', type: 'personal', expires: 'never', csrf }
  })
  t.equal(noSession.status, 303, 'without a session: to sign in')
  const crossSite = await send(server, 'POST', '/settings/api-keys', {
    cookie,
    form: { name: 'x', type: 'personal', expires: 'never', csrf },
    headers: { origin: 'https://evil.example' }
  })
  t.equal(crossSite.status, 403, 'from another origin, even with the token: 403')
})

t.test('creating through the form shows the token once, uncached; the list then shows only its prefix', async (t) => {
  const { cookie, csrf } = await browserOf(server)
  const page = await send(server, 'POST', '/settings/api-keys', {
    cookie,
    form: { csrf, name: 'CI pipeline', type: 'personal', scopes: ['records:read', 'modules:read'], expires: '30' }
  })
  t.equal(page.status, 201)
  t.equal(page.headers.get('cache-control'), 'no-store')
  const token = /id="token" value="([^"]+)"/.exec(page.html)?.[1]
  t.ok(token, 'the full token is in a read-only field')
  t.match(page.html, /id="token" value="[^"]+" readonly/)
  t.match(page.html, 'will not be shown again')
  const nonce = /'nonce-([^']+)'/.exec(page.headers.get('content-security-policy') ?? '')?.[1]
  t.match(page.html, `<script nonce="${nonce}">`, 'the copy script runs under the nonce')
  const me = await server.request('GET', '/api/v1/me', { token })
  t.equal(me.status, 200, 'the token works')
  t.same(me.body.scopes, ['records:read', 'modules:read'])
  const list = await send(server, 'GET', '/settings/api-keys', { cookie })
  t.notMatch(list.html, token!, 'the list never shows it')
  const stored = await server.platform.db.system.query('SELECT * FROM credentials WHERE name = $1', ['CI pipeline'])
  t.match(list.html, `<code>${stored.rows[0].prefix}…</code>`, 'its prefix is there')
  t.notMatch(JSON.stringify(stored.rows), token!, 'the database holds no clear copy')
  t.ok(Math.abs(stored.rows[0].expires_at.getTime() - (Date.now() + 30 * 86_400_000)) < 60_000, 'expires in 30 days')
})

t.test('problems with the form re-render it with the messages, keeping what was entered', async (t) => {
  const { cookie, csrf } = await browserOf(server)
  const noName = await send(server, 'POST', '/settings/api-keys', {
    cookie,
    form: { csrf, name: ' ', type: 'personal', scopes: ['records:read'], expires: 'never' }
  })
  t.equal(noName.status, 400)
  t.match(noName.html, 'Name: give the token a name')
  t.match(noName.html, 'value="records:read" checked', 'the ticked scope stays ticked')
  const past = await send(server, 'POST', '/settings/api-keys', {
    cookie,
    form: { csrf, name: 'old', type: 'personal', expires: 'date', expiresOn: '2001-01-01' }
  })
  t.equal(past.status, 400)
  t.match(past.html, 'Expiry date: must be in the future')
  t.match(past.html, 'value="old"', 'the name is kept')
  const noDate = await send(server, 'POST', '/settings/api-keys', {
    cookie,
    form: { csrf, name: 'no date', type: 'personal', expires: 'date' }
  })
  t.equal(noDate.status, 400)
  t.match(noDate.html, 'Expiry date: pick a date')
  const rolledOver = await send(server, 'POST', '/settings/api-keys', {
    cookie,
    form: { csrf, name: 'no such day', type: 'personal', expires: 'date', expiresOn: '2099-02-30' }
  })
  t.equal(rolledOver.status, 400, 'a day that does not exist is refused, not rolled over')
  const badScope = await send(server, 'POST', '/settings/api-keys', {
    cookie,
    form: { csrf, name: 'odd', type: 'personal', scopes: 'records:fly', expires: 'never' }
  })
  t.equal(badScope.status, 400)
  t.match(badScope.html, 'Scopes: names unknown scope records:fly')
  const notAdmin = await send(server, 'POST', '/settings/api-keys', {
    cookie,
    form: { csrf, name: 'sneaky', type: 'api-key', expires: 'never' }
  })
  t.equal(notAdmin.status, 403, 'a user who is no admin cannot create a tenant API key by crafting the form')
  t.match(notAdmin.html, 'Only tenant admins create api-key tokens')
})

t.test('an admin is offered service accounts but no tenant API key, and a service account needs a scope', async (t) => {
  const { cookie, csrf } = await browserOf(server, 'ada')
  const list = await send(server, 'GET', '/settings/api-keys', { cookie })
  t.notMatch(list.html, 'value="api-key"', "a session acts with its user's roles, never as the whole tenant")
  t.match(list.html, 'value="service-account"')
  const unscoped = await send(server, 'POST', '/settings/api-keys', {
    cookie,
    form: { csrf, name: 'robot', type: 'service-account', expires: '7' }
  })
  t.equal(unscoped.status, 400)
  t.match(unscoped.html, 'needs at least one scope')
  const robot = await send(server, 'POST', '/settings/api-keys', {
    cookie,
    // Admin alone grants no module action, so records:read is not hers to give; modules:read is.
    form: { csrf, name: 'robot', type: 'service-account', scopes: 'modules:read', expires: '7' }
  })
  t.equal(robot.status, 201)
  t.match(/id="token" value="([^"]+)"/.exec(robot.html)?.[1], /^sa_/, 'a service-account token')
  const key = await send(server, 'POST', '/settings/api-keys', {
    cookie,
    form: { csrf, name: 'whole tenant', type: 'api-key', expires: 'never' }
  })
  t.equal(key.status, 403, 'a crafted form for a tenant API key is refused')
  t.match(key.html, 'acts as the whole tenant')
  const after = await send(server, 'GET', '/settings/api-keys', { cookie })
  t.match(after.html, 'acme test key', 'the admin sees the tenant’s keys, which belong to no user')
})

t.test('revoking with the button ends the token at once and returns to the list', async (t) => {
  const { cookie, csrf } = await browserOf(server)
  const created = await send(server, 'POST', '/settings/api-keys', {
    cookie,
    form: { csrf, name: 'to revoke', type: 'personal', expires: 'never' }
  })
  const token = /id="token" value="([^"]+)"/.exec(created.html)![1]
  const id = (await server.request('GET', '/api/v1/tokens', { token })).body.items.find(
    (i: { name: string }) => i.name === 'to revoke'
  ).id
  const forged = await send(server, 'POST', `/settings/api-keys/${id}/revoke`, { cookie, form: {} })
  t.equal(forged.status, 403, 'no CSRF token: refused')
  t.equal((await server.request('GET', '/api/v1/me', { token })).status, 200, 'still works')
  const other = await browserOf(server, 'sam')
  const globexSam = await signIn(server, 'sam', 'globex')
  const foreign = await send(server, 'POST', `/settings/api-keys/${id}/revoke`, {
    cookie: globexSam.cookie,
    form: { csrf: csrfOf((await send(server, 'GET', '/settings/api-keys', { cookie: globexSam.cookie })).html)! }
  })
  t.equal(foreign.status, 404, 'another tenant’s user cannot revoke it')
  const done = await send(server, 'POST', `/settings/api-keys/${id}/revoke`, {
    cookie: other.cookie,
    form: { csrf: other.csrf }
  })
  t.equal(done.status, 303)
  t.equal(done.location, '/settings/api-keys?revoked=1')
  const me = await server.request('GET', '/api/v1/me', { token })
  t.equal(me.status, 401)
  t.equal(me.body.code, 'auth.revoked')
  const bogus = await send(server, 'POST', '/settings/api-keys/not-a-uuid/revoke', { cookie, form: { csrf } })
  t.equal(bogus.status, 404)
})

t.test('sign-out ends the session: the old cookie no longer works', async (t) => {
  const { cookie, csrf } = await browserOf(server)
  const refused = await send(server, 'POST', '/sign-out', { cookie, form: {} })
  t.equal(refused.status, 403, 'sign-out without the CSRF token is refused')
  t.equal((await send(server, 'GET', '/settings/api-keys', { cookie })).status, 200, 'and the session lives on')
  const out = await send(server, 'POST', '/sign-out', { cookie, form: { csrf } })
  t.equal(out.status, 303)
  t.equal(out.location, '/sign-in')
  t.match(
    out.setCookie.find((c) => c.startsWith('records_session=')),
    /^records_session=;.*Max-Age=0/,
    'the cookie is expired'
  )
  t.equal(
    (await send(server, 'GET', '/settings/api-keys', { cookie })).status,
    303,
    'the page sends the old cookie to sign in'
  )
  t.equal(
    (await server.request('GET', '/api/v1/me', { token: null, headers: { cookie: `records_session=${cookie}` } }))
      .status,
    401,
    'the API refuses it'
  )
})

t.test('with the session cookie, GET /api/v1/me works but a write without X-CSRF-Token is 403', async (t) => {
  const { cookie, csrf } = await browserOf(server)
  const headers = { cookie: `records_session=${cookie}` }
  const me = await server.request('GET', '/api/v1/me', { token: null, headers })
  t.equal(me.status, 200)
  t.equal(me.body.credential.type, 'session')
  t.equal(me.body.csrfToken, csrf, 'a page script learns the CSRF token from /api/v1/me')
  t.notOk('csrfToken' in (await server.request('GET', '/api/v1/me')).body, 'a bearer token has none')
  const body = { type: 'personal', name: 'from a script' }
  const noHeader = await server.request('POST', '/api/v1/tokens', { token: null, headers, body })
  t.equal(noHeader.status, 403)
  t.equal(noHeader.body.code, 'auth.csrf')
  const withHeader = await server.request('POST', '/api/v1/tokens', {
    token: null,
    headers: { ...headers, 'x-csrf-token': csrf },
    body
  })
  t.equal(withHeader.status, 201, 'with the session’s CSRF token it goes through')
})

t.test('form bodies are capped and must be urlencoded; other methods get 405 with Allow', async (t) => {
  const big = await send(server, 'POST', '/sign-in', {
    form: { tenant: 'acme', userName: 'sam', password: 'x'.repeat(9 * 1024) }
  })
  t.equal(big.status, 413)
  const json = await send(server, 'POST', '/sign-in', { headers: { 'content-type': 'application/json' } })
  t.equal(json.status, 415)
  const put = await send(server, 'PUT', '/settings/api-keys')
  t.equal(put.status, 405)
  t.equal(put.headers.get('allow'), 'GET, HEAD, POST')
})

t.test('sign-in attempts for one account are throttled with 429 after the configured number per minute', async (t) => {
  for (let i = 1; i <= 3; i++)
    t.equal((await signIn(throttled, 'sam', 'acme', 'wrong password here')).page.status, 401, `attempt ${i}: 401`)
  const blocked = await signIn(throttled, 'sam', 'acme', password)
  t.equal(blocked.page.status, 429, 'the 4th is refused, even with the right password')
  t.equal(blocked.cookie, undefined)
  t.match(alertOf(blocked.page.html), /^Too many sign-in attempts\. Wait \d+ seconds? and try again\.$/)
  t.ok(Number(blocked.page.headers.get('retry-after')) > 0, 'Retry-After')
  t.equal((await signIn(throttled, 'SAM', 'ACME', password)).page.status, 429, 'case variants share the count')
})

t.test('sign-in attempts from one address over many user names are throttled too', async (t) => {
  // 5 attempts so far from this address in the test above; the address may make 3 × 5 = 15 a minute.
  const statuses: number[] = []
  for (let i = 0; i < 11; i++)
    statuses.push((await signIn(throttled, `guess-${i}`, 'acme', 'wrong password here')).page.status)
  t.same(statuses, Array(10).fill(401).concat([429]), 'the 16th attempt from this address is refused')
})
