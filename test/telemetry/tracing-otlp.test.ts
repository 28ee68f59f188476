// tap: own process (it sets OTEL_* variables in its environment for the instance it starts)
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t from '../helpers/tap.ts'
import { cluster } from '../instances/instances.ts'

// A collector: what OTLP/HTTP JSON posts to /v1/traces.
const posts: Array<{ path: string; body: any }> = []
const collector = http.createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (c) => chunks.push(c))
  req.on('end', () => {
    posts.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') })
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
  })
})
await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve))
t.teardown(() => new Promise<void>((resolve) => collector.close(() => resolve())))

// As an operator turns tracing on; the batch is held for ten minutes, so spans that arrive were sent at shutdown.
Object.assign(process.env, {
  OTEL_TRACES_EXPORTER: 'otlp',
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
  OTEL_SERVICE_NAME: 'records-under-test',
  OTEL_BSP_SCHEDULE_DELAY: '600000'
})
const c = await cluster({ tenants: { acme: { name: 'Acme Chemicals', modules: ['incident'] } } })
t.teardown(() => c.close())

t.test(
  'an instance started with OTEL_TRACES_EXPORTER=otlp sends its spans over OTLP, the last ones at shutdown',
  async (t) => {
    const a = await c.start('a')
    t.ok(await a.waitForLine((l) => l.json?.msg === 'tracing started'), 'tracing started')
    const { token } = await c.key('acme')
    const missing = await a.request('GET', '/api/v1/records/00000000-0000-4000-8000-000000000000', { token })
    t.equal(missing.status, 404)
    const traceId = missing.headers.get('x-trace-id')
    t.equal(missing.body.traceId, traceId)
    t.same(posts, [], 'nothing sent before the batch is due')
    a.process.kill('SIGTERM')
    t.equal(await a.exited, 0)
    const spans = posts
      .filter((p) => p.path === '/v1/traces')
      .flatMap((p) =>
        p.body.resourceSpans.flatMap((r: any) =>
          r.scopeSpans.flatMap((s: any) =>
            s.spans.map((span: any) => ({ ...span, resource: r.resource, scope: s.scope.name }))
          )
        )
      )
    const mine = spans.filter((s) => s.traceId === traceId)
    t.ok(
      mine.some((s) => s.scope === '@opentelemetry/instrumentation-http'),
      "the request's HTTP span"
    )
    t.ok(
      mine.some((s) => s.name === 'records.get'),
      'its service call'
    )
    t.ok(
      mine.some((s) => s.scope === '@opentelemetry/instrumentation-pg'),
      'its statements'
    )
    const service = mine[0]?.resource.attributes.find((a: any) => a.key === 'service.name')?.value.stringValue
    t.equal(service, 'records-under-test', 'the resource from OTEL_SERVICE_NAME')
  }
)
