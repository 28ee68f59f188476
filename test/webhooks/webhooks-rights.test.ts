import { createHash } from 'node:crypto'
import t from '../helpers/tap.ts'
import { userWithToken } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from './receiver.ts'
import { eventsSettled } from '../helpers/events.ts'

// A webhook delivers what its subscription's owner may read, decided when it is sent, with the
// rights the events feed applies to the same owner: one decision (core/events/rights.ts).

const server = await startTestServer(webhookTestConfig())
t.teardown(() => server.close())
const apiKey = server.keys.acme
const kinds = ['record.created', 'record.updated', 'attachment.added', 'user.provisioned']
const settle = (ms = 800) => new Promise((r) => setTimeout(r, ms))

async function subscribe(token: string) {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const res = await server.request('POST', '/api/v1/webhooks', { token, body: { url: receiver.url, kinds } })
  if (res.status !== 201) throw new Error(`subscribe: ${res.status} ${res.text}`)
  return { receiver, sub: res.body }
}

/** The feed as `token` reads it, after `after`, of the subscription's kinds. */
async function feed(token: string, after?: string) {
  const items: any[] = []
  let cursor = after
  for (;;) {
    const res = await server.request(
      'GET',
      `/api/v1/events?limit=50&types=${kinds.join(',')}${cursor ? `&after=${encodeURIComponent(cursor)}` : ''}`,
      { token }
    )
    if (res.status !== 200) throw new Error(`feed: ${res.status} ${res.text}`)
    items.push(...res.body.items)
    cursor = res.body.nextCursor
    if (!res.body.hasMore) return { items, cursor: cursor! }
  }
}

const log = async (subId: string) =>
  (await server.request('GET', `/api/v1/webhooks/${subId}/deliveries?limit=200`, { token: apiKey })).body.items as any[]

async function attach(recordId: string, fileName: string) {
  const bytes = Buffer.from('%PDF-1.4\n% fit note\n%%EOF\n')
  const created = await server.request('POST', '/api/v1/attachments', {
    token: apiKey,
    body: {
      recordId,
      fileName,
      contentType: 'application/pdf',
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex')
    }
  })
  if (created.status !== 201) throw new Error(`attach: ${created.status} ${created.text}`)
  const put = await fetch(created.body.upload.url, {
    method: 'PUT',
    headers: created.body.upload.headers,
    body: new Uint8Array(bytes)
  })
  if (put.status !== 200) throw new Error(`upload: ${put.status}`)
}

t.test(
  'a subscriber gets only the events and field names its owner may read, exactly what the events feed shows that owner',
  async (t) => {
    const [health, adminOnly, adminManager, adminReporter] = await Promise.all([
      userWithToken(server, 'acme', ['health-officer']),
      userWithToken(server, 'acme', ['admin']),
      userWithToken(server, 'acme', ['admin', 'safety-manager']),
      userWithToken(server, 'acme', ['admin', 'reporter'])
    ])
    const owners = { adminOnly, adminManager, adminReporter }
    // Each subscription starts where the feed ends now: both read up to the same horizon only once it has settled.
    await eventsSettled(server.platform.db.system)
    const subs = Object.fromEntries(
      await Promise.all(
        Object.entries(owners).map(
          async ([name, u]) =>
            [name, { ...(await subscribe(u.token)), start: (await feed(u.token)).cursor, token: u.token }] as const
        )
      )
    )

    const hidden = (
      await server.request('POST', '/api/v1/records', {
        token: apiKey,
        body: {
          moduleKey: 'incident',
          payload: incidentPayload({ title: 'Forklift', medicalDetails: 'Fractured wrist' })
        }
      })
    ).body
    t.equal(
      (
        await server.request('PATCH', `/api/v1/records/${hidden.id}`, {
          token: health.token,
          body: { payload: { medicalDetails: 'Fractured wrist, cast for 6 weeks' } }
        })
      ).status,
      200
    )
    t.equal(
      (
        await server.request('PATCH', `/api/v1/records/${hidden.id}`, {
          token: apiKey,
          body: { payload: { severity: 'high' } }
        })
      ).status,
      200
    )
    await attach(hidden.id, 'Fit note - medical.pdf')
    const own = (
      await server.request('POST', '/api/v1/records', {
        token: adminReporter.token,
        body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Reported by me' }) }
      })
    ).body
    const user = await server.platform.users.create('acme', {
      userName: 'rights.check',
      password: 'correct horse battery staple',
      roles: ['auditor']
    })

    await subs.adminManager.receiver.waitFor(6)
    await subs.adminReporter.receiver.waitFor(2)
    await subs.adminOnly.receiver.waitFor(1)
    await settle()

    const got = (name: keyof typeof owners) => subs[name].receiver.received.map((r) => r.json)
    t.same(
      got('adminOnly').map((e) => e.type),
      ['user.provisioned'],
      'an admin without a role in the module gets no record or attachment event'
    )
    t.same(
      got('adminReporter').map((e) => `${e.type} ${e.subject.id}`),
      [`record.created ${own.id}`, `user.provisioned ${user.id}`],
      "a row rule keeps another reporter's record out"
    )
    const manager = got('adminManager')
    t.same(
      manager.map((e) => e.type),
      ['record.created', 'record.updated', 'record.updated', 'attachment.added', 'record.created', 'user.provisioned']
    )
    t.same(
      manager.filter((e) => e.type === 'record.updated').map((e) => e.data.changedFields),
      [[], ['severity']],
      "a hidden field's name leaves changedFields"
    )
    for (const [name, s] of Object.entries(subs)) {
      for (const r of s.receiver.received) {
        t.notOk(
          r.body.includes('medicalDetails') || r.body.includes('Fractured'),
          `${name}: no hidden field name or value`
        )
        if (name !== 'adminManager')
          t.notOk(r.body.includes('Fit note'), `${name}: no file name of a record it may not read`)
      }
      // The same events, the same data, as the feed shows the owner.
      const shown = (await feed(s.token, s.start)).items
      t.same(
        s.receiver.received.map((r) => r.json),
        shown,
        `${name}: what the feed shows its owner, nothing more`
      )
    }

    const skipped = (await log(subs.adminOnly.sub.id)).filter((a) => a.outcome === 'skipped')
    t.equal(skipped.length, 5, 'each event the owner may not see is logged as skipped')
    t.ok(
      skipped.every(
        (a) => a.attempt === 1 && a.statusCode === null && /not sent: .*may not see this event/.test(a.error)
      )
    )
    await settle(600)
    t.equal((await log(subs.adminOnly.sub.id)).filter((a) => a.outcome === 'skipped').length, 5, 'and not retried')
  }
)

t.test(
  "a subscription stops delivering when its owner's token is revoked, its user loses the role or the admin role, or is deactivated",
  async (t) => {
    const newIncident = async () =>
      (
        await server.request('POST', '/api/v1/records', {
          token: apiKey,
          body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Standing check' }) }
        })
      ).body
    const lastOutcome = async (subId: string, eventSubject: string, receiver: { received: Array<{ json: any }> }) => {
      await settle()
      return { sent: receiver.received.some((r) => r.json.subject.id === eventSubject), log: (await log(subId))[0] }
    }

    // A service account that may manage webhooks and read incidents; revoked.
    const sa = await server.request('POST', '/api/v1/tokens', {
      token: apiKey,
      body: {
        type: 'service-account',
        name: 'hooks owner',
        roles: ['admin', 'safety-manager'],
        scopes: ['webhooks:write', 'records:read']
      }
    })
    t.equal(sa.status, 201)
    const bySa = await subscribe(sa.body.token)
    const before = await newIncident()
    await bySa.receiver.waitFor(1)
    t.equal(bySa.receiver.received[0].json.subject.id, before.id, 'delivered while the token stands')
    t.equal((await server.request('DELETE', `/api/v1/tokens/${sa.body.id}`, { token: apiKey })).status, 200)
    const afterRevoke = await newIncident()
    const revoked = await lastOutcome(bySa.sub.id, afterRevoke.id, bySa.receiver)
    t.notOk(revoked.sent, 'not delivered once the token is revoked')
    t.match(revoked.log, { outcome: 'skipped', error: /no longer authenticates/ })

    // A user whose role in the module is removed, then the admin role, then who is deactivated.
    const owner = await userWithToken(server, 'acme', ['admin', 'safety-manager'])
    const byUser = await subscribe(owner.token)
    await server.platform.users.revokeRole('acme', owner.id, 'safety-manager')
    const afterRole = await newIncident()
    const roleGone = await lastOutcome(byUser.sub.id, afterRole.id, byUser.receiver)
    t.notOk(roleGone.sent, 'no record event once the module role is gone')
    t.match(roleGone.log, { outcome: 'skipped', error: /may not see this event/ })
    await server.platform.users.revokeRole('acme', owner.id, 'admin')
    const u1 = await server.platform.users.create('acme', {
      userName: 'standing.one',
      password: 'correct horse battery staple',
      roles: []
    })
    const adminGone = await lastOutcome(byUser.sub.id, u1.id, byUser.receiver)
    t.notOk(adminGone.sent, 'no user event once the admin role is gone')
    t.match(adminGone.log, { outcome: 'skipped', error: /may no longer manage webhooks/ })
    await server.platform.users.grantRole('acme', owner.id, 'admin')
    await server.platform.users.setActive('acme', owner.id, false)
    const u2 = await server.platform.users.create('acme', {
      userName: 'standing.two',
      password: 'correct horse battery staple',
      roles: []
    })
    const deactivated = await lastOutcome(byUser.sub.id, u2.id, byUser.receiver)
    t.notOk(deactivated.sent, 'nothing once the user is deactivated')
    t.match(deactivated.log, { outcome: 'skipped', error: /no longer authenticates/ })
    t.equal(byUser.receiver.received.length, 0)
  }
)

t.test('a revocation stops the deliveries of a claim already being sent to a slow receiver', async (t) => {
  const slow = await startReceiver(() => 200, { delayMs: 1500 })
  t.teardown(() => slow.close())
  const sa = await server.request('POST', '/api/v1/tokens', {
    token: apiKey,
    body: {
      type: 'service-account',
      name: 'slow hooks owner',
      roles: ['admin', 'safety-manager'],
      scopes: ['webhooks:write', 'records:read']
    }
  })
  const sub = (
    await server.request('POST', '/api/v1/webhooks', {
      token: sa.body.token,
      body: { url: slow.url, kinds: ['record.created'] }
    })
  ).body
  // Paused while three incidents are made, then replayed at once: one claim holds all three.
  await server.request('PATCH', `/api/v1/webhooks/${sub.id}`, { token: apiKey, body: { enabled: false } })
  const from = new Date(Date.now() - 500).toISOString()
  for (let i = 0; i < 3; i++)
    await server.request('POST', '/api/v1/records', {
      token: apiKey,
      body: { moduleKey: 'incident', payload: incidentPayload({ title: `Slow ${i}` }) }
    })
  // A replay queues what is under the horizon: the three incidents, once it has passed them. Waited for while
  // the subscription is still paused, so that the replay follows its enabling at once, as before.
  await eventsSettled(server.platform.db.system)
  await server.request('PATCH', `/api/v1/webhooks/${sub.id}`, { token: apiKey, body: { enabled: true } })
  t.same(
    (
      await server.request('POST', `/api/v1/webhooks/${sub.id}:replay`, {
        token: apiKey,
        body: { from, to: new Date(Date.now() + 1000).toISOString() }
      })
    ).body,
    { queued: 3 }
  )
  await slow.waitFor(1)
  t.equal((await server.request('DELETE', `/api/v1/tokens/${sa.body.id}`, { token: apiKey })).status, 200)
  await settle(4000)
  t.equal(slow.received.length, 1, 'only the request already on its way')
  t.same(
    (await log(sub.id)).map((a) => a.outcome),
    ['skipped', 'skipped', 'succeeded']
  )
})
