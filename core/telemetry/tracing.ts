// The one door to tracing for core and plugins. Nothing here imports OpenTelemetry at run time:
// core/telemetry/start.ts loads the SDK only when tracing is asked for and then hands this module
// its tracer, so with tracing off `span` is one branch and a call, and no OpenTelemetry module loads.
import type { Link, Span, SpanContext, Tracer } from '@opentelemetry/api'
import type * as Api from '@opentelemetry/api'

export type { Span }
export type SpanAttributes = Record<string, string | number | boolean | undefined>

interface Installed {
  tracer: Tracer
  api: typeof Api
  shutdown: () => Promise<void>
}

let installed: Installed | undefined

const invalidContext: SpanContext = Object.freeze({
  traceId: '00000000000000000000000000000000',
  spanId: '0000000000000000',
  traceFlags: 0
})

/** What `fn` receives when tracing is off: one shared span that records nothing. */
const noSpan: Span = Object.freeze({
  spanContext: () => invalidContext,
  setAttribute() {
    return noSpan
  },
  setAttributes() {
    return noSpan
  },
  addEvent() {
    return noSpan
  },
  addLink() {
    return noSpan
  },
  addLinks() {
    return noSpan
  },
  setStatus() {
    return noSpan
  },
  updateName() {
    return noSpan
  },
  end() {},
  isRecording: () => false,
  recordException() {}
})

/** Called once by core/telemetry/start.ts after the SDK started; before it, and without it, tracing is off. */
export function installTracing(tracer: Tracer, api: typeof Api, shutdown: () => Promise<void>): void {
  installed = { tracer, api, shutdown }
}

/** Exports the spans still buffered and stops the SDK (at shutdown), waiting `timeoutMs` at most; nothing when tracing is off. */
export async function stopTracing(timeoutMs = 2000): Promise<void> {
  const stopping = installed
  if (!stopping) return
  installed = undefined
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs).unref()))
  await Promise.race([stopping.shutdown().catch(() => undefined), late])
  clearTimeout(timer)
}

/** Whether spans are recorded in this process. */
export function tracingEnabled(): boolean {
  return installed !== undefined
}

export interface SpanOptions {
  /** Other traces this work belongs to (a job links to the request that enqueued it). */
  links?: Link[]
  /** Starts a new trace instead of a child of the active span. */
  root?: boolean
}

/**
 * Runs `fn` inside a new active child span named `name` (a failure marks the span as an error and
 * is rethrown); with tracing off it only calls `fn`.
 */
export function span<T>(
  name: string,
  attributes: SpanAttributes,
  fn: (span: Span) => Promise<T>,
  options?: SpanOptions
): Promise<T> {
  if (installed === undefined) return fn(noSpan)
  const { tracer, api } = installed
  const attrs: Api.Attributes = {}
  for (const key in attributes) if (attributes[key] !== undefined) attrs[key] = attributes[key]
  return tracer.startActiveSpan(name, { attributes: attrs, links: options?.links, root: options?.root }, async (s) => {
    try {
      return await fn(s)
    } catch (err) {
      s.recordException(err as Error)
      s.setStatus({ code: api.SpanStatusCode.ERROR, message: (err as Error)?.message })
      throw err
    } finally {
      s.end()
    }
  })
}

/** The active trace's id (32 hex digits), or undefined when tracing is off or no span is active. */
export function currentTraceId(): string | undefined {
  if (installed === undefined) return undefined
  const context = installed.api.trace.getActiveSpan()?.spanContext()
  return context && installed.api.isSpanContextValid(context) ? context.traceId : undefined
}

/** The active span as a W3C `traceparent`, to carry in a job's data; undefined when tracing is off. */
export function traceContextForJob(): string | undefined {
  if (installed === undefined) return undefined
  const context = installed.api.trace.getActiveSpan()?.spanContext()
  if (!context || !installed.api.isSpanContextValid(context)) return undefined
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, '0')}`
}

const traceparentPattern = /^([\da-f]{2})-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/

/**
 * The one reading of a W3C `traceparent` (an incoming header, or one a job carries): its trace id,
 * span id and flags, or undefined when malformed, of the forbidden version `ff`, or naming an
 * all-zero trace or span.
 */
export function parseTraceparent(header: unknown): { traceId: string; spanId: string; traceFlags: number } | undefined {
  if (typeof header !== 'string') return undefined
  const m = traceparentPattern.exec(header)
  if (!m || m[1] === 'ff' || /^0+$/.test(m[2]) || /^0+$/.test(m[3])) return undefined
  return { traceId: m[2], spanId: m[3], traceFlags: parseInt(m[4], 16) }
}

/** A link to the span a `traceparent` names (from `traceContextForJob`); none when tracing is off or it is malformed. */
export function linkFrom(traceparent: unknown): Link[] | undefined {
  if (installed === undefined) return undefined
  const parsed = parseTraceparent(traceparent)
  if (!parsed) return undefined
  const context: SpanContext = { ...parsed, isRemote: true }
  return installed.api.isSpanContextValid(context) ? [{ context }] : undefined
}
