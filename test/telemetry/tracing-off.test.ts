// tap: own process (it records every module the process loads, from before the app is imported)
import { registerHooks } from 'node:module'

// Every module resolved from here on, by import or require (the hooks see both).
const loaded = new Set<string>()
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context)
    loaded.add(resolved.url)
    return resolved
  }
})
delete process.env.OTEL_TRACES_EXPORTER

const { default: t } = await import('../helpers/tap.ts')
const { instrumentationsWanted, startTracing, tracingRequested } = await import('../../core/telemetry/start.ts')
const { tracingEnabled, currentTraceId, traceContextForJob } = await import('../../core/telemetry/tracing.ts')

t.test('tracing is asked for by OTEL_TRACES_EXPORTER naming an exporter, and OTEL_SDK_DISABLED wins', async (t) => {
  t.equal(tracingRequested({}), false, 'off by default')
  t.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'none' }), false)
  t.equal(tracingRequested({ OTEL_TRACES_EXPORTER: '' }), false)
  t.equal(
    tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }),
    false,
    'an endpoint alone does not turn it on'
  )
  t.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp' }), true)
  t.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'console, otlp' }), true)
  t.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }), false)
  t.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'false' }), true)
})

t.test(
  'the instrumentations follow OTEL_NODE_ENABLED_INSTRUMENTATIONS and OTEL_NODE_DISABLED_INSTRUMENTATIONS',
  async (t) => {
    const all = ['http', 'koa', 'pg']
    t.same(instrumentationsWanted(all, {}), all, 'all by default')
    t.same(instrumentationsWanted(all, { OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'koa' }), ['http', 'pg'])
    t.same(instrumentationsWanted(all, { OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'http, PG' }), ['http', 'pg'])
    t.same(
      instrumentationsWanted(all, {
        OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'http,pg',
        OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'pg'
      }),
      ['http']
    )
  }
)

t.test(
  'with tracing off no OpenTelemetry SDK or instrumentation module is loaded, and requests keep their own trace ids',
  async (t) => {
    // What bin/server.ts does first.
    t.equal(await startTracing(), false)
    t.equal(tracingEnabled(), false)
    const { startTestServer } = await import('../helpers/server.ts')
    const server = await startTestServer({ jobs: { enabled: true, processEverySeconds: 1 } })
    t.teardown(async () => {
      await server.close()
      // Agenda leaves a referenced timer behind (see test/idempotency/purge-job.test.ts).
      setTimeout(() => process.exit(), 200).unref()
    })
    const listed = await server.request('GET', '/api/v1/records?moduleKey=incident')
    t.equal(listed.status, 200)
    t.match(listed.headers.get('x-trace-id'), /^[\da-f]{32}$/)
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
    const missing = await server.request('GET', '/api/v1/records/00000000-0000-4000-8000-000000000000', {
      headers: { traceparent }
    })
    t.equal(
      missing.headers.get('x-trace-id'),
      '4bf92f3577b34da6a3ce929d0e0e4736',
      "the caller's trace id, as before tracing existed"
    )
    t.equal(missing.body.traceId, '4bf92f3577b34da6a3ce929d0e0e4736')
    const exported = await server.request('POST', '/api/v1/exports', { body: { moduleKey: 'incident', format: 'csv' } })
    t.equal(exported.status, 202)
    t.equal(currentTraceId(), undefined)
    t.equal(traceContextForJob(), undefined)

    const urls = [...loaded]
    // The probe sees the app's modules, CJS ones required from ESM included: its silence below means something.
    t.ok(
      urls.some((u) => u.includes('/node_modules/pg/lib/')),
      'the probe saw pg load'
    )
    t.ok(
      urls.some((u) => u.includes('/node_modules/koa/lib/')),
      '... and koa'
    )
    t.ok(
      urls.some((u) => u.includes('/node_modules/agenda/')),
      '... and the job scheduler'
    )
    // @opentelemetry/api alone may load: prom-client reads it for exemplars. Nothing else of OpenTelemetry.
    const otel = urls.filter(
      (u) => u.includes('/node_modules/@opentelemetry/') && !u.includes('/node_modules/@opentelemetry/api/')
    )
    t.same(otel, [], 'no SDK, exporter or instrumentation module')
    t.notOk(
      urls.some(
        (u) => u.includes('/node_modules/require-in-the-middle/') || u.includes('/node_modules/import-in-the-middle/')
      ),
      'no module hooks'
    )
  }
)
