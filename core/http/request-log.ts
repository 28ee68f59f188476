import type { Middleware } from 'koa'
import type { Principal } from '../auth/principal.ts'
import { logger, type Level } from '../logger.ts'
import { routeTemplate } from './route-template.ts'
import { countRequest } from '../telemetry/http-metrics.ts'
import type { Metrics } from '../telemetry/metrics.ts'

/**
 * What every finished request leaves behind, measured once when its response has ended (or
 * the client left): its count and latency in the metrics (core/telemetry/http-metrics.ts), and
 * one log line: tenant, credential id (never the token), route template (never the path sent:
 * it may hold ids, and a signed URL's signature), method, status, latency, bytes written to the
 * connection (headers included) and the trace id. First in the chain, so it sees the status
 * every later middleware settled on, problem responses included. The route template (a router
 * lookup) is read once for both.
 */
export const requestEnd =
  (level: Level, metrics: Metrics): Middleware =>
  (ctx, next) => {
    const started = performance.now()
    const socket = ctx.req.socket
    const bytesBefore = socket.bytesWritten
    ctx.res.once('close', () => {
      const ms = performance.now() - started
      const route = routeTemplate(ctx, ctx.res.statusCode)
      countRequest(metrics, ctx, route, ms / 1000)
      if (level === 'silent' || !logger.enabled(level)) return
      const principal = ctx.state.principal as Principal | undefined
      logger.log(level, 'request', {
        method: ctx.method,
        route,
        status: ctx.status,
        ms: Math.round(ms * 10) / 10,
        bytes: socket.bytesWritten - bytesBefore,
        tenant: principal?.tenantId,
        credentialId: principal?.credentialId,
        credentialKind: principal?.kind,
        traceId: ctx.state.traceId,
        ...(ctx.res.writableFinished ? {} : { aborted: true })
      })
    })
    return next()
  }
