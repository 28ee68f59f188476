import type { Middleware } from 'koa'
import type { Principal } from '../auth/principal.ts'
import { logger, type Level } from '../logger.ts'
import { routeTemplate } from './route-template.ts'

/**
 * One log line per request, written when its response has ended (or the client left):
 * tenant, credential id (never the token), route template (never the path sent: it may
 * hold ids, and a signed URL's signature), method, status, latency, bytes written to the
 * connection (headers included) and the trace id. First in the chain, so it sees the
 * status every later middleware settled on, problem responses included.
 */
export const requestLog = (level: Level): Middleware => {
  if (level === 'silent') return (_ctx, next) => next()
  return async (ctx, next) => {
    const started = performance.now()
    const socket = ctx.req.socket
    const bytesBefore = socket.bytesWritten
    ctx.res.once('close', () => {
      if (!logger.enabled(level)) return
      const principal = ctx.state.principal as Principal | undefined
      logger.log(level, 'request', {
        method: ctx.method,
        route: routeTemplate(ctx),
        status: ctx.status,
        ms: Math.round((performance.now() - started) * 10) / 10,
        bytes: socket.bytesWritten - bytesBefore,
        tenant: principal?.tenantId,
        credentialId: principal?.credentialId,
        credentialKind: principal?.kind,
        traceId: ctx.state.traceId,
        ...(ctx.res.writableFinished ? {} : { aborted: true })
      })
    })
    await next()
  }
}
