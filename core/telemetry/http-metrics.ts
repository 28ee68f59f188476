import type { Middleware } from 'koa'
import { routeTemplate } from '../http/route-template.ts'
import type { Metrics } from './metrics.ts'

/** The status of a request whose client went away before any response was sent (nginx's convention). */
export const clientClosedStatus = '499'

/**
 * Counts every request and its time to the last byte of the response (streamed bodies
 * included), by method, route template (core/http/route-template.ts, read once the request
 * is over: paths are rewritten on the way in) and status; a 429 also by its problem code
 * (`ctx.state.problemCode`, set where problems are rendered). Placed outside the problem
 * renderer so the status is the one sent.
 */
export const httpMetrics = (metrics: Metrics): Middleware => async (ctx, next) => {
  const started = performance.now()
  ctx.res.once('close', () => {
    const status = ctx.res.headersSent ? String(ctx.res.statusCode) : clientClosedStatus
    const labels = { method: ctx.method, route: routeTemplate(ctx, ctx.res.statusCode), status }
    metrics.httpRequests.inc(labels)
    metrics.httpDuration.observe(labels, (performance.now() - started) / 1000)
    if (status === '429') metrics.rateLimitRefusals.inc({ code: typeof ctx.state.problemCode === 'string' ? ctx.state.problemCode : 'unknown' })
  })
  await next()
}
