import t from '../helpers/tap.ts'
import { bulkCall } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from './receiver.ts'

const server = await startTestServer(webhookTestConfig())
t.teardown(() => server.close())

t.test('delivers 1,000 bulk-loaded rows as 1,000 record.created events, none twice', async (t) => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const sub = (
    await server.request('POST', '/api/v1/webhooks', { body: { url: receiver.url, kinds: ['record.created'] } })
  ).body
  const rows = Array.from({ length: 1000 }, (_, i) => ({
    payload: incidentPayload({ title: `Bulk ${i}` }),
    externalRef: `bulk-${i}`
  }))
  const res = await bulkCall(
    server.url,
    '/api/modules/incident/bulk',
    server.keys.acme,
    rows.map((r) => JSON.stringify(r)).join('\n') + '\n'
  )
  t.match(res.lines.at(-1), { summary: { created: 1000, complete: true } })
  await receiver.waitFor(1000, 60_000)
  await new Promise((r) => setTimeout(r, 1000))
  t.equal(receiver.received.length, 1000)
  t.equal(new Set(receiver.received.map((r) => r.json.id)).size, 1000, 'no event twice')
  t.equal(new Set(receiver.received.map((r) => r.json.subject.id)).size, 1000)
  t.ok(receiver.received.every((r) => r.json.type === 'record.created'))
  const { rows: counted } = await server.platform.db.system.query(
    `SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE subscription_id = $1 GROUP BY status`,
    [sub.id]
  )
  t.same(counted, [{ status: 'succeeded', n: 1000 }])
})
