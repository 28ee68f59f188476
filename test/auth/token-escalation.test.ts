import t from '../helpers/tap.ts'
import { plugins } from '../../plugins/index.ts'
import { eventually, userWithToken } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { runCli } from '../../core/cli/index.ts'

// A created token never has more than its creator's rights (roles, scopes, type reach)
// and never outlives it. The first tests reproduce the review's findings as reported.

const server = await startTestServer()
t.teardown(() => server.close())
const apiKey = server.keys.acme
const { users, sessions } = server.platform

const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString()
const mint = (token: string, body: Record<string, unknown>) =>
  server.request('POST', '/api/v1/tokens', { token, body: { name: 'minted', ...body } })

async function created(token: string, body: Record<string, unknown>) {
  const res = await mint(token, body)
  if (res.status !== 201) throw new Error(`setup: token creation answered ${res.status} ${res.text}`)
  return res.body
}

/**
 * The admin service account of the finding: it cannot read medical details itself. It also
 * audits (reads incidents), as a creator hands on only scopes its roles can use.
 */
const adminServiceAccount = (scopes = ['tokens:write', 'records:read:incident']) =>
  created(apiKey, { type: 'service-account', name: 'admin robot', roles: ['admin', 'auditor'], scopes })

/** An incident with medical details, which only health-officer (or the tenant) may read. */
async function incidentWithMedicalDetails() {
  const res = await server.request('POST', '/api/v1/records', {
    token: apiKey,
    body: { moduleKey: 'incident', payload: incidentPayload({ medicalDetails: 'Fractured wrist' }) }
  })
  if (res.status !== 201) throw new Error(`setup: incident answered ${res.status} ${res.text}`)
  return res.body.id as string
}

const tokenNames = async () =>
  (await server.request('GET', '/api/v1/tokens?all=true', { token: apiKey })).body.items.map(
    (i: { name: string }) => i.name
  )

t.test('a service account acting as admin cannot give a token a role it does not hold itself', async (t) => {
  const creator = await adminServiceAccount()
  const id = await incidentWithMedicalDetails()
  const own = await server.request('GET', `/api/v1/records/${id}`, { token: creator.token })
  t.notOk(own.body?.payload?.medicalDetails, 'the creator cannot read medical details itself')

  const res = await mint(creator.token, {
    type: 'service-account',
    name: 'health robot',
    roles: ['health-officer'],
    scopes: ['records:read:incident']
  })
  t.equal(res.status, 403)
  t.equal(res.body.code, 'token.escalation')
  t.equal(res.body.escalation, 'roles')
  t.same(res.body.notHeld, ['health-officer'])
  t.same(res.body.heldRoles, ['admin', 'auditor'])
  t.match(res.body.detail, /health-officer/)
  t.match(res.body.detail, /admin, auditor/)
  t.notOk((await tokenNames()).includes('health robot'), 'nothing was created')

  const inherits = await mint(creator.token, {
    type: 'service-account',
    name: 'no roles named',
    scopes: ['records:read:incident']
  })
  t.equal(inherits.status, 201, 'naming no roles is fine')
  t.same(inherits.body.roles, ['admin', 'auditor'], "and gives the creator's roles, not the whole tenant's")
  const read = await server.request('GET', `/api/v1/records/${id}`, { token: inherits.body.token })
  t.notOk(read.body?.payload?.medicalDetails, 'so it cannot read medical details either')
})

t.test('a scoped service account cannot create a tenant API key, which would act as the whole tenant', async (t) => {
  const creator = await adminServiceAccount()
  for (const body of [{}, { scopes: ['records:read:incident'] }]) {
    const res = await mint(creator.token, { type: 'api-key', name: 'tenant key', ...body })
    t.equal(res.status, 403, `api-key ${JSON.stringify(body)}: 403`)
    t.equal(res.body.code, 'token.escalation')
    t.equal(res.body.escalation, 'type')
    t.same(res.body.heldRoles, ['admin', 'auditor'])
    t.same(res.body.heldScopes, ['tokens:write', 'records:read:incident'])
    t.match(res.body.detail, /whole tenant/)
  }
  t.notOk((await tokenNames()).includes('tenant key'), 'nothing was created')
})

t.test(
  'a module-bound scope never mints the scope for every module, while a scope for every module mints a module-bound one',
  async (t) => {
    const narrow = await adminServiceAccount()
    for (const scope of ['records:read', 'records:read:inspection', 'records:write:incident']) {
      const res = await mint(narrow.token, { type: 'service-account', scopes: [scope] })
      t.equal(res.status, 403, `${scope}: 403`)
      t.equal(res.body.code, 'scope.escalation')
      t.same(res.body.notHeld, [scope])
      t.same(res.body.heldScopes, ['tokens:write', 'records:read:incident'])
    }
    t.equal(
      (await mint(narrow.token, { type: 'service-account', scopes: ['records:read:incident'] })).status,
      201,
      'the same module-bound scope is fine'
    )
    const wide = await adminServiceAccount(['tokens:write', 'records:read'])
    const bound = await mint(wide.token, {
      type: 'service-account',
      scopes: ['records:read:incident', 'records:read:inspection']
    })
    t.equal(bound.status, 201, 'records:read covers records:read:<module>')
  }
)

t.test('a personal token that expires in 40 seconds cannot create a tenant API key that never expires', async (t) => {
  const admin = await userWithToken(server, 'acme', ['admin'])
  const brief = await created(admin.token, { type: 'personal', name: 'forty seconds', expiresAt: inSeconds(40) })
  const res = await mint(brief.token, { type: 'api-key', name: 'forever key' })
  t.equal(res.status, 403)
  t.equal(res.body.code, 'token.escalation')
  t.equal(res.body.escalation, 'type', 'an admin user holds named roles, not the whole tenant')
  t.notOk((await tokenNames()).includes('forever key'), 'nothing was created')
})

t.test(
  "a token never outlives its creator: a later or absent expiry is refused, and an omitted one is the creator's own",
  async (t) => {
    const admin = await userWithToken(server, 'acme', ['admin', 'safety-manager'])
    const brief = await created(admin.token, { type: 'personal', name: 'forty seconds', expiresAt: inSeconds(40) })
    for (const [label, expiresAt] of [
      ['no expiry', null],
      ['an hour', inSeconds(3600)]
    ] as const) {
      const res = await mint(brief.token, { type: 'personal', name: `outliving: ${label}`, expiresAt })
      t.equal(res.status, 403, `${label}: 403`)
      t.equal(res.body.code, 'token.escalation')
      t.equal(res.body.escalation, 'expiresAt')
      t.equal(res.body.creatorExpiresAt, brief.expiresAt)
      t.match(res.body.detail, brief.expiresAt)
    }
    const sa = await mint(brief.token, {
      type: 'service-account',
      name: 'outliving robot',
      scopes: ['records:read'],
      roles: ['safety-manager'],
      expiresAt: null
    })
    t.equal(sa.status, 403, 'a service account may not outlive it either')
    t.equal(sa.body.escalation, 'expiresAt')

    const inherited = await mint(brief.token, { type: 'personal', name: 'inherits' })
    t.equal(inherited.status, 201)
    t.equal(inherited.body.expiresAt, brief.expiresAt, 'without expiresAt it expires with its creator')
    const robot = await mint(brief.token, {
      type: 'service-account',
      name: 'inheriting robot',
      scopes: ['records:read']
    })
    t.equal(robot.status, 201)
    t.equal(robot.body.expiresAt, brief.expiresAt)
    const sooner = await mint(brief.token, { type: 'personal', name: 'sooner', expiresAt: inSeconds(20) })
    t.equal(sooner.status, 201, 'an earlier expiry is fine')
    t.ok(Date.parse(sooner.body.expiresAt) < Date.parse(brief.expiresAt))
  }
)

t.test('a tenant API key that expires in 40 seconds cannot create a key that outlives it', async (t) => {
  const brief = await created(apiKey, { type: 'api-key', name: 'forty-second key', expiresAt: inSeconds(40) })
  const forever = await mint(brief.token, { type: 'api-key', name: 'forever key', expiresAt: null })
  t.equal(forever.status, 403)
  t.equal(forever.body.code, 'token.escalation')
  t.equal(forever.body.escalation, 'expiresAt')
  const later = await mint(brief.token, {
    type: 'service-account',
    scopes: ['records:read'],
    expiresAt: inSeconds(86_400)
  })
  t.equal(later.status, 403)
  t.equal(later.body.escalation, 'expiresAt')
  const key = await mint(brief.token, { type: 'api-key', name: 'as long as its creator' })
  t.equal(key.status, 201, 'a key may still create a key')
  t.equal(key.body.expiresAt, brief.expiresAt)
})

t.test('a personal token grants only the roles its user holds now, those of groups included', async (t) => {
  const user = await userWithToken(server, 'acme', ['admin'])
  const group = await users.createGroup('acme', { displayName: 'Occupational health', roles: ['health-officer'] })
  await users.addMember('acme', group.id, user.id)
  const body = { type: 'service-account', scopes: ['records:read:incident'], roles: ['health-officer'] }
  t.ok(
    await eventually(async () => (await mint(user.token, body)).status === 201),
    'a role held through a group may be given'
  )
  await users.removeMember('acme', group.id, user.id)
  t.ok(
    await eventually(async () => (await mint(user.token, body)).status === 403),
    'once the user leaves the group, it may not'
  )
  const res = await mint(user.token, body)
  t.equal(res.body.code, 'token.escalation')
  t.same(res.body.heldRoles, ['admin'])
})

t.test(
  "an admin user who names no roles gets a service account with the admin's own roles, not the tenant's",
  async (t) => {
    const admin = await userWithToken(server, 'acme', ['admin', 'safety-manager'])
    const id = await incidentWithMedicalDetails()
    const sa = await created(admin.token, { type: 'service-account', scopes: ['records:read:incident'] })
    t.same(sa.roles, ['admin', 'safety-manager'])
    const read = await server.request('GET', `/api/v1/records/${id}`, { token: sa.token })
    t.equal(read.status, 200)
    t.notOk('medicalDetails' in read.body.payload, 'it sees no more than the admin does')
  }
)

t.test('an admin user creates a narrower service account, and it works', async (t) => {
  const admin = await userWithToken(server, 'acme', ['admin', 'safety-manager'])
  const res = await mint(admin.token, {
    type: 'service-account',
    name: 'ERP',
    roles: ['safety-manager'],
    scopes: ['records:read:incident', 'records:write:incident'],
    expiresAt: inSeconds(86_400)
  })
  t.equal(res.status, 201)
  t.same(res.body.roles, ['safety-manager'])
  const incident = await server.request('POST', '/api/v1/records', {
    token: res.body.token,
    body: { moduleKey: 'incident', payload: incidentPayload() }
  })
  t.equal(incident.status, 201)
  t.equal((await server.request('GET', `/api/v1/records/${incident.body.id}`, { token: res.body.token })).status, 200)
})

t.test('a tenant API key may create any token: another key, any role, no expiry', async (t) => {
  const id = await incidentWithMedicalDetails()
  const key = await mint(apiKey, { type: 'api-key', name: 'second key' })
  t.equal(key.status, 201)
  t.equal(key.body.expiresAt, null)
  const health = await mint(apiKey, {
    type: 'service-account',
    name: 'health robot',
    roles: ['health-officer'],
    scopes: ['records:read:incident']
  })
  t.equal(health.status, 201)
  t.equal(
    (await server.request('GET', `/api/v1/records/${id}`, { token: health.body.token })).body.payload.medicalDetails,
    'Fractured wrist'
  )
  const tenantWide = await mint(apiKey, { type: 'service-account', name: 'tenant robot', scopes: ['records:read'] })
  t.equal(tenantWide.status, 201)
  t.equal(tenantWide.body.roles, null, 'without roles: the tenant within its scopes')
  const grandchild = await mint(key.body.token, { type: 'api-key', name: 'third key' })
  t.equal(grandchild.status, 201, 'a key created by a key has the same reach')
})

t.test("a browser session creates long-lived tokens within its user's roles, but no tenant API key", async (t) => {
  const user = await users.create('acme', { userName: 'session-admin', roles: ['admin'] })
  const { cookieValue, csrfToken } = await sessions.create('acme', user.id)
  const headers = { cookie: `records_session=${cookieValue}`, 'x-csrf-token': csrfToken }
  const viaSession = (body: Record<string, unknown>) =>
    server.request('POST', '/api/v1/tokens', { token: null, headers, body: { name: 'from the browser', ...body } })
  const personal = await viaSession({ type: 'personal', expiresAt: inSeconds(90 * 86_400) })
  t.equal(personal.status, 201, 'a session is the user signed in, so its own end does not bound the tokens it creates')
  const key = await viaSession({ type: 'api-key' })
  t.equal(key.status, 403)
  t.equal(key.body.code, 'token.escalation')
  t.equal(key.body.escalation, 'type')
  const role = await viaSession({ type: 'service-account', scopes: ['records:read'], roles: ['health-officer'] })
  t.equal(role.status, 403)
  t.equal(role.body.escalation, 'roles')

  const page = await fetch(`${server.url}/settings/api-keys`, { headers: { cookie: headers.cookie } })
  const html = await page.text()
  t.equal(page.status, 200)
  t.match(html, 'value="service-account"', 'the page offers service accounts to an admin')
  t.notMatch(html, 'value="api-key"', 'but not tenant API keys, which no session may create')
  const form = new URLSearchParams({ csrf: csrfToken, name: 'crafted key', type: 'api-key', expires: 'never' })
  const crafted = await fetch(`${server.url}/settings/api-keys`, {
    method: 'POST',
    headers: { cookie: headers.cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
    redirect: 'manual'
  })
  t.equal(crafted.status, 403, 'a crafted form gets the same refusal')
  t.match(await crafted.text(), 'whole tenant')
  t.notOk((await tokenNames()).includes('crafted key'))
})

t.test('the CLI acts as the system and may create any token', async (t) => {
  const lines: string[] = []
  const run = async (values: Record<string, string>) => {
    const args = ['token', 'create', '--tenant', 'acme', ...Object.entries(values).flatMap(([k, v]) => [`--${k}`, v])]
    const code = await runCli(args, plugins, {
      out: (text) => lines.push(text),
      err: (text) => lines.push(text),
      input: async () => '',
      config: {
        database: { url: server.platform.db.url },
        tenants: { acme: { modules: ['incident', 'corrective-action', 'inspection'] } }
      }
    })
    return code === 0
  }
  t.ok(
    await run({ type: 'service-account', name: 'cli robot', scopes: 'records:read:incident', roles: 'health-officer' })
  )
  t.match(lines.at(-1), /roles health-officer/)
  t.ok(await run({ type: 'api-key', name: 'cli key' }))
  t.match(lines.at(-1), /svc_k_/)
})
