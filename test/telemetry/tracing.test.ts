// tap: own process (the OpenTelemetry SDK is global to a process and must start before the app is imported; Agenda leaves a timer behind)
import { setTimeout as sleep } from 'node:timers/promises'
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace'
import t from '../helpers/tap.ts'
import { startTracing } from '../../core/telemetry/start.ts'

const exporter = new InMemorySpanExporter()
await startTracing({ spanProcessors: [new SimpleSpanProcessor({ exporter })] })
// Only now: the instrumentations patch koa, pg and http as the app loads them.
const { startTestServer, incidentPayload } = await import('../helpers/server.ts')

const { bulkCall, ndjson } = await import('../helpers/ndjson.ts')
const { scim, scimToken } = await import('../scim/helpers.ts')
const { startReceiver, webhookTestConfig } = await import('../webhooks/receiver.ts')

const server = await startTestServer({ jobs: { enabled: true, processEverySeconds: 1 }, ...webhookTestConfig() })
const receiver = await startReceiver()
t.teardown(async () => {
  await receiver.close()
  await server.close()
  // Agenda leaves a referenced timer behind job runs (see test/idempotency/purge-job.test.ts).
  setTimeout(() => process.exit(), 200).unref()
})

const spans = () => exporter.getFinishedSpans()
const byId = () => new Map(spans().map((s) => [s.spanContext().spanId, s]))
/** The names of `span` and its ancestors, innermost first. */
function lineage(span: ReadableSpan, index: Map<string, ReadableSpan>): string[] {
  const names = [span.name]
  for (
    let parent = span.parentSpanContext?.spanId;
    parent && index.has(parent);
    parent = index.get(parent)!.parentSpanContext?.spanId
  )
    names.push(index.get(parent)!.name)
  return names
}
/** The server's HTTP span ends after the response is written, so a moment after the client has it. */
async function spansOf(traceId: string, until: (s: ReadableSpan[]) => boolean) {
  const deadline = Date.now() + 5000
  for (;;) {
    const mine = spans().filter((s) => s.spanContext().traceId === traceId)
    if (until(mine) || Date.now() > deadline) return mine
    await sleep(20)
  }
}

t.test(
  "one request's spans, HTTP to service to pg, carry the trace id its response and problem body quote",
  async (t) => {
    const missing = await server.request('GET', '/api/v1/records/00000000-0000-4000-8000-000000000000')
    t.equal(missing.status, 404)
    const traceId = missing.headers.get('x-trace-id')!
    t.match(traceId, /^[\da-f]{32}$/)
    t.equal(missing.body.traceId, traceId, 'the problem body quotes the same trace')
    const mine = await spansOf(traceId, (s) =>
      s.some((x) => x.instrumentationScope.name === '@opentelemetry/instrumentation-http')
    )
    const http = mine.find((s) => s.instrumentationScope.name === '@opentelemetry/instrumentation-http')
    t.ok(http, 'the HTTP server span')
    t.equal(http?.parentSpanContext, undefined, 'the HTTP span is the root of its trace')
    t.equal(http?.attributes['http.response.status_code'] ?? http?.attributes['http.status_code'], 404)
    const index = byId()
    const service = mine.find((s) => s.name === 'records.get')
    t.ok(service, 'the service call span')
    t.same(service?.attributes, {
      'feathers.service': 'api/v1/records',
      'feathers.method': 'get',
      'feathers.provider': 'rest',
      tenant: 'acme'
    })
    t.equal(lineage(service!, index).at(-1), http?.name, 'the service span is under the HTTP span')
    const statement = mine.find(
      (s) =>
        s.instrumentationScope.name === '@opentelemetry/instrumentation-pg' &&
        s.name.startsWith('pg.query') &&
        lineage(s, index).includes('records.get')
    )
    t.ok(statement, 'a pg statement under the service span')
    t.equal(lineage(statement!, index).at(-1), http?.name, '... and so under the HTTP span')
    t.ok(
      mine.some((s) => s.instrumentationScope.name === '@opentelemetry/instrumentation-koa'),
      'Koa middleware spans'
    )
    t.notOk(
      spans().some((s) => s.spanContext().traceId !== traceId && lineage(s, index).includes('records.get')),
      'no span of the call in another trace'
    )
  }
)

t.test('an incoming W3C traceparent is honoured: the request joins that trace', async (t) => {
  const parentTrace = '4bf92f3577b34da6a3ce929d0e0e4736'
  const parentSpan = '00f067aa0ba902b7'
  const listed = await server.request('GET', '/api/v1/records?moduleKey=incident', {
    headers: { traceparent: `00-${parentTrace}-${parentSpan}-01` }
  })
  t.equal(listed.status, 200)
  t.equal(listed.headers.get('x-trace-id'), parentTrace)
  const mine = await spansOf(parentTrace, (s) =>
    s.some((x) => x.instrumentationScope.name === '@opentelemetry/instrumentation-http')
  )
  const http = mine.find((s) => s.instrumentationScope.name === '@opentelemetry/instrumentation-http')
  t.equal(http?.parentSpanContext?.spanId, parentSpan, "the HTTP span's parent is the caller's span")
  t.ok(
    mine.some((s) => s.name === 'records.find'),
    'the service call is in the same trace'
  )

  const refused = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: { title: 7 } },
    headers: { traceparent: `00-${parentTrace}-${parentSpan}-01` }
  })
  t.equal(refused.status, 400)
  t.equal(refused.body.traceId, parentTrace, "a problem body quotes the caller's trace")
})

t.test('an export job runs in a trace of its own, linked to the request that started it', async (t) => {
  const made = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload() }
  })
  t.equal(made.status, 201)
  const created = await server.request('POST', '/api/v1/exports', { body: { moduleKey: 'incident', format: 'csv' } })
  t.equal(created.status, 202)
  const requestTrace = created.headers.get('x-trace-id')!
  const deadline = Date.now() + 20_000
  let status = created.body.status
  while (!['succeeded', 'failed'].includes(status) && Date.now() < deadline) {
    await sleep(100)
    status = (await server.request('GET', `/api/v1/exports/${created.body.id}`)).body.status
  }
  t.equal(status, 'succeeded')
  let job: ReadableSpan | undefined
  while (!job && Date.now() < deadline) {
    job = spans().find(
      (s) => s.name === 'job exports.render' && s.links.some((l) => l.context.traceId === requestTrace)
    )
    if (!job) await sleep(20)
  }
  t.ok(job, 'the job span links to the request')
  t.not(job?.spanContext().traceId, requestTrace, 'in a trace of its own')
  t.equal(job?.parentSpanContext, undefined, 'as its root')
  t.equal(job?.attributes['job.name'], 'exports.render')
  const linked = job!.links[0].context
  const enqueuer = spans().find((s) => s.spanContext().spanId === linked.spanId)
  t.equal(enqueuer?.name, 'exports.create', 'the link names the service call that enqueued it')
  const index = byId()
  t.ok(
    spans().some(
      (s) =>
        s.instrumentationScope.name === '@opentelemetry/instrumentation-pg' &&
        lineage(s, index).includes('job exports.render')
    ),
    "the job's statements are under its span"
  )
})

t.test('bulk batches, GraphQL operations, SCIM calls and webhook deliveries are spans', async (t) => {
  const subscribed = await server.request('POST', '/api/v1/webhooks', {
    body: { url: receiver.url, kinds: ['record.created'] }
  })
  t.equal(subscribed.status, 201)

  const bulk = await bulkCall(
    server.url,
    '/api/modules/incident/bulk',
    server.keys.acme,
    ndjson([{ payload: incidentPayload({ title: 'Bulk one' }) }, { payload: incidentPayload({ title: 'Bulk two' }) }])
  )
  t.equal(bulk.status, 200)
  const bulkTrace = bulk.headers.get('x-trace-id')!
  const batch = (await spansOf(bulkTrace, (s) => s.some((x) => x.name === 'bulk.batch'))).find(
    (s) => s.name === 'bulk.batch'
  )
  t.match(
    batch?.attributes,
    { 'bulk.rows': 2, 'bulk.creates_only': true, 'bulk.dry_run': false },
    'a bulk batch in the bulk request'
  )
  const index = byId()
  t.ok(lineage(batch!, index).includes('modules/:moduleKey/bulk.create'), '... under the bulk service call')
  t.ok(
    spans().some((s) => s.name.startsWith('pg.query') && lineage(s, index).includes('bulk.batch')),
    "the batch's statements under it"
  )

  const gql = await server.request('POST', '/api/graphql', {
    body: { query: 'query FirstIncidents { incidents(first: 2) { nodes { id } } }' }
  })
  t.equal(gql.status, 200)
  const operation = (
    await spansOf(gql.headers.get('x-trace-id')!, (s) => s.some((x) => x.name.startsWith('graphql')))
  ).find((s) => s.name.startsWith('graphql'))
  t.equal(operation?.name, 'graphql query FirstIncidents')
  t.match(operation?.attributes, { 'graphql.operation.type': 'query', 'graphql.operation.name': 'FirstIncidents' })
  t.ok(
    spans().some((s) => s.name === 'records.find' && lineage(s, byId()).includes('graphql query FirstIncidents')),
    'the service calls its resolvers made are under it'
  )

  const scimCall = scim(server, await scimToken(server, 'acme'))
  const listed = await scimCall('GET', '/Users?count=1')
  t.equal(listed.status, 200)
  const scimSpans = await spansOf(
    listed.headers.get('x-trace-id')!,
    (s) => s.some((x) => x.name === 'scim GET Users') && s.some((x) => x.name === 'scim/v2/Users.find')
  )
  const scimSpan = scimSpans.find((s) => s.name === 'scim GET Users')
  t.ok(scimSpan, 'the SCIM call')
  t.ok(
    lineage(
      scimSpans.find((s) => s.name === 'scim/v2/Users.find')!,
      byId()
    ).includes('scim GET Users'),
    '... its service call under it'
  )

  await receiver.waitFor(2)
  const deadline = Date.now() + 5000
  let delivery: ReadableSpan | undefined
  while (!delivery && Date.now() < deadline) {
    delivery = spans().find((s) => s.name === 'webhook.deliver' && s.attributes['webhook.succeeded'] === true)
    if (!delivery) await sleep(20)
  }
  t.match(
    delivery?.attributes,
    {
      tenant: 'acme',
      'webhook.subscription': subscribed.body.id,
      'webhook.event_type': 'record.created',
      'webhook.attempt': 1
    },
    'a webhook delivery'
  )
  t.equal(delivery?.parentSpanContext, undefined, 'a trace of its own')
  const post = spans().find(
    (s) =>
      s.instrumentationScope.name === '@opentelemetry/instrumentation-http' &&
      s.parentSpanContext?.spanId === delivery?.spanContext().spanId
  )
  t.equal(
    post?.attributes['http.request.method'] ?? post?.attributes['http.method'],
    'POST',
    "the receiver's request under it"
  )
})
