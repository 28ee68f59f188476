import type { ParameterizedContext } from 'koa'
import { logger } from '../logger.ts'

/** Codes of a connection the client closed before the response ended (aborted download, closed tab). */
const abortCodes = new Set(['ERR_STREAM_PREMATURE_CLOSE', 'ECONNRESET', 'EPIPE', 'ECONNABORTED'])

/** Whether an error only says that the client went away mid-response. */
export function isClientAbort(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null
  return !!e && ((typeof e.code === 'string' && abortCodes.has(e.code)) || e.message === 'aborted')
}

/**
 * The app's 'error' listener, in place of Koa's default, which prints stack traces to
 * stderr among the JSON log lines. Koa emits 'error' for what happens after a response
 * has started (a streamed body that breaks, a socket that fails); everything before is a
 * problem response (core/http/problem.ts). A client that leaves mid-download is routine:
 * debug. Anything else is a JSON error line.
 */
export function logAppError(err: unknown, ctx?: ParameterizedContext) {
  const request = ctx ? { traceId: ctx.state?.traceId, method: ctx.method, path: ctx.path } : {}
  const e = err as { code?: unknown; status?: unknown; expose?: unknown; stack?: unknown } | null
  if (isClientAbort(err))
    return logger.debug('client closed the connection before the response ended', {
      ...request,
      code: e?.code ?? 'aborted'
    })
  // As Koa's default: a 404 or an error meant for the client is not the server's fault.
  if (e?.status === 404 || e?.expose) return logger.debug('response error', { ...request, error: String(err) })
  logger.error('response failed', { ...request, error: typeof e?.stack === 'string' ? e.stack : String(err) })
}
