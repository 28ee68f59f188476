import t from '../helpers/tap.ts'
import { sendPage as send } from '../helpers/pages.ts'
import { userWithToken } from '../helpers/identity.ts'
import { startTestServer } from '../helpers/server.ts'
import { escapeHtml } from '../../plugins/settings/html.ts'

// The API keys page offers what the tokens service would accept from the signed-in person
// (tokenGrant), and nothing it would refuse: a forged form gets the API's own problem.

const server = await startTestServer()
t.teardown(() => server.close())

const password = 'correct horse battery staple'
const everyRole = server.platform.users.knownRoles('acme')
// A reporter who also inspects: she reads incidents and inspections, not corrective actions.
const ritasRoles = ['reporter', 'inspector']
await server.platform.users.create('acme', { userName: 'rita', password, roles: ritasRoles })
await server.platform.users.create('acme', { userName: 'olga', password, roles: everyRole })
await server.platform.users.create('acme', {
  userName: 'nearly',
  password,
  roles: everyRole.filter((r) => r !== 'health-officer')
})

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1]
const tokenOf = (html: string) => /id="token" value="([^"]+)"/.exec(html)?.[1]

async function browserOf(userName: string) {
  const signIn = await send(server, 'POST', '/sign-in', {
    form: { tenant: 'acme', userName, password, next: '/settings/api-keys' }
  })
  const cookie = signIn.setCookie
    .find((c) => c.startsWith('records_session='))!
    .slice('records_session='.length)
    .split(';')[0]
  const list = await send(server, 'GET', '/settings/api-keys', { cookie })
  return { cookie, csrf: csrfOf(list.html)!, html: list.html }
}

/** The options of the module picker beside a module-bound scope. */
function pickerOf(html: string, scope: string): string[] {
  const select = new RegExp(`<select id="[^"]+" name="module:${scope}">(.*?)</select>`, 's').exec(html)?.[1] ?? ''
  return [...select.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1]).filter(Boolean)
}

const offered = (html: string, name: string, value: string) => html.includes(`name="${name}" value="${value}"`)

t.test('a reporter is offered no scope that needs an admin, and a forged one gets the API’s problem', async (t) => {
  const rita = await browserOf('rita')
  for (const scope of ['scim', 'tokens:write', 'webhooks:write'])
    t.notOk(offered(rita.html, 'scopes', scope), `${scope} is not offered`)
  for (const scope of ['records:read', 'records:write', 'modules:read'])
    t.ok(offered(rita.html, 'scopes', scope), `${scope} is offered`)
  t.notOk(offered(rita.html, 'scopes', 'records:delete'), 'nor is records:delete, which no role of hers grants')
  t.notMatch(rita.html, 'value="service-account"', 'no service accounts for a non-admin')
  t.notMatch(rita.html, 'name="roles"', 'and no roles to give them')

  // The same person through the API: a personal token acts with her roles, as her session does.
  const api = await userWithToken(server, 'acme', ritasRoles)
  for (const scope of ['scim', 'tokens:write', 'webhooks:write']) {
    const viaApi = await server.request('POST', '/api/v1/tokens', {
      token: api.token,
      body: { type: 'personal', name: 'forged', scopes: [scope] }
    })
    t.equal(viaApi.status, 403, `${scope}: the API refuses it`)
    t.equal(viaApi.body.code, 'scope.escalation')
    t.same(viaApi.body.notHeld, [scope])
    const forged = await send(server, 'POST', '/settings/api-keys', {
      cookie: rita.cookie,
      form: { csrf: rita.csrf, name: 'forged', type: 'personal', scopes: scope, expires: '7' }
    })
    t.equal(forged.status, 403, `${scope}: the page refuses it with the same status`)
    t.match(forged.html, escapeHtml(viaApi.body.detail), 'and the same words')
    t.notOk(tokenOf(forged.html), 'and no token')
  }
})

t.test('a module-bound scope is created from the picker and works against that module only', async (t) => {
  const rita = await browserOf('rita')
  t.same(
    pickerOf(rita.html, 'records:read').sort(),
    ['incident', 'inspection'],
    'the picker lists only the modules she may read'
  )
  t.same(pickerOf(rita.html, 'records:transition'), ['inspection'], 'and for transitions, where she may fire one')
  const created = await send(server, 'POST', '/settings/api-keys', {
    cookie: rita.cookie,
    form: {
      csrf: rita.csrf,
      name: 'incidents only',
      type: 'personal',
      scopes: 'records:read',
      'module:records:read': 'incident',
      expires: '7'
    }
  })
  t.equal(created.status, 201)
  t.match(created.html, '<code>records:read:incident</code>', 'the scope shown is the narrowed one')
  const token = tokenOf(created.html)!
  const incidents = await server.request('GET', '/api/v1/records?moduleKey=incident', { token })
  t.equal(incidents.status, 200, 'incidents are read')
  const inspections = await server.request('GET', '/api/v1/records?moduleKey=inspection', { token })
  t.equal(inspections.status, 403, 'another module she reads is refused to this token')
  t.equal(inspections.body.code, 'scope.missing')

  const picked = await send(server, 'POST', '/settings/api-keys', {
    cookie: rita.cookie,
    form: { csrf: rita.csrf, name: 'picked only', type: 'personal', 'module:records:write': 'incident', expires: '7' }
  })
  t.equal(picked.status, 201, 'picking a module without ticking its scope asks for the scope')
  t.match(picked.html, '<code>records:write:incident</code>')

  const forged = await send(server, 'POST', '/settings/api-keys', {
    cookie: rita.cookie,
    form: {
      csrf: rita.csrf,
      name: 'actions',
      type: 'personal',
      scopes: 'records:read',
      'module:records:read': 'corrective-action',
      expires: '7'
    }
  })
  t.equal(forged.status, 403, 'a module she may not read cannot be forged into the picker')
  t.match(forged.html, 'records:read:corrective-action')
})

t.test('a person holding every role of the tenant creates a tenant API key from the page', async (t) => {
  const olga = await browserOf('olga')
  t.ok(offered(olga.html, 'scopes', 'scim'), 'an admin is offered scim')
  t.match(olga.html, 'value="api-key"', 'and the tenant API key')
  const created = await send(server, 'POST', '/settings/api-keys', {
    cookie: olga.cookie,
    form: { csrf: olga.csrf, name: 'nightly sync', type: 'api-key', expires: '30' }
  })
  t.equal(created.status, 201)
  const token = tokenOf(created.html)!
  t.match(token, /^svc_k_/, 'a tenant API key')
  const me = await server.request('GET', '/api/v1/me', { token })
  t.equal(me.status, 200, 'and it works')
  const listed = await server.request('GET', '/api/v1/tokens?all=true', { token })
  const key = listed.body.items.find((i: { name: string }) => i.name === 'nightly sync')
  t.match(key, { type: 'api-key', scopes: null, roles: null }, 'acting as the tenant')
})

t.test('a person lacking one role is not offered a tenant API key, and a forged form is refused', async (t) => {
  const nearly = await browserOf('nearly')
  t.match(nearly.html, 'value="service-account"', 'an admin still makes service accounts')
  t.notMatch(nearly.html, 'value="api-key"', 'but is not offered a tenant API key')
  const forged = await send(server, 'POST', '/settings/api-keys', {
    cookie: nearly.cookie,
    form: { csrf: nearly.csrf, name: 'whole tenant', type: 'api-key', expires: '30' }
  })
  t.equal(forged.status, 403)
  t.match(forged.html, 'acts as the whole tenant')
  t.notOk(tokenOf(forged.html), 'and no token')
  const api = await userWithToken(
    server,
    'acme',
    everyRole.filter((r) => r !== 'health-officer')
  )
  const viaApi = await server.request('POST', '/api/v1/tokens', {
    token: api.token,
    body: { type: 'api-key', name: 'whole tenant' }
  })
  t.equal(viaApi.status, 403, 'as the API refuses it')
  t.match(viaApi.body, { code: 'token.escalation', escalation: 'type' })
})
