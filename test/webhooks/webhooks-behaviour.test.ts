import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from './receiver.ts'

const server = await startTestServer(webhookTestConfig({ timeoutMs: 500 }))
t.teardown(() => server.close())

const subscribe = async (url: string, kinds = ['record.created', 'record.updated']) =>
  (await server.request('POST', '/api/v1/webhooks', { body: { url, kinds } })).body
const createIncident = async (title: string) =>
  (
    await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload({ title }) }
    })
  ).body
const log = async (id: string) => (await server.request('GET', `/api/v1/webhooks/${id}/deliveries`)).body.items

t.test(
  "keeps a record's events in order while an earlier one waits for its retry, and lets other records pass",
  async (t) => {
    const receiver = await startReceiver((n) => (n === 0 ? 500 : 200))
    t.teardown(() => receiver.close())
    const sub = await subscribe(receiver.url)
    const x = await createIncident('Order X')
    await receiver.waitFor(1)
    t.equal(
      (await server.request('PATCH', `/api/v1/records/${x.id}`, { body: { payload: { severity: 'high' } } })).status,
      200
    )
    const y = await createIncident('Order Y')
    await receiver.waitFor(4)
    const seen = receiver.received.map((r) => `${r.json.subject.id === x.id ? 'x' : 'y'}.${r.json.type}`)
    t.equal(seen[0], 'x.record.created', 'the first attempt, failed')
    t.ok(
      seen.indexOf('x.record.updated') > seen.lastIndexOf('x.record.created'),
      `the update of x comes after x's creation is delivered: ${seen.join(', ')}`
    )
    t.ok(seen.includes('y.record.created'))
    t.ok(y.id)
    await server.request('DELETE', `/api/v1/webhooks/${sub.id}`)
  }
)

t.test('lets a fast subscriber go on while a slow one takes its time', async (t) => {
  const slow = await startReceiver(() => 200, { delayMs: 400 })
  const fast = await startReceiver()
  t.teardown(() => Promise.all([slow.close(), fast.close()]))
  const subs = [await subscribe(slow.url, ['record.created']), await subscribe(fast.url, ['record.created'])]
  for (let i = 0; i < 4; i++) await createIncident(`Speed ${i}`)
  await fast.waitFor(4)
  t.ok(slow.received.length < 4, `the fast one has all 4 while the slow one has ${slow.received.length}`)
  await slow.waitFor(4)
  for (const s of subs) await server.request('DELETE', `/api/v1/webhooks/${s.id}`)
})

t.test('counts a receiver that does not answer in time as a failed attempt', async (t) => {
  const receiver = await startReceiver((n) => (n === 0 ? 0 : 200))
  t.teardown(() => receiver.close())
  const sub = await subscribe(receiver.url, ['record.created'])
  await createIncident('Timeout')
  await receiver.waitFor(2)
  await new Promise((r) => setTimeout(r, 200))
  const items = (await log(sub.id)).reverse()
  t.match(items[0], { attempt: 1, statusCode: null, outcome: 'retrying', error: /within 500 ms/ })
  t.ok(items[0].latencyMs >= 490)
  t.match(items[1], { attempt: 2, statusCode: 200, outcome: 'succeeded' })
  await server.request('DELETE', `/api/v1/webhooks/${sub.id}`)
})

t.test('follows no redirect and keeps only the first 4 KB of a large answer', async (t) => {
  const elsewhere = await startReceiver()
  const receiver = await startReceiver((n) => (n === 0 ? 302 : 200), {
    body: (n) => (n === 0 ? 'moved' : 'x'.repeat(100_000)),
    headers: { location: elsewhere.url }
  })
  t.teardown(() => Promise.all([receiver.close(), elsewhere.close()]))
  const sub = await subscribe(receiver.url, ['record.created'])
  await createIncident('Redirect')
  await receiver.waitFor(2)
  await new Promise((r) => setTimeout(r, 200))
  t.equal(elsewhere.received.length, 0, 'the redirect target got nothing')
  const items = (await log(sub.id)).reverse()
  t.match(items[0], { statusCode: 302, outcome: 'retrying', responseExcerpt: 'moved' })
  t.match(items[1], { statusCode: 200, outcome: 'succeeded' })
  t.equal(items[1].responseExcerpt.length, 4096)
  await server.request('DELETE', `/api/v1/webhooks/${sub.id}`)
})

t.test('checks the target again at every delivery and refuses it once it points inside', async (t) => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const sub = await subscribe(receiver.url, ['record.created'])
  // As if the name now resolved to the metadata address (DNS rebinding): the stored target is checked again.
  await server.platform.db.system.query(
    `UPDATE webhook_subscriptions SET url = 'http://169.254.169.254/latest/meta-data' WHERE id = $1`,
    [sub.id]
  )
  await createIncident('Rebound')
  let items: any[] = []
  for (const until = Date.now() + 5000; Date.now() < until && !(items = await log(sub.id)).length;)
    await new Promise((r) => setTimeout(r, 100))
  // The log is newest first, and the retry comes 100 ms later: under load it may already be there.
  const first = items.at(-1)
  t.match(first, { attempt: 1, statusCode: null, outcome: 'retrying', error: /target refused: .*169\.254\.169\.254/ })
  t.equal(receiver.received.length, 0)
  await server.request('DELETE', `/api/v1/webhooks/${sub.id}`)
})
