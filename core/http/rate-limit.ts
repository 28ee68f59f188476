import type { Middleware } from 'koa'
import type { Principal } from '../auth/principal.ts'
import { ApiError } from '../errors/index.ts'
import type { Limiter } from '../limits/limiter.ts'
import { logger } from '../logger.ts'

export const windowMs = 60_000

/**
 * Requests per credential per sliding minute, on every route. Calls without a valid
 * credential are counted per client address. Every response carries X-RateLimit-Limit,
 * -Remaining and -Reset (epoch seconds when one more request will be allowed); a 429
 * adds Retry-After. If the shared store (Redis) fails, requests are let through and
 * the failure logged: limits protect the service, they must not take it down.
 */
export const rateLimit = (limiter: Limiter, limitFor: (principal: Principal | undefined) => number): Middleware => {
  let lastWarning = 0
  return async (ctx, next) => {
    const principal: Principal | undefined = ctx.state.authError ? undefined : ctx.state.principal
    const key = principal ? `req:${principal.tenantId}:${principal.credentialId}` : `req:addr:${ctx.ip}`
    const limit = limitFor(principal)
    let result
    try {
      result = await limiter.hit(key, limit, windowMs)
    } catch (err) {
      if (Date.now() - lastWarning > 10_000) {
        lastWarning = Date.now()
        logger.warn('rate limiter unavailable; letting requests through', { error: (err as Error).message })
      }
      return next()
    }
    const headers: Record<string, string> = {
      'X-RateLimit-Limit': String(limit),
      'X-RateLimit-Remaining': String(result.remaining),
      'X-RateLimit-Reset': String(Math.ceil(result.resetAt / 1000))
    }
    ctx.set(headers)
    if (!result.allowed) {
      const retryAfter = Math.max(1, Math.ceil(result.retryAfterMs / 1000))
      throw new ApiError(
        'rate-limited',
        'rate_limit.exceeded',
        `This credential made ${limit} requests in the last minute, its limit. The next request will be accepted at ${new Date(result.resetAt).toISOString()} (in ${retryAfter} s).`,
        { limit, resetAt: new Date(result.resetAt).toISOString() },
        { ...headers, 'Retry-After': String(retryAfter) }
      )
    }
    await next()
  }
}
