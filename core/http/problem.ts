import { FeathersError } from '@feathersjs/errors'
import feathersPackage from '@feathersjs/feathers'
import type { Middleware, ParameterizedContext } from 'koa'
import { ApiError, toProblem, problems } from '../errors/index.ts'
import { logger } from '../logger.ts'
import type { ProblemFormat } from '../plugin.ts'
import { routedPath } from './path.ts'

const verbsById: Record<string, string> = { get: 'GET', patch: 'PATCH', update: 'PUT', remove: 'DELETE' }
const verbsOfCollection: Record<string, string> = { find: 'GET', create: 'POST' }

/** The HTTP verbs a Feathers service serves on an item URL (`item`) or its collection, from the methods it exposes; HEAD with GET, last. */
export function servedVerbs(service: unknown, item: boolean): string[] {
  const table = item ? verbsById : verbsOfCollection
  const verbs = (feathersPackage.getServiceOptions(service)?.methods ?? []).flatMap((m) => (table[m] ? [table[m]] : []))
  return verbs.includes('GET') ? [...verbs, 'HEAD'] : verbs
}

/** RFC 9110 requires Allow on a 405: the verbs the matched Feathers service serves at this path. */
function allowHeader(ctx: ParameterizedContext): string | undefined {
  const lookup = (ctx as { lookup?: { service: unknown; params?: Record<string, unknown> } }).lookup
  if (!lookup) return undefined
  const verbs = servedVerbs(lookup.service, lookup.params?.__id !== undefined)
  return verbs.length ? verbs.join(', ') : undefined
}

/**
 * The outermost middleware: renders every error, from any layer, as
 * application/problem+json (or the format a plugin declares for its paths), and turns an
 * unmatched route into a 404 problem.
 */
export const problemResponses =
  (errorsUrl: () => string, formats: readonly ProblemFormat[] = []): Middleware =>
  async (ctx, next) => {
    try {
      await next()
      if (ctx.status === 404 && ctx.body === undefined) {
        throw problems.notFound('route.not_found', `No route ${ctx.method} ${ctx.path}.${ctx.state.routeHint ?? ''}`)
      }
    } catch (caught) {
      const traceId: string = ctx.state.traceId ?? 'unknown'
      let err = caught
      const path = routedPath(ctx.originalUrl.split('?')[0])
      // Feathers' own MethodNotAllowed (a service lacking the method the verb maps to).
      const methodNotAllowed = err instanceof FeathersError && !(err instanceof ApiError) && err.code === 405
      // An unknown `<id>:<operation>` reaches Feathers as a method the service lacks: it is no route at all.
      if (methodNotAllowed && path !== ctx.path)
        err = problems.notFound('route.not_found', `No route ${ctx.method} ${path}.`)
      const { body, headers, internal } = toProblem(err, traceId, errorsUrl())
      if (methodNotAllowed && path === ctx.path) {
        // Feathers names its own method ("update"); the client needs the HTTP verbs.
        const allow = allowHeader(ctx)
        if (allow) headers.Allow = allow
        body.detail = `${ctx.method} is not allowed on ${path}${allow ? `; allowed: ${allow}` : ''}.`
      }
      if (internal)
        logger.error('request failed', {
          traceId,
          method: ctx.method,
          path: ctx.path,
          error: (err as Error)?.stack ?? String(err)
        })
      ctx.status = body.status
      // Counted by its code when it is a 429 (core/telemetry/http-metrics.ts).
      ctx.state.problemCode = body.code
      ctx.set(headers)
      ctx.set('X-Trace-Id', traceId)
      // A protocol with an error format of its own (SCIM) gets the same problem in that format.
      const format = formats.find((f) => f.paths.test(path))
      ctx.type = format?.contentType ?? 'application/problem+json'
      ctx.body = format ? format.render(body) : body
    }
  }
