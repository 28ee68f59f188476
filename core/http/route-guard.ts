import type { Middleware } from 'koa'
import type { App } from '../declarations.ts'
import { ApiError, problems } from '../errors/index.ts'
import { decodeSegment } from './custom-methods.ts'
import { servedVerbs } from './problem.ts'

/** A path a plugin serves with its own middleware rather than a Feathers service, and the verbs it answers there. */
export interface DeclaredRoute {
  /** The exact path, or a pattern (`^/api/docs/assets/[^/]+$`). */
  path: string | RegExp
  /** The verbs served; HEAD goes with GET. */
  methods: readonly string[]
}

declare module '../declarations.ts' {
  interface Settings {
    /** Routes of plugins' own middleware (declareRoutes), for the route guard. */
    declaredRoutes?: DeclaredRoute[]
  }
}

/**
 * Declares a plugin's own routes (not Feathers services) to the route guard, in the plugin's
 * `configure`: another verb on them is 405 with `Allow`, as on a service path, instead of the
 * 404 the middleware's passing it on ended in.
 */
export function declareRoutes(app: App, routes: DeclaredRoute[]) {
  app.set('declaredRoutes', [...(app.get('declaredRoutes') ?? []), ...routes])
}

/** The verbs a declared route allows at `path`, or undefined when none is declared there. */
function declaredVerbs(app: App, path: string): string[] | undefined {
  const route = app
    .get('declaredRoutes')
    ?.find((r) => (typeof r.path === 'string' ? r.path === path : r.path.test(path)))
  if (!route) return undefined
  const verbs = route.methods.map((m) => m.toUpperCase())
  return verbs.includes('GET') && !verbs.includes('HEAD') ? [...verbs, 'HEAD'] : verbs
}

/** The verbs Feathers would misroute on a path that does not serve them (a read it cannot). */
const changingVerbs = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * Just before the Feathers router, answers the requests it would get wrong:
 * - a path segment naming a member of Object.prototype (`constructor`, `__proto__`,
 *   `toString`…): the router keeps its children in a plain object and throws on them (a 500);
 * - an `/api/` path ending in a slash: no route has one (a plugin's own route may take one: SCIM's);
 * - POST on an item URL, which Feathers runs as `create` with the id ignored, and PATCH,
 *   PUT or DELETE on a collection, which it runs on every record: 405 with `Allow`.
 * - POST, PUT, PATCH or DELETE on an `/api/` path no service or plugin's own route serves:
 *   a 404 before the body is read (it was a 415 about the body's media type), naming
 *   the path meant when the same path with or without `/v1` exists.
 * - a verb a plugin's own route does not serve (declareRoutes: the API reference, the GraphQL
 *   SDL): 405 with `Allow`, as on a service path.
 * Colon methods (`/{id}:transition`) are rewritten before this, so they pass.
 */
export const routeGuard =
  (app: App, ownRoutes: readonly RegExp[] = []): Middleware =>
  async (ctx, next) => {
    const segments = ctx.path.split('/').slice(1)
    // A feature that routes its own paths (Plugin.ownRoutes) owns their spelling too: SCIM clients send `/Users/`.
    const trailingSlash =
      ctx.path.startsWith('/api/') && ctx.path.endsWith('/') && !ownRoutes.some((p) => p.test(ctx.path))
    if (segments.some((s) => Object.hasOwn(Object.prototype, decodeSegment(s))) || trailingSlash) {
      throw problems.notFound(
        'route.not_found',
        `No route ${ctx.method} ${ctx.path}.${ctx.path.endsWith('/') ? ` Paths end without a slash: ${ctx.path.replace(/\/+$/, '')}.` : ''}`
      )
    }
    const declared = declaredVerbs(app, ctx.path)
    if (declared) {
      if (declared.includes(ctx.method)) return next()
      const list = declared.join(', ')
      throw new ApiError(
        'method-not-allowed',
        'http.method_not_allowed',
        `${ctx.method} is not allowed on ${ctx.path}; allowed: ${list}.`,
        {},
        { Allow: list }
      )
    }
    const found = ctx.path.startsWith('/api/') ? app.lookup(ctx.path) : null
    if (!found && ctx.path.startsWith('/api/') && !ownRoutes.some((p) => p.test(ctx.path))) {
      const meant = nearbyRoute(app, ownRoutes, ctx.path)
      if (meant) ctx.state.routeHint = ` Did you mean ${meant}?`
      if (changingVerbs.has(ctx.method))
        throw problems.notFound('route.not_found', `No route ${ctx.method} ${ctx.path}.${ctx.state.routeHint ?? ''}`)
    }
    // Only a changing verb can be one Feathers would misroute; reads pass without working out the Allow list.
    if (found && changingVerbs.has(ctx.method) && !ctx.get('x-service-method')) {
      const item = found.params.__id !== undefined
      const allowed = servedVerbs(found.service, item)
      if (!allowed.includes(ctx.method)) {
        const list = allowed.join(', ')
        throw new ApiError(
          'method-not-allowed',
          'http.method_not_allowed',
          `${ctx.method} is not allowed on ${ctx.path}; allowed: ${list || 'nothing'}.${item ? '' : ' Changes go to one record at a time: /{id}.'}`,
          {},
          { Allow: list }
        )
      }
    }
    return next()
  }

/** The same path with `/v1` added or removed after `/api`, when a service or a plugin's own route serves it. */
function nearbyRoute(app: App, ownRoutes: readonly RegExp[], path: string): string | undefined {
  const other = path.startsWith('/api/v1/')
    ? `/api/${path.slice('/api/v1/'.length)}`
    : `/api/v1/${path.slice('/api/'.length)}`
  return app.lookup(other) || ownRoutes.some((p) => p.test(other)) ? other : undefined
}
