import { randomUUID } from 'node:crypto'
import type { Middleware } from 'koa'
import { currentTraceId, parseTraceparent } from '../telemetry/tracing.ts'

/**
 * Gives every request a trace id, echoed as X-Trace-Id and quoted by its problem bodies. With
 * tracing on it is the active trace's (the HTTP instrumentation has already honoured a W3C
 * traceparent); off, it is the traceparent's trace id when one came, else a new one.
 */
export const traceId = (): Middleware => (ctx, next) => {
  const id = requestTraceId(ctx.get('traceparent'))
  ctx.state.traceId = id
  ctx.set('X-Trace-Id', id)
  ctx.feathers = { ...ctx.feathers, traceId: id } as typeof ctx.feathers
  return next()
}

/** The trace id of the request being handled (see traceId above), for answers given before that middleware runs (probes). */
export function requestTraceId(traceparentHeader: string): string {
  const active = currentTraceId()
  if (active) return active
  return parseTraceparent(traceparentHeader)?.traceId ?? randomUUID().replace(/-/g, '')
}
