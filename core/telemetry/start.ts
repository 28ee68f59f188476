// Starts the OpenTelemetry SDK when the environment asks for traces. It must run before koa, pg and
// http are first loaded (bin/server.ts imports the app only after it): the instrumentations patch
// those modules as they are required. With tracing off nothing of OpenTelemetry is imported.
import type { SpanProcessor } from '@opentelemetry/sdk-trace'
import { logger } from '../logger.ts'
import { installTracing } from './tracing.ts'

const exporters = new Set(['otlp', 'console', 'zipkin'])

/**
 * Tracing is on when `OTEL_TRACES_EXPORTER` names an exporter (otlp, console, zipkin) and
 * `OTEL_SDK_DISABLED` is not true. Unset, or `none`, it is off: the SDK's own default (otlp to
 * localhost) would have every instance without a collector retry exports forever.
 */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false
  return (env.OTEL_TRACES_EXPORTER ?? '').split(',').some((name) => exporters.has(name.trim().toLowerCase()))
}

/**
 * The instrumentations to load, by the variables auto-instrumentations-node reads:
 * `OTEL_NODE_ENABLED_INSTRUMENTATIONS` (only these) and `OTEL_NODE_DISABLED_INSTRUMENTATIONS`
 * (not these), comma-separated names among `all`; all of them by default.
 */
export function instrumentationsWanted(all: string[], env: NodeJS.ProcessEnv = process.env): string[] {
  const list = (value: string | undefined) =>
    (value ?? '')
      .split(',')
      .map((n) => n.trim().toLowerCase())
      .filter(Boolean)
  const enabled = list(env.OTEL_NODE_ENABLED_INSTRUMENTATIONS)
  const disabled = new Set(list(env.OTEL_NODE_DISABLED_INSTRUMENTATIONS))
  return all.filter((name) => (!enabled.length || enabled.includes(name)) && !disabled.has(name))
}

export interface TracingOptions {
  /** Replaces the exporters `OTEL_TRACES_EXPORTER` names (tests and the bench use an in-memory one). */
  spanProcessors?: SpanProcessor[]
}

/**
 * Starts the SDK with the HTTP, Koa and pg instrumentations and hands core/telemetry/tracing.ts
 * its tracer. Without `options.spanProcessors` it starts only when `tracingRequested()`;
 * exporters, sampler, propagators and resource come from the standard `OTEL_*` variables.
 */
export async function startTracing(options: TracingOptions = {}): Promise<boolean> {
  if (!options.spanProcessors && !tracingRequested()) return false
  const [api, { NodeSDK }, { HttpInstrumentation }, { KoaInstrumentation }, { PgInstrumentation }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-koa'),
    import('@opentelemetry/instrumentation-pg')
  ])
  // The SDK's diagnostics go through the JSON log, not console lines.
  const level =
    api.DiagLogLevel[(process.env.OTEL_LOG_LEVEL ?? 'WARN').toUpperCase() as keyof typeof api.DiagLogLevel] ??
    api.DiagLogLevel.WARN
  const diag =
    (write: (msg: string, fields?: Record<string, unknown>) => void) =>
    (message: string, ...args: unknown[]) =>
      write(`opentelemetry: ${message}`, args.length ? { detail: args.map(String) } : undefined)
  api.diag.setLogger(
    {
      error: diag(logger.error),
      warn: diag(logger.warn),
      info: diag(logger.info),
      debug: diag(logger.debug),
      verbose: diag(logger.debug)
    },
    level
  )
  const instrumentations = {
    // Outgoing calls (webhook deliveries, S3, OIDC) only inside a traced operation, as pg statements below.
    http: () => new HttpInstrumentation({ requireParentforOutgoingSpans: true }),
    // A span per middleware (two dozen a request): the most of tracing's cost, see README "Tracing".
    koa: () => new KoaInstrumentation(),
    // A span per statement, without its values, inside a traced operation: the job scheduler's
    // polls and the LISTEN connections would otherwise be a trace per statement.
    pg: () => new PgInstrumentation({ enhancedDatabaseReporting: false, requireParentSpan: true })
  }
  const wanted = instrumentationsWanted(Object.keys(instrumentations))
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME ?? 'records',
    instrumentations: wanted.map((name) => instrumentations[name as keyof typeof instrumentations]()),
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
    // Metrics are prom-client's (core/telemetry/metrics.ts), logs are pino's: the SDK starts neither.
    metricReaders: [],
    logRecordProcessors: []
  })
  sdk.start()
  installTracing(api.trace.getTracer('records'), api, () => sdk.shutdown())
  logger.info('tracing started', {
    exporter: options.spanProcessors ? 'custom' : process.env.OTEL_TRACES_EXPORTER,
    instrumentations: wanted
  })
  return true
}
