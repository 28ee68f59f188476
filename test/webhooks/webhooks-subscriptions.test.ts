import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'
import { webhookTestConfig } from './receiver.ts'

const server = await startTestServer(webhookTestConfig({ allowedCidrs: [] }))
t.teardown(() => server.close())
const allowed = await startTestServer(webhookTestConfig())
t.teardown(() => allowed.close())

t.test('creates a subscription and shows its secret only in the creation response', async (t) => {
  const created = await allowed.request('POST', '/api/v1/webhooks', {
    body: {
      url: 'http://127.0.0.1:9/hook',
      kinds: ['record.created', 'webhook.test'],
      modules: ['incident'],
      description: 'ERP'
    }
  })
  t.equal(created.status, 201)
  t.match(created.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
  t.equal(created.headers.get('cache-control'), 'no-store')
  t.same(created.body.kinds, ['record.created', 'webhook.test'])
  t.same(created.body.modules, ['incident'])
  t.equal(created.body.enabled, true)
  const got = await allowed.request('GET', `/api/v1/webhooks/${created.body.id}`)
  t.equal(got.status, 200)
  t.notOk('secret' in got.body, 'a read never shows the secret')
  t.notOk(JSON.stringify(got.body).includes(created.body.secret))
  const list = await allowed.request('GET', '/api/v1/webhooks')
  t.equal(list.status, 200)
  t.ok(list.body.items.some((w: any) => w.id === created.body.id))
  t.notOk(JSON.stringify(list.body).includes(created.body.secret))
  const { rows } = await allowed.platform.db.system.query('SELECT secret FROM webhook_subscriptions WHERE id = $1', [
    created.body.id
  ])
  t.notOk(
    Buffer.from(rows[0].secret).toString('latin1').includes(created.body.secret.slice(6)),
    'the stored secret is sealed'
  )
})

t.test('changes, disables and deletes a subscription', async (t) => {
  const created = await allowed.request('POST', '/api/v1/webhooks', {
    body: { url: 'http://127.0.0.1:9/a', kinds: ['record.created'] }
  })
  const patched = await allowed.request('PATCH', `/api/v1/webhooks/${created.body.id}`, {
    body: { kinds: ['record.updated', 'record.deleted'], modules: null, enabled: false, description: 'paused' }
  })
  t.equal(patched.status, 200)
  t.same(patched.body.kinds, ['record.updated', 'record.deleted'])
  t.equal(patched.body.enabled, false)
  t.equal(patched.body.description, 'paused')
  t.ok(patched.body.disabledAt)
  const resumed = await allowed.request('PATCH', `/api/v1/webhooks/${created.body.id}`, { body: { enabled: true } })
  t.equal(resumed.body.enabled, true)
  t.equal(resumed.body.disabledAt, null)
  const removed = await allowed.request('DELETE', `/api/v1/webhooks/${created.body.id}`)
  t.equal(removed.status, 200)
  t.equal((await allowed.request('GET', `/api/v1/webhooks/${created.body.id}`)).status, 404)
})

t.test('refuses unknown event kinds and modules the tenant has not installed', async (t) => {
  const kinds = await allowed.request('POST', '/api/v1/webhooks', {
    body: { url: 'http://127.0.0.1:9/a', kinds: ['record.exploded'] }
  })
  t.equal(kinds.status, 400)
  t.match(kinds.body.detail, /record\.exploded/)
  const modules = await allowed.request('POST', '/api/v1/webhooks', {
    body: { url: 'http://127.0.0.1:9/a', kinds: ['record.created'], modules: ['payroll'] }
  })
  t.equal(modules.status, 400)
  t.match(modules.body.detail, /payroll/)
})

t.test('refuses targets on internal addresses at creation, with a problem saying why', async (t) => {
  for (const url of [
    'http://127.0.0.1:8080/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://10.0.0.1/hook',
    'http://localhost:8080/hook',
    'http://[::1]/hook',
    'http://192.168.1.10/',
    'http://100.64.0.1/',
    'http://[::ffff:127.0.0.1]/',
    'http://0.0.0.0/'
  ]) {
    const res = await server.request('POST', '/api/v1/webhooks', { body: { url, kinds: ['record.created'] } })
    t.equal(res.status, 422, url)
    t.equal(res.body.code, 'webhook.target_refused', url)
    t.match(res.body.detail, /internal address|private/, url)
  }
})

t.test('refuses plain http unless the operator allows it, and names that do not resolve', async (t) => {
  const strict = await startTestServer({ webhooks: { allowHttp: false } })
  t.teardown(() => strict.close())
  const http = await strict.request('POST', '/api/v1/webhooks', {
    body: { url: 'http://hooks.example.com/x', kinds: ['record.created'] }
  })
  t.equal(http.status, 422)
  t.match(http.body.detail, /must use https/)
  const started = Date.now()
  const unresolvable = await strict.request('POST', '/api/v1/webhooks', {
    body: { url: 'https://no-such-host.invalid/x', kinds: ['record.created'] }
  })
  t.equal(unresolvable.status, 422)
  t.match(unresolvable.body.detail, /could not be resolved/)
  t.ok(Date.now() - started < 5000, 'answers quickly')
  const notUrl = await strict.request('POST', '/api/v1/webhooks', {
    body: { url: 'hooks.example.com', kinds: ['record.created'] }
  })
  t.equal(notUrl.status, 422)
})

t.test('allows a loopback target only through the configured CIDR allow-list', async (t) => {
  const ok = await allowed.request('POST', '/api/v1/webhooks', {
    body: { url: 'http://127.0.0.1:9/hook', kinds: ['record.created'] }
  })
  t.equal(ok.status, 201)
  const other = await allowed.request('POST', '/api/v1/webhooks', {
    body: { url: 'http://127.0.0.2:9/hook', kinds: ['record.created'] }
  })
  t.equal(other.status, 422)
})

t.test('leaves webhooks to admins holding the webhooks:write scope', async (t) => {
  const narrow = (
    await allowed.request('POST', '/api/v1/tokens', {
      body: { type: 'service-account', name: 'reader', scopes: ['records:read'] }
    })
  ).body.token
  t.equal((await allowed.request('GET', '/api/v1/webhooks', { token: narrow })).status, 403)
  const scoped = await allowed.request('POST', '/api/v1/tokens', {
    body: { type: 'service-account', name: 'hooks', scopes: ['webhooks:write'], roles: ['safety-manager'] }
  })
  t.equal(scoped.status, 201)
  const res = await allowed.request('GET', '/api/v1/webhooks', { token: scoped.body.token })
  t.equal(res.status, 403)
  t.equal(res.body.code, 'permission.denied')
  const admin = (
    await allowed.request('POST', '/api/v1/tokens', {
      body: { type: 'service-account', name: 'hook admin', scopes: ['webhooks:write'], roles: ['admin'] }
    })
  ).body.token
  t.equal((await allowed.request('GET', '/api/v1/webhooks', { token: admin })).status, 200)
})

t.test("keeps one tenant's subscriptions from another", async (t) => {
  const a = await allowed.request('POST', '/api/v1/webhooks', {
    body: { url: 'http://127.0.0.1:9/a', kinds: ['record.created'] }
  })
  const b = allowed.keys.globex
  t.equal((await allowed.request('GET', `/api/v1/webhooks/${a.body.id}`, { token: b })).status, 404)
  t.equal(
    (await allowed.request('PATCH', `/api/v1/webhooks/${a.body.id}`, { token: b, body: { enabled: false } })).status,
    404
  )
  t.equal((await allowed.request('POST', `/api/v1/webhooks/${a.body.id}:rotate-secret`, { token: b })).status, 404)
  t.equal((await allowed.request('GET', `/api/v1/webhooks/${a.body.id}/deliveries`, { token: b })).status, 404)
  t.notOk(
    (await allowed.request('GET', '/api/v1/webhooks', { token: b })).body.items.some((w: any) => w.id === a.body.id)
  )
})
