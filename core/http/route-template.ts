import feathersPackage from '@feathersjs/feathers'
import type { ParameterizedContext } from 'koa'
import type { App } from '../declarations.ts'

declare module '../declarations.ts' {
  interface Settings {
    /** Paths plugins route themselves (Plugin.ownRoutes), named by routeTemplate. */
    ownRoutes?: readonly RegExp[]
  }
}

/** The route of a request that reached no route (a 404 or 405 nobody answered): one label, however many paths are tried. */
export const unmatchedRoute = 'unmatched'
/** The route of a request a feature answered without naming its route (setRouteTemplate). */
export const otherRoute = 'other'

/**
 * Names the route a request was served by, for a feature that routes requests itself
 * (server-rendered pages, storage URLs): `/settings/webhooks/:id/test`, never the path sent.
 */
export function setRouteTemplate(ctx: ParameterizedContext, template: string) {
  ctx.state.routeTemplate = template
}

const patternTemplates = new WeakMap<RegExp, string>()

/**
 * A route pattern as a template: `^\/settings\/webhooks\/([^/]+)\/test$` with keys `['id']`
 * reads `/settings/webhooks/:id/test`. A pattern this cannot read stays its source (bounded all the same).
 */
export function patternTemplate(pattern: RegExp, keys: readonly string[] = []): string {
  const known = patternTemplates.get(pattern)
  if (known !== undefined) return known
  let i = 0
  const s = pattern.source
    .replace(/^\^/, '')
    .replace(/\$$/, '')
    .replace(/\(\?:\/\.\*\)\?$/, '/*')
    .replace(/\((?!\?)[^()]*\)|\[\^\/\]\+/g, () => `:${keys[i++] ?? 'param'}`)
    .replace(/\\(.)/g, '$1')
  const template = /[\^$()[\]{}|?+\\]/.test(s) || /\*(?!$)/.test(s) ? pattern.source : s
  patternTemplates.set(pattern, template)
  return template
}

const servicePaths = new WeakMap<App, Map<unknown, string>>()

function servicePath(app: App, service: unknown): string | undefined {
  let paths = servicePaths.get(app)
  if (!paths?.has(service)) {
    // Services are registered at start-up; read once (again only for one registered since).
    paths = new Map(Object.entries(app.services).map(([path, s]) => [s, `/${path.replace(/^\/+|\/+$/g, '')}`]))
    servicePaths.set(app, paths)
  }
  return paths.get(service)
}

function lookup(ctx: ParameterizedContext, app: App): { service: unknown; params: Record<string, unknown> } | null {
  if (ctx.lookup) return ctx.lookup
  try {
    return app.lookup(ctx.path)
  } catch {
    // The router keeps its children in a plain object: a segment such as `constructor` throws (the route guard's 404).
    return null
  }
}

/**
 * The route a request was served by, as a template with placeholders for what varies
 * (`/api/v1/records/:id`, `/api/modules/:moduleKey/bulk`, `/api/v1/records/:id:transition`),
 * read once the response is known (call it when the request has finished: paths are rewritten on the way in).
 * The label of metrics and the request log (core/telemetry/http-metrics.ts; the logs' request
 * line reuses it): never a raw id, so the number of distinct values is the number of routes.
 * In order: what the feature named (setRouteTemplate); the Feathers service the path resolves
 * to (also for a request refused before it got there: 401, 429); a declared route or a plugin's own;
 * else `unmatched` for a 404/405 and `other` for anything else answered.
 */
export function routeTemplate(ctx: ParameterizedContext, status = ctx.status): string {
  if (typeof ctx.state.routeTemplate === 'string') return ctx.state.routeTemplate
  const app = ctx.app as unknown as App
  const found = lookup(ctx, app)
  if (found) {
    const base = servicePath(app, found.service)
    if (base !== undefined) {
      if (found.params.__id !== undefined) return `${base}/:id`
      const method = ctx.get('x-service-method')
      // A colon method (`POST /records/42:transition`, rewritten by colonMethods): named only when the service has it.
      if (method && ctx.feathers?.route?.id !== undefined) {
        const known = (feathersPackage.getServiceOptions(found.service)?.methods ?? []).includes(method)
        return `${base}/:id:${known ? method : 'method'}`
      }
      return base
    }
  }
  for (const r of app.get('declaredRoutes') ?? []) {
    if (typeof r.path === 'string' ? r.path === ctx.path : r.path.test(ctx.path))
      return typeof r.path === 'string' ? r.path : patternTemplate(r.path)
  }
  for (const p of app.get('ownRoutes') ?? []) if (p.test(ctx.path)) return patternTemplate(p)
  return status === 404 || status === 405 ? unmatchedRoute : otherRoute
}
