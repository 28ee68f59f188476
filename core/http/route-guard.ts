import type { Middleware } from 'koa'
import type { App } from '../declarations.ts'
import { ApiError, problems } from '../errors/index.ts'
import { decodeSegment } from './custom-methods.ts'

const itemVerbs: Record<string, string> = { get: 'GET', update: 'PUT', patch: 'PATCH', remove: 'DELETE' }
const collectionVerbs: Record<string, string> = { find: 'GET', create: 'POST' }

/**
 * Just before the Feathers router, answers the requests it would get wrong:
 * - a path segment naming a member of Object.prototype (`constructor`, `__proto__`,
 *   `toString`…): the router keeps its children in a plain object and throws on them (a 500);
 * - an `/api/` path ending in a slash: no route has one;
 * - POST on an item URL, which Feathers runs as `create` with the id ignored, and PATCH,
 *   PUT or DELETE on a collection, which it runs on every record: 405 with `Allow`.
 * Colon methods (`/{id}:transition`) are rewritten before this, so they pass.
 */
export const routeGuard = (app: App): Middleware => async (ctx, next) => {
  const segments = ctx.path.split('/').slice(1)
  if (segments.some((s) => Object.hasOwn(Object.prototype, decodeSegment(s))) || (ctx.path.startsWith('/api/') && ctx.path.endsWith('/'))) {
    throw problems.notFound('route.not_found', `No route ${ctx.method} ${ctx.path}.${ctx.path.endsWith('/') ? ` Paths end without a slash: ${ctx.path.replace(/\/+$/, '')}.` : ''}`)
  }
  const found = ctx.path.startsWith('/api/') ? app.lookup(ctx.path) : null
  if (found && !ctx.get('x-service-method')) {
    const item = found.params.__id !== undefined
    const verbs = item ? itemVerbs : collectionVerbs
    const service = found.service as unknown as Record<string, unknown>
    const allowed = Object.keys(verbs).filter((m) => typeof service[m] === 'function').map((m) => verbs[m])
    if (allowed.includes('GET')) allowed.push('HEAD')
    const asked = ctx.method === 'HEAD' ? 'GET' : ctx.method
    if (!allowed.includes(asked) && ['POST', 'PUT', 'PATCH', 'DELETE'].includes(asked)) {
      const list = allowed.join(', ')
      throw new ApiError('method-not-allowed', 'http.method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; allowed: ${list || 'nothing'}.${item ? '' : ' Changes go to one record at a time: /{id}.'}`, {}, { Allow: list })
    }
  }
  return next()
}
