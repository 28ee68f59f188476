import { setTimeout as sleep } from 'node:timers/promises'
import t from '../helpers/tap.ts'
import { sendPage } from '../helpers/pages.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from '../webhooks/receiver.ts'

/**
 * /settings/webhooks (plugins/webhooks/webhooks.page.ts), HTTP in and HTML out: a tenant
 * admin's view of the subscriptions and their recent deliveries, with real deliveries to a
 * local receiver, and its two forms (send a test event, resume).
 */

const server = await startTestServer({ ...webhookTestConfig(), limits: { signInAttemptsPerMinute: 50 } })
t.teardown(() => server.close())

const password = 'correct horse battery staple'
await server.platform.users.create('acme', { userName: 'ada', password, roles: ['admin'] })
await server.platform.users.create('acme', { userName: 'sam', password, roles: ['safety-manager'] })
await server.platform.users.create('globex', { userName: 'gus', password, roles: ['admin'] })
await server.platform.users.create('initech', { userName: 'ida', password, roles: ['admin'] })

const send = sendPage

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1]

/** A signed-in browser of the user: its session cookie and the CSRF token its pages carry. */
async function browserOf(userName: string, tenant = 'acme') {
  const signedIn = await send(server, 'POST', '/sign-in', {
    form: { tenant, userName, password, next: '/settings/webhooks' }
  })
  const line = signedIn.headers.getSetCookie().find((c) => c.startsWith('records_session='))
  if (signedIn.status !== 303 || !line) throw new Error(`setup: sign-in of ${userName} answered ${signedIn.status}`)
  const cookie = line.slice('records_session='.length).split(';')[0]
  // The API key page serves every signed-in user, so it gives the CSRF token of non-admins too.
  const keys = await send(server, 'GET', '/settings/api-keys', { cookie })
  return { cookie, csrf: csrfOf(keys.html)! }
}

const ada = await browserOf('ada')
const sam = await browserOf('sam')
const gus = await browserOf('gus', 'globex')

async function subscribe(body: Record<string, unknown>, token = server.keys.acme) {
  const res = await server.request('POST', '/api/v1/webhooks', { token, body })
  if (res.status !== 201) throw new Error(`setup: subscribe answered ${res.status} ${res.text}`)
  return res.body
}

/** Polls the subscription (through the API) until `done` holds. */
async function until(id: string, done: (w: any) => boolean, ms = 10_000) {
  const stop = Date.now() + ms
  for (;;) {
    const w = (await server.request('GET', `/api/v1/webhooks/${id}`)).body
    if (done(w)) return w
    if (Date.now() > stop) throw new Error(`webhook ${id} did not reach the state in ${ms} ms: ${JSON.stringify(w)}`)
    await sleep(100)
  }
}

/** Polls the delivery log (through the API) until it has `n` attempts. */
async function attempts(id: string, n: number, ms = 10_000) {
  const stop = Date.now() + ms
  for (;;) {
    const items = (await server.request('GET', `/api/v1/webhooks/${id}/deliveries`)).body.items
    if (items.length >= n) return items
    if (Date.now() > stop) throw new Error(`webhook ${id} logged ${items.length} of ${n} attempts in ${ms} ms`)
    await sleep(100)
  }
}

const page = (cookie: string, path = '/settings/webhooks') => send(server, 'GET', path, { cookie })

t.test('without a session the page and its forms send the visitor to sign in, and back to the page', async (t) => {
  for (const cookie of [undefined, 'not-a-session']) {
    const got = await send(server, 'GET', '/settings/webhooks', { cookie })
    t.equal(got.status, 303)
    t.equal(got.location, '/sign-in?next=/settings/webhooks')
    t.equal(got.headers.get('cache-control'), 'no-store')
  }
  const post = await send(server, 'POST', '/settings/webhooks/00000000-0000-4000-8000-000000000000/test', {
    form: { csrf: ada.csrf }
  })
  t.equal(post.status, 303)
  t.equal(post.location, '/sign-in?next=/settings/webhooks')
})

t.test('an admin without subscriptions is told how to create one, on the page or through the API', async (t) => {
  const ida = await browserOf('ida', 'initech')
  const got = await page(ida.cookie)
  t.equal(got.status, 200)
  t.match(got.html, 'No webhook subscriptions yet.')
  t.match(got.html, '<code>POST /api/v1/webhooks</code>')
  t.match(got.html, '<code>webhooks:write</code>')
  t.match(got.html, 'href="/api/docs"', 'links the API reference')
  t.match(
    got.html,
    '<a href="/settings/webhooks" data-label="Webhooks" aria-current="page">Webhooks</a>',
    'the settings menu has the page, for an admin'
  )
})

t.test(
  'an admin sees each subscription with its kinds, modules, state and recent attempts, never a secret',
  async (t) => {
    const receiver = await startReceiver()
    const gone = await startReceiver(() => 410)
    t.teardown(() => Promise.all([receiver.close(), gone.close()]))
    const live = await subscribe({
      url: receiver.url,
      kinds: ['record.created', 'webhook.test'],
      modules: ['incident'],
      description: 'Incident feed for the data warehouse'
    })
    const rotated = await server.request('POST', `/api/v1/webhooks/${live.id}:rotate-secret`)
    t.equal(rotated.status, 200)
    const record = (
      await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })
    ).body
    await receiver.waitFor(1)
    const [attempt] = await attempts(live.id, 1)
    const dead = await subscribe({ url: gone.url, kinds: ['webhook.test'] })
    t.equal((await server.request('POST', `/api/v1/webhooks/${dead.id}:test`)).status, 202)
    const disabled = await until(dead.id, (w) => !w.enabled)
    await attempts(dead.id, 1)

    const got = await page(ada.cookie)
    t.equal(got.status, 200)
    t.equal(got.headers.get('cache-control'), 'no-store')
    t.match(got.headers.get('content-type'), /^text\/html; charset=utf-8/)
    const nonce = /'nonce-([^']+)'/.exec(got.headers.get('content-security-policy') ?? '')?.[1]
    const styles = [...got.html.matchAll(/<style[^>]*>/g)].map((m) => m[0])
    t.ok(styles.length >= 2, 'the shared stylesheet and the page’s own')
    for (const s of styles) t.equal(s, `<style nonce="${nonce}">`, 'each carries the response’s nonce')
    t.notMatch(got.html, '<script', 'no script at all')

    t.match(got.html, `<code>${receiver.url}</code>`, 'the URL')
    t.match(got.html, 'Incident feed for the data warehouse', 'the description')
    t.match(got.html, '<code>record.created</code>, <code>webhook.test</code>', 'the kinds')
    t.match(got.html, '<dt>Modules</dt><dd><code>incident</code></dd>', 'the modules')
    t.match(
      got.html,
      /<dt>Previous secret<\/dt><dd>signs beside the current one until <time datetime="[^"]+Z">/,
      'the grace period of the rotated secret'
    )
    t.match(got.html, `<code>${attempt.eventId}</code>`, 'the event id of the attempt')
    t.equal(attempt.eventId, receiver.received[0].json.id)
    t.equal(receiver.received[0].json.subject.id, record.id)
    const row = new RegExp(
      `<tr>\\s*<td><time datetime="${attempt.at}">[^<]+</time></td>\\s*<td><code>record\\.created</code></td>\\s*<td><code>${attempt.eventId}</code></td>\\s*<td>1</td>\\s*<td>HTTP 200</td>\\s*<td>${attempt.latencyMs} ms</td>\\s*<td class="outcome-succeeded">succeeded</td>`
    )
    t.match(got.html, row, 'an attempt row: time, type, event id, attempt, status, latency, outcome')

    t.match(got.html, `<code>${gone.url}</code>`)
    t.match(got.html, /<span class="state-disabled">Disabled<\/span> since <time/, 'the disabled one, since when')
    t.match(disabled.disabledReason, /410 Gone/)
    t.match(got.html, `<p class="hint">${disabled.disabledReason}</p>`, 'with the reason the service gave')
    t.match(
      got.html,
      /<td>HTTP 410<\/td>\s*<td>\d+ ms<\/td>\s*<td class="outcome-failed">failed<\/td>/,
      'its failed attempt'
    )
    t.match(got.html, /<dt>Failing since<\/dt><dd><time/, 'failing since its first failure')
    t.match(got.html, `action="/settings/webhooks/${dead.id}/resume"`, 'a resume button for the disabled one')
    t.notMatch(got.html, `action="/settings/webhooks/${dead.id}/test"`, 'no test button for it')
    t.match(got.html, `action="/settings/webhooks/${live.id}/test"`, 'a test button for the enabled one')
    t.notMatch(got.html, `action="/settings/webhooks/${live.id}/resume"`)

    t.notMatch(got.html, 'whsec_', 'no signing secret, current or previous')
    for (const secret of [live.secret, rotated.body.secret, dead.secret])
      t.notMatch(got.html, secret.slice('whsec_'.length, 'whsec_'.length + 16))
  }
)

t.test('a hostile description and URL are shown as text', async (t) => {
  const hostileUrl = 'http://127.0.0.1:9/hook?q="><script>alert(2)</script>'
  await subscribe({
    url: hostileUrl,
    kinds: ['webhook.test'],
    description: '<script>alert(1)</script><img src=x onerror=alert(3)>'
  })
  const got = await page(ada.cookie)
  t.equal(got.status, 200)
  t.match(
    got.html,
    '&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(3)&gt;',
    'the description escaped'
  )
  t.match(got.html, 'http://127.0.0.1:9/hook?q=&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;', 'the URL escaped')
  t.notMatch(got.html, '<script', 'no script element made of them')
  t.notMatch(got.html, '<img', 'no image element either')
  t.notMatch(got.html, 'aria-label="Send test event to <', 'attribute values escaped too')
  t.match(got.html, 'aria-label="Send test event to ', 'the label this looks into is there')
})

t.test('a signed-in user who is no admin is refused with the 403 page, and sees no subscription', async (t) => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const sub = await subscribe({ url: receiver.url, kinds: ['webhook.test'], description: 'Only admins see this' })
  const got = await page(sam.cookie)
  t.equal(got.status, 403)
  t.equal(got.headers.get('cache-control'), 'no-store')
  t.match(got.html, '<h1>Not allowed</h1>')
  t.match(got.html, 'Only tenant admins manage webhooks.')
  t.notMatch(got.html, receiver.url)
  t.notMatch(got.html, 'Only admins see this')
  t.notMatch(got.html, sub.id)
  const keys = await send(server, 'GET', '/settings/api-keys', { cookie: sam.cookie })
  t.equal(keys.status, 200)
  t.notMatch(keys.html, 'href="/settings/webhooks"', 'the settings menu has no link to it for them')
  const test = await send(server, 'POST', `/settings/webhooks/${sub.id}/test`, {
    cookie: sam.cookie,
    form: { csrf: sam.csrf }
  })
  t.equal(test.status, 403, 'nor may the user send a test event')
  await sleep(600)
  t.equal(receiver.received.length, 0, 'nothing was sent')
})

t.test("another tenant's subscriptions never show, nor take a form", async (t) => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const acme = await subscribe({ url: receiver.url, kinds: ['webhook.test'], description: 'Acme private hook' })
  const globex = await subscribe(
    { url: 'http://127.0.0.1:9/globex-hook', kinds: ['webhook.test'], description: 'Globex private hook' },
    server.keys.globex
  )
  const theirs = await page(gus.cookie)
  t.equal(theirs.status, 200)
  t.match(theirs.html, 'Globex private hook', 'globex sees its own')
  t.notMatch(theirs.html, 'Acme private hook')
  t.notMatch(theirs.html, receiver.url)
  t.notMatch(theirs.html, acme.id)
  const ours = await page(ada.cookie)
  t.notMatch(ours.html, 'Globex private hook')
  t.notMatch(ours.html, '/globex-hook')
  t.notMatch(ours.html, globex.id)
  const foreign = await send(server, 'POST', `/settings/webhooks/${acme.id}/test`, {
    cookie: gus.cookie,
    form: { csrf: gus.csrf }
  })
  t.equal(foreign.status, 404, "a test of acme's subscription by globex's admin: not found")
  t.match(foreign.html, 'No webhook subscription')
  await sleep(600)
  t.equal(receiver.received.length, 0, 'nothing was sent')
})

t.test(
  '"Send test event" queues a webhook.test event that reaches the receiver, and the page reports it',
  async (t) => {
    const receiver = await startReceiver()
    t.teardown(() => receiver.close())
    const sub = await subscribe({ url: receiver.url, kinds: ['webhook.test'] })
    const sent = await send(server, 'POST', `/settings/webhooks/${sub.id}/test`, {
      cookie: ada.cookie,
      form: { csrf: ada.csrf },
      headers: { origin: server.url }
    })
    t.equal(sent.status, 303)
    t.equal(sent.location, '/settings/webhooks?done=tested')
    await receiver.waitFor(1)
    t.equal(receiver.received[0].json.type, 'webhook.test')
    t.same(receiver.received[0].json.subject, { type: 'webhook', id: sub.id })
    t.equal(receiver.received[0].json.actor.name, 'ada', 'sent as the signed-in admin')
    const [attempt] = await attempts(sub.id, 1)
    const after = await page(ada.cookie, sent.location!)
    t.match(after.html, '<div class="alert ok" role="status">A test event (webhook.test) was queued.')
    t.match(after.html, `<code>${attempt.eventId}</code>`, 'its attempt is in the list')
    const made = await send(server, 'GET', '/settings/webhooks?done=%3Cscript%3E', { cookie: ada.cookie })
    t.notMatch(made.html, 'role="status"', 'an unknown notice shows nothing')
    t.notMatch(made.html, '<script')
  }
)

t.test('"Resume" re-enables a disabled subscription and clears its reason', async (t) => {
  const receiver = await startReceiver((n) => (n === 0 ? 410 : 200))
  t.teardown(() => receiver.close())
  const sub = await subscribe({ url: receiver.url, kinds: ['webhook.test'] })
  await server.request('POST', `/api/v1/webhooks/${sub.id}:test`)
  await until(sub.id, (w) => !w.enabled)
  const resumed = await send(server, 'POST', `/settings/webhooks/${sub.id}/resume`, {
    cookie: ada.cookie,
    form: { csrf: ada.csrf }
  })
  t.equal(resumed.status, 303)
  t.equal(resumed.location, '/settings/webhooks?done=resumed')
  const w = (await server.request('GET', `/api/v1/webhooks/${sub.id}`)).body
  t.match(w, { enabled: true, disabledReason: null, disabledAt: null, failingSince: null })
  const after = await page(ada.cookie, resumed.location!)
  t.match(after.html, 'The subscription was resumed')
  t.match(after.html, `action="/settings/webhooks/${sub.id}/test"`, 'it is offered a test again')
  const again = await send(server, 'POST', `/settings/webhooks/${sub.id}/resume`, {
    cookie: ada.cookie,
    form: { csrf: ada.csrf }
  })
  t.equal(again.location, '/settings/webhooks?done=already-enabled', 'resuming an enabled one changes nothing')
  // And it delivers again.
  await send(server, 'POST', `/settings/webhooks/${sub.id}/test`, { cookie: ada.cookie, form: { csrf: ada.csrf } })
  await receiver.waitFor(2)
  t.equal(receiver.received[1].json.type, 'webhook.test')
})

t.test(
  'a form without the CSRF token, with a wrong one or from another site is refused with 403 and changes nothing',
  async (t) => {
    const receiver = await startReceiver()
    t.teardown(() => receiver.close())
    const live = await subscribe({ url: receiver.url, kinds: ['webhook.test'] })
    const paused = await subscribe({ url: receiver.url, kinds: ['webhook.test'] })
    await server.request('PATCH', `/api/v1/webhooks/${paused.id}`, { body: { enabled: false } })
    const forms: Array<[string, { form: Record<string, string>; headers?: Record<string, string> }]> = [
      ['no token', { form: {} }],
      ['a wrong token', { form: { csrf: ada.csrf.slice(0, -2) + 'xx' } }],
      ["another user's token", { form: { csrf: sam.csrf } }],
      ['another site', { form: { csrf: ada.csrf }, headers: { origin: 'https://evil.example' } }]
    ]
    for (const [what, o] of forms) {
      const test = await send(server, 'POST', `/settings/webhooks/${live.id}/test`, { cookie: ada.cookie, ...o })
      t.equal(test.status, 403, `test with ${what}: 403`)
      t.match(test.html, /nothing was changed|another site/)
      const resume = await send(server, 'POST', `/settings/webhooks/${paused.id}/resume`, { cookie: ada.cookie, ...o })
      t.equal(resume.status, 403, `resume with ${what}: 403`)
    }
    await sleep(600)
    t.equal(receiver.received.length, 0, 'no test event was sent')
    t.equal((await attempts(live.id, 0)).length, 0, 'none logged')
    t.equal(
      (await server.request('GET', `/api/v1/webhooks/${paused.id}`)).body.enabled,
      false,
      'the paused one is still disabled'
    )
  }
)

t.test('other methods get 405 with Allow', async (t) => {
  const put = await send(server, 'PUT', '/settings/webhooks', { cookie: ada.cookie })
  t.equal(put.status, 405)
  t.equal(put.headers.get('allow'), 'GET, HEAD, POST')
  const get = await send(server, 'GET', '/settings/webhooks/00000000-0000-4000-8000-000000000000/test', {
    cookie: ada.cookie
  })
  t.equal(get.status, 405)
  t.equal(get.headers.get('allow'), 'POST')
})
