import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from './receiver.ts'

const server = await startTestServer(webhookTestConfig())
t.teardown(() => server.close())

const subscribe = async (url: string) => {
  const res = await server.request('POST', '/api/v1/webhooks', { body: { url, kinds: ['record.created'] } })
  if (res.status !== 201) throw new Error(`subscribe: ${res.status} ${res.text}`)
  return res.body
}
const createIncident = async (title: string) =>
  (
    await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload({ title }) }
    })
  ).body
const settle = (ms = 600) => new Promise((r) => setTimeout(r, ms))

t.test(
  'a replay asked for while the delivery is in flight answers what it queued and sends it again after',
  async (t) => {
    // The receiver holds each answer for 700 ms: the replay arrives while the first attempt is in flight.
    const receiver = await startReceiver(() => 200, { delayMs: 700 })
    t.teardown(() => receiver.close())
    const sub = await subscribe(receiver.url)
    const record = await createIncident('Replayed in flight')
    await receiver.waitFor(1)
    const eventId = receiver.received[0].json.id
    const replay = await server.request('POST', `/api/v1/webhooks/${sub.id}:replay`, { body: { eventId } })
    t.equal(replay.status, 202)
    t.same(replay.body, { queued: 1 })
    await receiver.waitFor(2)
    await settle(1500)
    t.same(
      receiver.received.map((r) => r.json.id),
      [eventId, eventId],
      'sent once, and once more for the replay'
    )
    t.equal(receiver.received[1].json.subject.id, record.id)
    const log = (await server.request('GET', `/api/v1/webhooks/${sub.id}/deliveries`)).body.items
    t.same(
      log.map((a: any) => [a.attempt, a.outcome]),
      [
        [1, 'succeeded'],
        [1, 'succeeded']
      ],
      'the replay counts again from attempt 1'
    )
    await server.request('DELETE', `/api/v1/webhooks/${sub.id}`)
  }
)

t.test('a range replay right after deliveries queues and sends every event it names', async (t) => {
  const receiver = await startReceiver(() => 200, { delayMs: 300 })
  t.teardown(() => receiver.close())
  const sub = await subscribe(receiver.url)
  const from = new Date(Date.now() - 1000).toISOString()
  const a = await createIncident('Range A')
  const b = await createIncident('Range B')
  // The first is answered slowly; the replay comes while it is in flight and the second is still waiting.
  await receiver.waitFor(1)
  const replay = await server.request('POST', `/api/v1/webhooks/${sub.id}:replay`, {
    body: { from, to: new Date(Date.now() + 1000).toISOString() }
  })
  t.same(replay.body, { queued: 2 })
  const asked = Date.now()
  // A again; B once at least after the replay was asked (if it had not been sent yet, that one send is the replay's).
  await receiver.waitFor(3)
  await settle(1200)
  const sent = receiver.received.map((r) => r.json.subject.id)
  t.equal(sent.filter((id) => id === a.id).length, 2, 'A delivered, and again')
  t.ok(
    receiver.received.some((r) => r.json.subject.id === b.id && r.at >= asked),
    'B delivered after the replay was asked'
  )
  await server.request('DELETE', `/api/v1/webhooks/${sub.id}`)
})

t.test('a replay of a delivery waiting for its retry sends it now, from attempt 1', async (t) => {
  // Fails the first attempt; the retry is due a long time later.
  const receiver = await startReceiver((n) => (n === 0 ? 500 : 200))
  t.teardown(() => receiver.close())
  const slow = await startTestServer(webhookTestConfig({ retryScheduleMs: [0, 600_000] }))
  t.teardown(() => slow.close())
  const sub = (
    await slow.request('POST', '/api/v1/webhooks', { body: { url: receiver.url, kinds: ['record.created'] } })
  ).body
  await slow.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Waiting for a retry' }) }
  })
  await receiver.waitFor(1)
  await settle(400)
  const eventId = receiver.received[0].json.id
  const replay = await slow.request('POST', `/api/v1/webhooks/${sub.id}:replay`, { body: { eventId } })
  t.same(replay.body, { queued: 1 })
  await receiver.waitFor(2, 5000)
  await settle(400)
  const log = (await slow.request('GET', `/api/v1/webhooks/${sub.id}/deliveries`)).body.items
  t.same(
    log.map((a: any) => [a.attempt, a.statusCode, a.outcome]),
    [
      [1, 200, 'succeeded'],
      [1, 500, 'retrying']
    ]
  )
})
