import { randomFillSync } from 'node:crypto'
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
  return parseTraceparent(traceparentHeader)?.traceId ?? newTraceId()
}

const idPool = Buffer.alloc(16 * 256)
let idAt = idPool.length

/**
 * A new trace id: 16 random bytes as 32 hex digits (W3C trace context). Taken from a pool filled
 * 256 ids at a time, as randomUUID caches its own; 0.2-0.6 µs against 1.6-3 µs for a UUID with its
 * dashes taken out (measured), on every request that comes without a traceparent.
 */
export function newTraceId(): string {
  if (idAt === idPool.length) {
    randomFillSync(idPool)
    idAt = 0
  }
  const id = idPool.toString('hex', idAt, idAt + 16)
  idAt += 16
  return id
}
