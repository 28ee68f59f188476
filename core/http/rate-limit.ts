import type { Middleware } from 'koa'
import type { Principal } from '../auth/principal.ts'
import { ApiError } from '../errors/index.ts'
import { Budget, withBudget } from '../limits/budget.ts'
import type { Limiter, WindowResult } from '../limits/limiter.ts'
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
    if (!result.allowed) throw refused(limit, result, headers)
    // An expensive request counts as more than one (core/limits/budget.ts): refused like any other when it does not fit.
    ctx.state.countRequests = countingMore(limiter, key, limit, headers)
    try {
      await next()
    } finally {
      // What the request was counted as in the end (the headers are gone already when a streamed answer settles late).
      if (headers['X-RateLimit-Remaining'] !== String(result.remaining)) ctx.set(headers)
    }
  }
}

/**
 * Counts `extra` more requests for the request's key and keeps its X-RateLimit headers current in `headers`,
 * which the middleware sets on the response once the request's work is done. Made here, away from the
 * middleware's scope, so that it holds no request context: the request's budget keeps it, and the budget is
 * reachable from the async context of everything the request started, some of it long after the request. When
 * this function held the Koa context (to set the headers itself), the answers lived on with it: under the list
 * benchmark's load the service promoted ~50 KB a page to the old generation (under 1 KB without) and spent four
 * times as long in young-generation collections (bench/README.md, issue 27).
 */
function countingMore(
  limiter: Limiter,
  key: string,
  limit: number,
  headers: Record<string, string>
): (extra: number) => Promise<void> {
  return async (extra) => {
    const more = await limiter.hit(key, limit, windowMs, extra)
    headers['X-RateLimit-Remaining'] = String(more.remaining)
    headers['X-RateLimit-Reset'] = String(Math.ceil(more.resetAt / 1000))
    if (!more.allowed) throw refused(limit, more, { ...headers }, extra + 1)
  }
}

function refused(limit: number, result: WindowResult, headers: Record<string, string>, weight = 1): ApiError {
  const retryAfter = Math.max(1, Math.ceil(result.retryAfterMs / 1000))
  const what =
    weight > 1
      ? `This request counts as ${weight} requests (the work it asks for) and does not fit in the ${limit} requests this credential may make per minute`
      : `This credential made ${limit} requests in the last minute, its limit`
  return new ApiError(
    'rate-limited',
    'rate_limit.exceeded',
    `${what}. The next request will be accepted at ${new Date(result.resetAt).toISOString()} (in ${retryAfter} s).`,
    { limit, resetAt: new Date(result.resetAt).toISOString(), ...(weight > 1 ? { weight } : {}) },
    { ...headers, 'Retry-After': String(retryAfter) }
  )
}

/**
 * Every request's work budget (core/limits/budget.ts), current for everything that runs
 * for the request. Placed after the rate limit, whose allowance the budget draws on.
 */
export const requestBudget = (
  unitsFor: (principal: Principal | undefined) => { units: number; unitsPerRequest: number }
): Middleware => {
  return async (ctx, next) => {
    const principal: Principal | undefined = ctx.state.authError ? undefined : ctx.state.principal
    const { units, unitsPerRequest } = unitsFor(principal)
    const budget = new Budget(units, unitsPerRequest, ctx.state.countRequests)
    ctx.state.budget = budget
    await withBudget(budget, next)
    // Work charged as it went (not reserved up front) counts after the answer; it can no longer be refused.
    await budget.settleRate().catch(() => undefined)
  }
}
