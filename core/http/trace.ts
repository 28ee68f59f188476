import { randomUUID } from 'node:crypto'
import type { Middleware } from 'koa'

const traceparent = /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/

/** Gives every request a trace id (from a W3C traceparent when present), echoed as X-Trace-Id. */
export const traceId = (): Middleware => async (ctx, next) => {
  const incoming = ctx.get('traceparent').match(traceparent)?.[1]
  const id = incoming && !/^0+$/.test(incoming) ? incoming : randomUUID().replace(/-/g, '')
  ctx.state.traceId = id
  ctx.set('X-Trace-Id', id)
  ctx.feathers = { ...ctx.feathers, traceId: id } as typeof ctx.feathers
  await next()
}
