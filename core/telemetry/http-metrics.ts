import type { ParameterizedContext } from 'koa'
import type { Metrics } from './metrics.ts'

/** The status of a request whose client went away before any response was sent (nginx's convention). */
export const clientClosedStatus = '499'

/**
 * Counts one finished request and its time to the last byte of the response (streamed bodies
 * included), by method, route template and status; a 429 also by its problem code
 * (`ctx.state.problemCode`, set where problems are rendered). Called by the request-end
 * middleware (core/http/request-log.ts), outside the problem renderer, so the status is the one sent.
 */
export function countRequest(metrics: Metrics, ctx: ParameterizedContext, route: string, seconds: number): void {
  const status = ctx.res.headersSent ? String(ctx.res.statusCode) : clientClosedStatus
  const labels = { method: ctx.method, route, status }
  metrics.httpRequests.inc(labels)
  metrics.httpDuration.observe(labels, seconds)
  if (status === '429')
    metrics.rateLimitRefusals.inc({
      code: typeof ctx.state.problemCode === 'string' ? ctx.state.problemCode : 'unknown'
    })
}
