import type { Middleware } from 'koa'
import { toProblem, problems } from '../errors/index.ts'
import { logger } from '../logger.ts'

/**
 * The outermost middleware: renders every error, from any layer, as
 * application/problem+json, and turns an unmatched route into a 404 problem.
 */
export const problemResponses = (errorsUrl: () => string): Middleware => async (ctx, next) => {
  try {
    await next()
    if (ctx.status === 404 && ctx.body === undefined) {
      throw problems.notFound('route.not_found', `No route ${ctx.method} ${ctx.path}. See /api/docs/spec.json for the routes this service offers.`)
    }
  } catch (err) {
    const traceId: string = ctx.state.traceId ?? 'unknown'
    const { body, headers, internal } = toProblem(err, traceId, errorsUrl())
    if (internal) logger.error('request failed', { traceId, method: ctx.method, path: ctx.path, error: (err as Error)?.stack ?? String(err) })
    ctx.status = body.status
    ctx.set(headers)
    ctx.set('X-Trace-Id', traceId)
    ctx.type = 'application/problem+json'
    ctx.body = body
  }
}
