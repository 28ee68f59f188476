import { Webhook } from 'standardwebhooks'
import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from './receiver.ts'

// A grace period of 7.2 s, so a secret's end can be watched.
const graceMs = 7200
const server = await startTestServer(webhookTestConfig({ secretGraceHours: graceMs / 3_600_000 }))
t.teardown(() => server.close())

const verifies = (secret: string, r: { body: string; headers: Record<string, unknown> }) => {
  try {
    new Webhook(secret).verify(r.body, r.headers as any)
    return true
  } catch {
    return false
  }
}

t.test(
  'two rotations within the grace period: each replaced secret signs until its own grace period ends',
  async (t) => {
    const receiver = await startReceiver()
    t.teardown(() => receiver.close())
    const created = await server.request('POST', '/api/v1/webhooks', {
      body: { url: receiver.url, kinds: ['webhook.test'] }
    })
    const first = created.body.secret
    const r1 = await server.request('POST', `/api/v1/webhooks/${created.body.id}:rotate-secret`)
    const rotatedAt = Date.now()
    await new Promise((r) => setTimeout(r, 3000))
    const r2 = await server.request('POST', `/api/v1/webhooks/${created.body.id}:rotate-secret`)
    t.equal(r2.status, 200)
    const [second, third] = [r1.body.secret, r2.body.secret]

    t.equal((await server.request('POST', `/api/v1/webhooks/${created.body.id}:test`)).status, 202)
    await receiver.waitFor(1)
    const during = receiver.received[0]
    t.equal(String(during.headers['webhook-signature']).split(' ').length, 3, 'three signatures')
    for (const [name, secret] of [
      ['first', first],
      ['second', second],
      ['third', third]
    ])
      t.ok(verifies(secret, during), `the ${name} secret verifies`)
    t.equal(r2.body.previousSecretsExpireAt?.length, 2, 'both replaced secrets are listed')
    t.ok(
      Date.parse(r2.body.previousSecretsExpireAt[0]) > Date.parse(r2.body.previousSecretsExpireAt[1]),
      'newest first, each with its own end'
    )
    t.equal(r2.body.previousSecretExpiresAt, r2.body.previousSecretsExpireAt[0])

    // After the first secret's grace period, before the second's.
    await new Promise((r) => setTimeout(r, Math.max(0, rotatedAt + graceMs + 300 - Date.now())))
    t.equal((await server.request('POST', `/api/v1/webhooks/${created.body.id}:test`)).status, 202)
    await receiver.waitFor(2)
    const after = receiver.received[1]
    t.equal(String(after.headers['webhook-signature']).split(' ').length, 2)
    t.notOk(verifies(first, after), 'the first secret no longer signs')
    t.ok(verifies(second, after), 'the second still does')
    t.ok(verifies(third, after), 'and the current one')
    t.equal((await server.request('GET', `/api/v1/webhooks/${created.body.id}`)).body.previousSecretsExpireAt.length, 1)
  }
)

t.test(
  'a rotation past the bound of replaced secrets still signing is refused with 409, saying when it is possible again',
  async (t) => {
    const created = await server.request('POST', '/api/v1/webhooks', {
      body: { url: 'http://127.0.0.1:9/hook', kinds: ['webhook.test'] }
    })
    for (let i = 0; i < 5; i++)
      t.equal(
        (await server.request('POST', `/api/v1/webhooks/${created.body.id}:rotate-secret`)).status,
        200,
        `rotation ${i + 1}`
      )
    const refused = await server.request('POST', `/api/v1/webhooks/${created.body.id}:rotate-secret`)
    t.equal(refused.status, 409)
    t.equal(refused.body.code, 'webhook.rotation_limit')
    const got = (await server.request('GET', `/api/v1/webhooks/${created.body.id}`)).body
    t.equal(got.previousSecretsExpireAt.length, 5)
    t.ok(refused.body.detail.includes(got.previousSecretsExpireAt[4]), 'the detail names when the oldest stops signing')
    t.notOk('secret' in refused.body, 'no secret was made')
  }
)
