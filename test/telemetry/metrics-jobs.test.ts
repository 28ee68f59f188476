// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import t from '../helpers/tap.ts'
import { metricValue as value } from '../helpers/metrics.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from '../webhooks/receiver.ts'

/** Export runs and webhook deliveries are counted on the instance whose jobs and dispatcher run them. */
const worker = await startTestServer({
  ...webhookTestConfig(),
  metrics: { enabled: true, port: 0 },
  jobs: { enabled: true, processEverySeconds: 1 }
})
t.teardown(async () => {
  await worker.close()
  // Agenda leaves a referenced timer behind job runs (see test/idempotency/purge-job.test.ts).
  setTimeout(() => process.exit(), 200).unref()
})

t.test('export runs and webhook deliveries are counted where the jobs run', async (t) => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  t.equal(
    (await worker.request('POST', '/api/v1/webhooks', { body: { url: receiver.url, kinds: ['record.created'] } }))
      .status,
    201
  )
  for (let i = 0; i < 3; i++)
    t.equal(
      (await worker.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } }))
        .status,
      201
    )
  const started = await worker.request('POST', '/api/v1/exports', { body: { moduleKey: 'incident', format: 'csv' } })
  t.equal(started.status, 202)
  await receiver.waitFor(3)
  const scrapeWorker = async () => (await fetch(worker.running.metricsUrl!)).text()
  let text = ''
  for (const until = Date.now() + 20_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
    text = await scrapeWorker()
    if (
      value(text, 'records_export_duration_seconds_count', { outcome: 'succeeded' }) === 1 &&
      value(text, 'records_webhook_deliveries_total', { outcome: 'succeeded' }) === 3
    )
      break
  }
  t.equal(value(text, 'records_export_rows_total'), 3)
  t.equal(value(text, 'records_export_duration_seconds_count', { outcome: 'succeeded' }), 1)
  t.equal(value(text, 'records_webhook_deliveries_total', { outcome: 'succeeded' }), 3)
  t.equal(value(text, 'records_webhook_delivery_lag_seconds_count'), 3)
  t.equal(value(text, 'records_webhook_delivery_duration_seconds_count'), 3)
})
