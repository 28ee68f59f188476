import t from '../helpers/tap.ts'
import { sendPage } from '../helpers/pages.ts'
import { startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from '../webhooks/receiver.ts'

/**
 * The forms of /settings/webhooks (plugins/webhooks/webhooks.page.ts): create, edit, rotate
 * the secret, delete after a confirmation, each through the webhooks service as the
 * signed-in admin, with the service's problems shown beside the field they name.
 */

const server = await startTestServer({ ...webhookTestConfig(), limits: { signInAttemptsPerMinute: 50 } })
t.teardown(() => server.close())

const password = 'correct horse battery staple'
await server.platform.users.create('acme', { userName: 'ada', password, roles: ['admin'] })
await server.platform.users.create('acme', { userName: 'sam', password, roles: ['safety-manager'] })

const send = sendPage
const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1]

async function browserOf(userName: string) {
  const signedIn = await send(server, 'POST', '/sign-in', { form: { tenant: 'acme', userName, password } })
  const line = signedIn.headers.getSetCookie().find((c) => c.startsWith('records_session='))
  if (signedIn.status !== 303 || !line) throw new Error(`setup: sign-in of ${userName} answered ${signedIn.status}`)
  const cookie = line.slice('records_session='.length).split(';')[0]
  const keys = await send(server, 'GET', '/settings/api-keys', { cookie })
  return { cookie, csrf: csrfOf(keys.html)! }
}

const ada = await browserOf('ada')
const sam = await browserOf('sam')

const listed = async () => (await server.request('GET', '/api/v1/webhooks')).body.items as any[]
const secretOf = (html: string) => /id="secret" value="(whsec_[^"]+)"/.exec(html)?.[1]

t.test('the create form offers every event kind the service accepts and the tenant’s modules', async (t) => {
  const got = await send(server, 'GET', '/settings/webhooks', { cookie: ada.cookie })
  t.equal(got.status, 200)
  t.match(got.html, '<form class="card" method="post" action="/settings/webhooks" novalidate')
  t.match(got.html, '<label for="url">URL</label>')
  for (const kind of ['record.created', 'record.transitioned', 'user.provisioned', 'webhook.test'])
    t.match(got.html, `<input type="checkbox" name="kinds" value="${kind}">`, `kind ${kind}`)
  for (const m of ['incident', 'corrective-action', 'inspection'])
    t.match(got.html, `<input type="checkbox" name="modules" value="${m}">`, `module ${m}`)
  t.match(got.html, '<a href="/settings/webhooks" data-label="Webhooks" aria-current="page">Webhooks</a>')
})

t.test('creating through the page shows the signing secret once, and the subscription works', async (t) => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const created = await send(server, 'POST', '/settings/webhooks', {
    cookie: ada.cookie,
    headers: { origin: server.url },
    form: {
      csrf: ada.csrf,
      url: receiver.url,
      description: 'Page-made hook',
      kinds: ['record.created', 'webhook.test'],
      modules: ['incident']
    }
  })
  t.equal(created.status, 201)
  t.equal(created.headers.get('cache-control'), 'no-store')
  t.match(created.html, '<h1>Subscription created</h1>')
  const secret = secretOf(created.html)
  t.match(secret, /^whsec_/, 'the secret, in a read-only field')
  const sub = (await listed()).find((w) => w.description === 'Page-made hook')
  t.match(sub, { url: receiver.url, kinds: ['record.created', 'webhook.test'], modules: ['incident'], enabled: true })
  t.match(sub.createdBy, { name: 'ada' }, 'created as the signed-in admin')
  const list = await send(server, 'GET', '/settings/webhooks', { cookie: ada.cookie })
  t.notMatch(list.html, secret!, 'the list never shows it again')
  t.match(list.html, `href="/settings/webhooks/${sub.id}/edit"`)
  // The test ping is signed with that secret: the receiver's copy checks out.
  await send(server, 'POST', `/settings/webhooks/${sub.id}/test`, { cookie: ada.cookie, form: { csrf: ada.csrf } })
  await receiver.waitFor(1)
  t.equal(receiver.received[0].json.type, 'webhook.test')
})

t.test(
  'a refused URL shows the service’s detail beside the URL field, keeps the form and creates nothing',
  async (t) => {
    const before = (await listed()).length
    for (const [url, detail] of [
      ['not a url', /is not an absolute URL/],
      ['http://10.1.2.3/hook', /The target http:\/\/10\.1\.2\.3\/hook is refused/]
    ] as const) {
      const got = await send(server, 'POST', '/settings/webhooks', {
        cookie: ada.cookie,
        form: { csrf: ada.csrf, url, description: 'kept', kinds: ['webhook.test'] }
      })
      t.equal(got.status, 422, `${url}: the service's status`)
      const api = await server.request('POST', '/api/v1/webhooks', { body: { url, kinds: ['webhook.test'] } })
      t.equal(api.status, 422)
      t.equal(api.body.code, 'webhook.target_refused')
      const beside = /<p class="field-error" id="url-error">([^<]*)<\/p>/.exec(got.html)?.[1]
      t.match(beside, detail, 'the detail beside the URL field')
      t.equal(beside, api.body.detail.replace(/"/g, '&quot;'), 'the API’s own detail')
      t.match(
        got.html,
        /id="url" name="url" value="[^"]*" required maxlength="2000" aria-describedby="url-hint url-error" aria-invalid="true">/
      )
      t.match(got.html, 'role="alert">The subscription was not saved')
      t.match(got.html, 'name="description" value="kept"', 'what was typed is kept')
      t.match(got.html, '<input type="checkbox" name="kinds" value="webhook.test" checked>')
    }
    const noKinds = await send(server, 'POST', '/settings/webhooks', {
      cookie: ada.cookie,
      form: { csrf: ada.csrf, url: 'http://127.0.0.1:9/x' }
    })
    t.equal(noKinds.status, 400)
    t.match(noKinds.html, /<p class="field-error" id="kinds-error">must NOT have fewer than 1 items\.<\/p>/)
    const badModule = await send(server, 'POST', '/settings/webhooks', {
      cookie: ada.cookie,
      form: { csrf: ada.csrf, url: 'http://127.0.0.1:9/x', kinds: ['webhook.test'], modules: ['nope'] }
    })
    t.match(badModule.html, /<p class="field-error" id="modules-error">names module nope, not installed/)
    t.equal((await listed()).length, before, 'nothing was created')
  }
)

t.test('editing changes the URL, kinds, modules and state through the service, and its checks apply', async (t) => {
  const sub = (
    await server.request('POST', '/api/v1/webhooks', {
      body: { url: 'http://127.0.0.1:9/edit-me', kinds: ['webhook.test'], description: 'to edit' }
    })
  ).body
  const form = await send(server, 'GET', `/settings/webhooks/${sub.id}/edit`, { cookie: ada.cookie })
  t.equal(form.status, 200)
  t.match(form.html, 'value="http://127.0.0.1:9/edit-me"')
  t.match(form.html, '<input type="checkbox" name="kinds" value="webhook.test" checked>')
  t.match(form.html, '<input type="checkbox" name="enabled" value="true" checked>')
  const refused = await send(server, 'POST', `/settings/webhooks/${sub.id}/edit`, {
    cookie: ada.cookie,
    form: { csrf: ada.csrf, url: 'ftp://127.0.0.1/x', kinds: ['webhook.test'], enabled: 'true' }
  })
  t.equal(refused.status, 422)
  t.match(
    refused.html,
    /id="url-error">The target ftp:\/\/127\.0\.0\.1\/x is refused: The target must use https or http/
  )
  t.equal((await server.request('GET', `/api/v1/webhooks/${sub.id}`)).body.url, sub.url, 'unchanged')
  const saved = await send(server, 'POST', `/settings/webhooks/${sub.id}/edit`, {
    cookie: ada.cookie,
    form: {
      csrf: ada.csrf,
      url: 'http://127.0.0.1:9/edited',
      description: '',
      kinds: ['record.created', 'record.deleted'],
      modules: ['incident', 'inspection']
    }
  })
  t.equal(saved.status, 303)
  t.equal(saved.location, `/settings/webhooks?done=updated#webhook-${sub.id}`)
  t.match((await server.request('GET', `/api/v1/webhooks/${sub.id}`)).body, {
    url: 'http://127.0.0.1:9/edited',
    description: null,
    kinds: ['record.created', 'record.deleted'],
    modules: ['incident', 'inspection'],
    enabled: false,
    disabledReason: null
  })
  const again = await send(server, 'POST', `/settings/webhooks/${sub.id}/edit`, {
    cookie: ada.cookie,
    form: {
      csrf: ada.csrf,
      url: 'http://127.0.0.1:9/edited',
      kinds: ['record.created', 'record.deleted'],
      modules: ['incident', 'inspection']
    }
  })
  t.equal(again.location, '/settings/webhooks?done=unchanged', 'nothing changed, nothing sent')
  await send(server, 'POST', `/settings/webhooks/${sub.id}/edit`, {
    cookie: ada.cookie,
    form: { csrf: ada.csrf, url: 'http://127.0.0.1:9/edited', kinds: ['record.created'], enabled: 'true' }
  })
  t.match((await server.request('GET', `/api/v1/webhooks/${sub.id}`)).body, {
    kinds: ['record.created'],
    modules: null,
    enabled: true
  })
})

t.test('rotating shows the new secret once; the old one keeps its grace period', async (t) => {
  const sub = (
    await server.request('POST', '/api/v1/webhooks', {
      body: { url: 'http://127.0.0.1:9/rotate', kinds: ['webhook.test'] }
    })
  ).body
  const rotated = await send(server, 'POST', `/settings/webhooks/${sub.id}/rotate-secret`, {
    cookie: ada.cookie,
    form: { csrf: ada.csrf }
  })
  t.equal(rotated.status, 200)
  t.match(rotated.html, '<h1>Secret rotated</h1>')
  const secret = secretOf(rotated.html)
  t.match(secret, /^whsec_/)
  t.not(secret, sub.secret)
  t.ok((await server.request('GET', `/api/v1/webhooks/${sub.id}`)).body.previousSecretExpiresAt)
  for (let i = 0; i < 4; i++) await server.request('POST', `/api/v1/webhooks/${sub.id}:rotate-secret`)
  const limit = await send(server, 'POST', `/settings/webhooks/${sub.id}/rotate-secret`, {
    cookie: ada.cookie,
    form: { csrf: ada.csrf }
  })
  t.equal(limit.status, 409, 'past the limit the service refuses')
  t.match(limit.html, /<div class="alert error" role="alert">5 secrets replaced by earlier rotations/)
  t.notMatch(limit.html, 'whsec_')
})

t.test('deleting asks first, then removes the subscription', async (t) => {
  const sub = (
    await server.request('POST', '/api/v1/webhooks', {
      body: { url: 'http://127.0.0.1:9/delete-me', kinds: ['webhook.test'] }
    })
  ).body
  const confirm = await send(server, 'GET', `/settings/webhooks/${sub.id}/delete`, { cookie: ada.cookie })
  t.equal(confirm.status, 200)
  t.match(confirm.html, 'Delete the subscription to <code>http://127.0.0.1:9/delete-me</code>')
  t.match(confirm.html, `<form method="post" action="/settings/webhooks/${sub.id}/delete">`)
  t.equal((await server.request('GET', `/api/v1/webhooks/${sub.id}`)).status, 200, 'the question deletes nothing')
  const noToken = await send(server, 'POST', `/settings/webhooks/${sub.id}/delete`, { cookie: ada.cookie, form: {} })
  t.equal(noToken.status, 403)
  t.equal((await server.request('GET', `/api/v1/webhooks/${sub.id}`)).status, 200, 'nor a form without the token')
  const gone = await send(server, 'POST', `/settings/webhooks/${sub.id}/delete`, {
    cookie: ada.cookie,
    form: { csrf: ada.csrf }
  })
  t.equal(gone.status, 303)
  t.equal(gone.location, '/settings/webhooks?done=deleted')
  t.equal((await server.request('GET', `/api/v1/webhooks/${sub.id}`)).status, 404)
  const list = await send(server, 'GET', gone.location!, { cookie: ada.cookie })
  t.match(list.html, 'The subscription was deleted')
})

t.test('a non-admin gets no form, and forged posts of every form are refused and change nothing', async (t) => {
  const sub = (
    await server.request('POST', '/api/v1/webhooks', {
      body: { url: 'http://127.0.0.1:9/kept', kinds: ['webhook.test'] }
    })
  ).body
  const before = (await listed()).length
  const list = await send(server, 'GET', '/settings/webhooks', { cookie: sam.cookie })
  t.equal(list.status, 403)
  t.notMatch(list.html, 'name="url"', 'no create form')
  for (const path of [`/settings/webhooks/${sub.id}/edit`, `/settings/webhooks/${sub.id}/delete`]) {
    const got = await send(server, 'GET', path, { cookie: sam.cookie })
    t.equal(got.status, 403, `GET ${path}`)
    t.notMatch(got.html, 'http://127.0.0.1:9/kept')
  }
  const forged: Array<[string, Record<string, string | string[]>]> = [
    ['/settings/webhooks', { url: 'http://127.0.0.1:9/forged', kinds: ['webhook.test'] }],
    [`/settings/webhooks/${sub.id}/edit`, { url: 'http://127.0.0.1:9/forged', kinds: ['webhook.test'] }],
    [`/settings/webhooks/${sub.id}/rotate-secret`, {}],
    [`/settings/webhooks/${sub.id}/delete`, {}]
  ]
  for (const [path, form] of forged) {
    const got = await send(server, 'POST', path, { cookie: sam.cookie, form: { csrf: sam.csrf, ...form } })
    t.equal(got.status, 403, `POST ${path} by a non-admin`)
    t.match(got.html, 'Only tenant admins manage webhooks.')
    t.notMatch(got.html, 'whsec_')
  }
  t.equal((await listed()).length, before, 'nothing created or deleted')
  t.match((await server.request('GET', `/api/v1/webhooks/${sub.id}`)).body, {
    url: 'http://127.0.0.1:9/kept',
    previousSecretExpiresAt: null
  })
})
