import type { Middleware } from 'koa'
import { problems, toProblem } from '../errors/index.ts'
import { logger } from '../logger.ts'
import type { Shutdown } from '../shutdown.ts'
import { requestTraceId } from './trace.ts'

/** One readiness check: resolves when its dependency answers, rejects (or outlasts the timeout) when not. */
export type ReadinessCheck = () => Promise<void>

export interface HealthOptions {
  shutdown: Shutdown
  /** The checks of this instance by name (database, jobs, redis…), read per probe: some exist only once the server runs. */
  checks: () => Record<string, ReadinessCheck>
  timeoutMs: number
  errorsUrl: () => string
  /**
   * What a ready instance serves degraded, reported beside the checks without failing them (the module
   * packages that did not load: the other modules serve). Names only: the reasons are in the log.
   */
  degraded?: () => Record<string, unknown> | undefined
}

const shuttingDown =
  'This instance is shutting down: it finishes the work it has and takes no more. Retry on another instance.'
const paths = new Set(['/livez', '/readyz', '/healthz'])

/**
 * `GET /livez`: the process answers (no I/O; a failing one is restarted). `GET /readyz` (and
 * `/healthz`, its alias, the name many balancers probe): every dependency answered within
 * `timeoutMs`, else 503 naming the failed checks; 503 as soon as the instance drains. Served
 * first in the chain: no authentication, rate limit, budget, request log or OpenAPI document
 * (an operator's endpoint, README "Health and shutdown"). Concurrent probes share one round of
 * checks. While draining, every response asks its connection to close.
 */
export function health(options: HealthOptions): Middleware {
  let lastFailing = ''
  let round: Promise<Record<string, CheckResult>> | undefined
  // A check still unanswered from an earlier round is waited on again, never started twice: against a database
  // slower than the timeout, each probe of each balancer would otherwise queue one more connection attempt.
  const pending = new Map<string, Promise<unknown>>()
  const once = (name: string, check: ReadinessCheck) => {
    let call = pending.get(name)
    if (!call) {
      call = check().finally(() => pending.delete(name))
      call.catch(() => undefined)
      pending.set(name, call)
    }
    return call
  }
  const ready = () =>
    (round ??= runChecks(options.checks(), options.timeoutMs, once).finally(() => (round = undefined)))
  return async (ctx, next) => {
    if (!paths.has(ctx.path) || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) {
      if (options.shutdown.draining) ctx.set('Connection', 'close')
      await next()
      // A request that began before the drain: its answer (unless already streaming) closes the connection too.
      if (options.shutdown.draining) ctx.set('Connection', 'close')
      return
    }
    if (options.shutdown.draining) ctx.set('Connection', 'close')
    ctx.set('Cache-Control', 'no-store')
    if (ctx.path === '/livez') {
      ctx.body = { status: 'alive' }
      return
    }
    const refuse = (code: string, detail: string, checks: Record<string, CheckResult>) => {
      const { body, headers } = toProblem(
        problems.unavailable(code, detail, { checks }),
        requestTraceId(ctx.get('traceparent')),
        options.errorsUrl()
      )
      ctx.status = 503
      ctx.set(headers)
      ctx.set('X-Trace-Id', body.traceId)
      ctx.type = 'application/problem+json'
      ctx.body = body
    }
    if (options.shutdown.draining) return refuse('service.shutting_down', shuttingDown, {})
    const checks = await ready()
    const failed = Object.keys(checks).filter((name) => !checks[name].ok)
    // The checks may have outlasted the start of a drain.
    if (options.shutdown.draining) return refuse('service.shutting_down', shuttingDown, publicChecks(checks))
    // Why a check failed goes to the log (once per change), not to an unauthenticated caller.
    const failing = failed.map((f) => `${f}: ${checks[f].error}`).join('; ')
    if (failing !== lastFailing) {
      if (failing) logger.warn('not ready', { checks: failing })
      else logger.info('ready again')
    }
    lastFailing = failing
    if (failed.length)
      return refuse('service.not_ready', `Not ready: ${failed.join(', ')} did not answer.`, publicChecks(checks))
    const degraded = options.degraded?.()
    ctx.body = { status: 'ready', checks: publicChecks(checks), ...(degraded ? { degraded } : {}) }
  }
}

const publicChecks = (checks: Record<string, CheckResult>) =>
  Object.fromEntries(Object.entries(checks).map(([name, { ok, ms }]) => [name, { ok, ms }]))

interface CheckResult {
  ok: boolean
  ms: number
  error?: string
}

async function runChecks(
  checks: Record<string, ReadinessCheck>,
  timeoutMs: number,
  call: (name: string, check: ReadinessCheck) => Promise<unknown>
): Promise<Record<string, CheckResult>> {
  const entries = await Promise.all(
    Object.entries(checks).map(async ([name, check]): Promise<[string, CheckResult]> => {
      const started = performance.now()
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs))
      )
      try {
        await Promise.race([call(name, check), late])
        return [name, { ok: true, ms: Math.round(performance.now() - started) }]
      } catch (err) {
        return [
          name,
          { ok: false, ms: Math.round(performance.now() - started), error: (err as Error)?.message ?? String(err) }
        ]
      } finally {
        clearTimeout(timer)
      }
    })
  )
  return Object.fromEntries(entries)
}
