import t from '../helpers/tap.ts'
import { eventually } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from './receiver.ts'

// The schedule compressed to milliseconds (the default is 0, 1 min, 5 min, 30 min, 2 h, 5 h, 10 h, 24 h); no jitter.
const schedule = [0, 100, 200, 400, 700, 1100, 1600, 2200]
const server = await startTestServer(webhookTestConfig({ retryScheduleMs: schedule }))
t.teardown(() => server.close())

async function run(t: any, answer: (n: number) => number) {
  const receiver = await startReceiver(answer)
  t.teardown(() => receiver.close())
  const sub = (
    await server.request('POST', '/api/v1/webhooks', { body: { url: receiver.url, kinds: ['record.created'] } })
  ).body
  await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })
  await receiver.waitFor(8)
  // Time for a ninth, were one to come (twice the last gap).
  await new Promise((r) => setTimeout(r, 1500))
  return { receiver, sub }
}

t.test('retries a receiver that fails 7 times at the scheduled offsets, 8 attempts in all', async (t) => {
  const { receiver, sub } = await run(t, (n) => (n < 7 ? 500 : 204))
  t.equal(receiver.received.length, 8)
  const first = receiver.received[0].at
  receiver.received.forEach((r, i) => {
    const offset = r.at - first
    t.ok(
      offset >= schedule[i] - 15 && offset < schedule[i] + 250,
      `attempt ${i + 1} at ${offset} ms, scheduled ${schedule[i]} ms`
    )
  })
  t.equal(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size, 1, 'one webhook-id on every retry')
  const log = (await server.request('GET', `/api/v1/webhooks/${sub.id}/deliveries`)).body.items.reverse()
  t.same(
    log.map((l: any) => l.attempt),
    [1, 2, 3, 4, 5, 6, 7, 8]
  )
  t.same(
    log.map((l: any) => l.outcome),
    [...Array(7).fill('retrying'), 'succeeded']
  )
  const got = (await server.request('GET', `/api/v1/webhooks/${sub.id}`)).body
  t.equal(got.enabled, true)
  t.equal(got.failingSince, null, 'a success ends the failing streak')
})

t.test('gives up after 8 failed attempts and sends no ninth', async (t) => {
  const { receiver, sub } = await run(t, () => 503)
  t.equal(receiver.received.length, 8)
  const log = (await server.request('GET', `/api/v1/webhooks/${sub.id}/deliveries`)).body.items.reverse()
  t.same(
    log.map((l: any) => l.outcome),
    [...Array(7).fill('retrying'), 'failed']
  )
  t.equal(log[7].statusCode, 503)
  const got = (await server.request('GET', `/api/v1/webhooks/${sub.id}`)).body
  t.ok(got.failingSince, 'the subscription is failing')
  t.equal(got.enabled, true, 'but not yet for the configured time')
})

t.test('retries a refused connection like a failed status', async (t) => {
  const dead = await startReceiver()
  const url = dead.url
  await dead.close()
  const sub = (await server.request('POST', '/api/v1/webhooks', { body: { url, kinds: ['record.created'] } })).body
  await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })
  // The first retry is due 100 ms after the refusal; read the log until it shows (a fixed 600 ms wait failed under load).
  const deliveries = async () =>
    (await server.request('GET', `/api/v1/webhooks/${sub.id}/deliveries`)).body.items as any[]
  t.ok(
    await eventually(async () => (await deliveries()).length >= 2, 20_000),
    'a second attempt followed the refused one'
  )
  t.match((await deliveries()).at(-1), { attempt: 1, statusCode: null, outcome: 'retrying', error: /ECONNREFUSED/ })
  await server.request('DELETE', `/api/v1/webhooks/${sub.id}`)
})

t.test('disables a subscription failing for longer than the configured time, saying why', async (t) => {
  const receiver = await startReceiver(() => 500)
  t.teardown(() => receiver.close())
  const sub = (
    await server.request('POST', '/api/v1/webhooks', { body: { url: receiver.url, kinds: ['record.created'] } })
  ).body
  // As if it had been failing for four days.
  await server.platform.db.system.query(
    `UPDATE webhook_subscriptions SET failing_since = now() - interval '4 days' WHERE id = $1`,
    [sub.id]
  )
  await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })
  await receiver.waitFor(1)
  const subscription = async () => (await server.request('GET', `/api/v1/webhooks/${sub.id}`)).body
  t.ok(
    await eventually(async () => (await subscription()).enabled === false, 20_000),
    'disabled once its attempt is recorded'
  )
  const got = await subscription()
  t.equal(got.enabled, false)
  t.match(got.disabledReason, /failed since .*status 500/)
  t.equal(receiver.received.length, 1)
})
