import { createHash } from 'node:crypto'
import t from '../helpers/tap.ts'
import { eventually, userWithToken } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())
const apiKey = server.keys.acme
const { users } = server.platform

const createIncident = async (token: string, overrides: Record<string, unknown> = {}) =>
  server.request('POST', '/api/v1/records', {
    token,
    body: { moduleKey: 'incident', payload: incidentPayload(overrides) }
  })

async function serviceAccount(body: Record<string, unknown>) {
  const res = await server.request('POST', '/api/v1/tokens', {
    token: apiKey,
    body: { type: 'service-account', name: 'integration', ...body }
  })
  if (res.status !== 201) throw new Error(`setup: service account answered ${res.status} ${res.text}`)
  return res.body
}

t.test(
  'each token type has its own visible marker and 40 random base62 characters, and is stored only as a hash',
  async (t) => {
    const sa = await serviceAccount({ scopes: ['records:read'] })
    const user = await userWithToken(server, 'acme', ['reporter'])
    t.match(apiKey, /^svc_k_[0-9A-Za-z]{40}$/)
    t.match(user.token, /^svc_p_[0-9A-Za-z]{40}$/)
    t.match(sa.token, /^sa_[0-9A-Za-z]{40}$/)
    t.equal(sa.prefix, sa.token.slice(0, 9), 'a short prefix is kept to recognise it')
    const { rows } = await server.platform.db.system.query('SELECT * FROM credentials WHERE id = $1', [sa.id])
    const stored = JSON.stringify(rows[0])
    t.notOk(stored.includes(sa.token.slice(9)), 'the secret part is in no column')
    t.same(rows[0].secret_hash, createHash('sha256').update(sa.token).digest(), 'only its SHA-256 is stored')
  }
)

t.test('a token is shown in full once: the creation response has it, no later read does', async (t) => {
  const sa = await serviceAccount({ scopes: ['records:read'] })
  t.equal(server.platform.config.tenants.acme.name, 'Acme Chemicals')
  const one = await server.request('GET', `/api/v1/tokens/${sa.id}`, { token: apiKey })
  t.equal(one.status, 200)
  t.notOk('token' in one.body)
  t.notOk(one.text.includes(sa.token))
  const all = await server.request('GET', '/api/v1/tokens', { token: apiKey })
  t.ok(all.body.items.some((i: any) => i.id === sa.id))
  t.notOk(all.text.includes(sa.token))
})

t.test('a tenant API key acts as the tenant: every module, every field, no user', async (t) => {
  const me = await server.request('GET', '/api/v1/me', { token: apiKey })
  t.equal(me.body.credential.type, 'api-key')
  t.equal(me.body.roles, 'all')
  t.equal(me.body.userId, null)
  const created = await createIncident(apiKey, { medicalDetails: 'Bruised left hand' })
  t.equal(created.status, 201)
  t.equal(created.body.createdBy.type, 'api-key')
  t.equal(created.body.payload.medicalDetails, 'Bruised left hand', 'sees restricted fields')
  const ca = await server.request('POST', '/api/v1/records', {
    token: apiKey,
    body: {
      moduleKey: 'corrective-action',
      payload: { title: 'Guard rail', incident: created.body.id, kind: 'corrective' }
    }
  })
  t.equal(ca.status, 201)
  const personal = await server.request('POST', '/api/v1/tokens', {
    token: apiKey,
    body: { type: 'personal', name: 'nobody' }
  })
  t.equal(personal.status, 403, 'cannot issue a personal token: there is no user behind it')
  t.equal(personal.body.code, 'token.user_required')
})

t.test("a personal access token acts as its user, with exactly the user's roles", async (t) => {
  const reporter = await userWithToken(server, 'acme', ['reporter'])
  const me = await server.request('GET', '/api/v1/me', { token: reporter.token })
  t.equal(me.body.credential.type, 'personal')
  t.equal(me.body.userId, reporter.id)
  t.same(me.body.roles, ['reporter'])
  const created = await createIncident(reporter.token)
  t.equal(created.status, 201)
  t.match(created.body.createdBy, {
    type: 'user',
    id: reporter.id,
    name: reporter.userName,
    token: { type: 'personal', id: String, name: `${reporter.userName} token` }
  })
  t.notOk(created.body.createdBy.onBehalfOf, 'a user is the person themselves')
  t.same(created.body.availableTransitions, [], 'a reporter fires no transitions')
  const fire = await server.request('POST', `/api/v1/records/${created.body.id}:transition`, {
    token: reporter.token,
    body: { transition: 'dismiss' }
  })
  t.equal(fire.status, 403)
  t.equal(fire.body.code, 'permission.denied')
  const del = await server.request('DELETE', `/api/v1/records/${created.body.id}`, { token: reporter.token })
  t.equal(del.status, 403)
  t.equal(del.body.missing, 'delete')
  const ca = await server.request('POST', '/api/v1/records', {
    token: reporter.token,
    body: { moduleKey: 'corrective-action', payload: { title: 'x', incident: created.body.id, kind: 'corrective' } }
  })
  t.equal(ca.status, 403, 'no rights in a module none of its roles covers')
  const key = await server.request('POST', '/api/v1/tokens', {
    token: reporter.token,
    body: { type: 'api-key', name: 'escalate' }
  })
  t.equal(key.status, 403, 'a non-admin cannot issue tenant API keys')
})

t.test(
  'a personal access token loses access at once when its user loses a role, directly or through a group',
  async (t) => {
    const manager = await userWithToken(server, 'acme', ['safety-manager'])
    const list = () => server.request('GET', '/api/v1/records?moduleKey=corrective-action', { token: manager.token })
    t.equal((await list()).status, 200)
    await users.revokeRole('acme', manager.id, 'safety-manager')
    t.ok(await eventually(async () => (await list()).status === 403), 'the next calls are refused')
    t.equal((await list()).body.code, 'permission.denied')

    const group = await users.createGroup('acme', { displayName: 'Safety team', roles: ['safety-manager'] })
    await users.addMember('acme', group.id, manager.id)
    t.ok(await eventually(async () => (await list()).status === 200), 'a group grants the role back')
    await users.removeMember('acme', group.id, manager.id)
    t.ok(await eventually(async () => (await list()).status === 403), 'leaving the group narrows the token')
    await users.addMember('acme', group.id, manager.id)
    t.ok(await eventually(async () => (await list()).status === 200))
    await users.setGroupRoles('acme', group.id, ['auditor'])
    t.ok(
      await eventually(
        async () =>
          (
            await server.request('POST', '/api/v1/records', {
              token: manager.token,
              body: { moduleKey: 'incident', payload: incidentPayload() }
            })
          ).status === 403
      ),
      "changing the group's roles narrows it too"
    )
  }
)

t.test("a deactivated user's token is 401 on its next call", async (t) => {
  const user = await userWithToken(server, 'acme', ['auditor'])
  t.equal((await server.request('GET', '/api/v1/me', { token: user.token })).status, 200)
  await users.setActive('acme', user.id, false)
  t.ok(await eventually(async () => (await server.request('GET', '/api/v1/me', { token: user.token })).status === 401))
  t.equal((await server.request('GET', '/api/v1/me', { token: user.token })).body.code, 'auth.user_inactive')
})

t.test('a revoked token is 401 on its next call, whoever revoked it', async (t) => {
  const user = await userWithToken(server, 'acme', ['auditor'])
  const mine = await server.request('GET', '/api/v1/tokens', { token: user.token })
  t.equal(mine.body.items.length, 1, 'a user lists only their own tokens')
  const id = mine.body.items[0].id
  const revoked = await server.request('DELETE', `/api/v1/tokens/${id}`, { token: user.token })
  t.equal(revoked.status, 200)
  t.equal(revoked.body.state, 'revoked')
  const next = await server.request('GET', '/api/v1/me', { token: user.token })
  t.equal(next.status, 401)
  t.equal(next.body.code, 'auth.revoked')

  const sa = await serviceAccount({ scopes: ['records:read'] })
  t.equal(
    (await server.request('DELETE', `/api/v1/tokens/${sa.id}`, { token: apiKey })).status,
    200,
    'an admin credential revokes any token'
  )
  t.equal((await server.request('GET', '/api/v1/records?moduleKey=incident', { token: sa.token })).status, 401)
})

t.test('another user cannot see or revoke your token', async (t) => {
  const a = await userWithToken(server, 'acme', ['auditor'])
  const b = await userWithToken(server, 'acme', ['auditor'])
  const aId = (await server.request('GET', '/api/v1/tokens', { token: a.token })).body.items[0].id
  t.equal((await server.request('GET', `/api/v1/tokens/${aId}`, { token: b.token })).status, 404)
  t.equal((await server.request('DELETE', `/api/v1/tokens/${aId}`, { token: b.token })).status, 404)
  t.equal((await server.request('GET', '/api/v1/me', { token: a.token })).status, 200, 'still works')
})

t.test('an expired token is 401 on its next call', async (t) => {
  const sa = await serviceAccount({ scopes: ['records:read'], expiresAt: new Date(Date.now() + 1500).toISOString() })
  t.equal((await server.request('GET', '/api/v1/records?moduleKey=incident', { token: sa.token })).status, 200)
  await new Promise((r) => setTimeout(r, 1600))
  const after = await server.request('GET', '/api/v1/records?moduleKey=incident', { token: sa.token })
  t.equal(after.status, 401)
  t.equal(after.body.code, 'auth.expired')
  const past = await server.request('POST', '/api/v1/tokens', {
    token: apiKey,
    body: { type: 'service-account', name: 'x', scopes: ['records:read'], expiresAt: '2020-01-01T00:00:00Z' }
  })
  t.equal(past.status, 400, 'an expiry in the past is refused')
})

t.test(
  'a service-account token may do what its scopes name and gets 403 naming the missing scope otherwise',
  async (t) => {
    const sa = await serviceAccount({ scopes: ['records:read:incident', 'records:write:incident'] })
    const me = await server.request('GET', '/api/v1/me', { token: sa.token })
    t.equal(me.body.credential.type, 'service-account')
    t.same(me.body.scopes, ['records:read:incident', 'records:write:incident'])
    const created = await createIncident(sa.token)
    t.equal(created.status, 201)
    // Created by the tenant API key, which acts for nobody: no person behind it either.
    t.same(created.body.createdBy, {
      type: 'service-account',
      id: sa.id,
      name: 'integration',
      token: { type: 'service-account', id: sa.id, name: 'integration' }
    })
    t.equal((await server.request('GET', `/api/v1/records/${created.body.id}`, { token: sa.token })).status, 200)

    const cases: Array<[string, string, unknown, string]> = [
      ['POST', `/api/v1/records/${created.body.id}:transition`, { transition: 'dismiss' }, 'records:transition'],
      ['DELETE', `/api/v1/records/${created.body.id}`, undefined, 'records:delete'],
      ['GET', '/api/v1/records?moduleKey=corrective-action', undefined, 'records:read'],
      ['GET', '/api/v1/modules', undefined, 'modules:read'],
      ['GET', '/api/v1/tokens', undefined, 'tokens:write']
    ]
    for (const [method, path, body, scope] of cases) {
      const res = await server.request(method, path, { token: sa.token, body })
      t.equal(res.status, 403, `${method} ${path}: 403`)
      t.equal(res.body.code, 'scope.missing', `${method} ${path}: code`)
      t.equal(res.body.missingScope, scope, `${method} ${path}: names ${scope}`)
      t.match(res.body.detail, scope)
    }
    t.equal(
      (await server.request('GET', `/api/v1/records/${created.body.id}`)).body.state,
      'reported',
      'nothing changed'
    )
  }
)

t.test('a service account given roles acts within both its scopes and its roles', async (t) => {
  const sa = await serviceAccount({
    scopes: ['records:read', 'records:write', 'records:transition'],
    roles: ['reporter']
  })
  const created = await createIncident(sa.token)
  t.equal(created.status, 201)
  t.equal(
    (
      await server.request('POST', `/api/v1/records/${created.body.id}:transition`, {
        token: sa.token,
        body: { transition: 'dismiss' }
      })
    ).status,
    403,
    'the reporter role fires no transition'
  )
})

t.test('scopes are checked when a token is created, and a token never mints a wider one', async (t) => {
  const unknown = await server.request('POST', '/api/v1/tokens', {
    token: apiKey,
    body: { type: 'service-account', name: 'x', scopes: ['records:read', 'records:fly', 'records:read:nosuchmodule'] }
  })
  t.equal(unknown.status, 400)
  t.equal(unknown.body.code, 'field.invalid')
  t.match(unknown.body.detail, /records:fly, records:read:nosuchmodule/)
  t.match(unknown.body.detail, /records:read/)
  const none = await server.request('POST', '/api/v1/tokens', {
    token: apiKey,
    body: { type: 'service-account', name: 'x' }
  })
  t.equal(none.status, 400, 'a service account needs scopes')

  const narrow = await userWithToken(server, 'acme', ['safety-manager', 'admin'], {
    scopes: ['records:read', 'tokens:write']
  })
  t.equal((await createIncident(narrow.token)).status, 403, 'a scoped personal token cannot write')
  const wider = await server.request('POST', '/api/v1/tokens', {
    token: narrow.token,
    body: { type: 'personal', name: 'wider', scopes: ['records:write'] }
  })
  t.equal(wider.status, 403)
  t.equal(wider.body.code, 'scope.escalation')
  const unscoped = await server.request('POST', '/api/v1/tokens', {
    token: narrow.token,
    body: { type: 'service-account', name: 'all' }
  })
  t.equal(unscoped.status, 400, 'a service account names its scopes')
  const inherits = await server.request('POST', '/api/v1/tokens', {
    token: narrow.token,
    body: { type: 'personal', name: 'all' }
  })
  t.equal(inherits.status, 201, "a token asked without scopes gets its creator's")
  t.same(inherits.body.scopes, ['records:read', 'tokens:write'])
  t.equal((await createIncident(inherits.body.token)).status, 403, 'so it cannot write either')
  const same = await server.request('POST', '/api/v1/tokens', {
    token: narrow.token,
    body: { type: 'personal', name: 'same', scopes: ['records:read:incident'] }
  })
  t.equal(same.status, 201, 'a narrower one is fine')
  t.match(same.body.token, /^svc_p_/)
  t.equal((await server.request('GET', '/api/v1/records?moduleKey=incident', { token: same.body.token })).status, 200)
  t.equal(
    (await server.request('GET', '/api/v1/records?moduleKey=corrective-action', { token: same.body.token })).status,
    403
  )
})

t.test('token creation refuses an Idempotency-Key, since the token could never be replayed', async (t) => {
  const res = await server.request('POST', '/api/v1/tokens', {
    token: apiKey,
    headers: { 'Idempotency-Key': 'k1' },
    body: { type: 'service-account', name: 'x', scopes: ['records:read'] }
  })
  t.equal(res.status, 400)
  t.equal(res.body.code, 'idempotency.unsupported')
})

t.test("tokens of one tenant never work against another's records", async (t) => {
  const globexUser = await userWithToken(server, 'globex', ['safety-manager'])
  const acmeRecord = (await createIncident(apiKey)).body
  t.equal((await server.request('GET', `/api/v1/records/${acmeRecord.id}`, { token: globexUser.token })).status, 404)
  const acmeTokenId = (await server.request('GET', '/api/v1/tokens', { token: apiKey })).body.items[0].id
  t.equal((await server.request('DELETE', `/api/v1/tokens/${acmeTokenId}`, { token: server.keys.globex })).status, 404)
})
