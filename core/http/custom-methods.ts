import type { Middleware } from 'koa'
import { ApiError } from '../errors/index.ts'

/**
 * A percent-encoded path segment as text. One that is not UTF-8 (`%FF`, `%ED%A0%80`) stays as
 * sent, as Feathers leaves the ids of its own routes: no id has that shape, so the service
 * answers 404 instead of the URIError decodeURIComponent throws (a 500).
 */
export function decodeSegment(segment: string): string {
  // Without a percent sign there is nothing to decode (the route guard decodes every segment of every path).
  if (!segment.includes('%')) return segment
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/**
 * Maps `POST <service>/<id>:<method>` (e.g. `/api/v1/records/42:transition`) onto the
 * Feathers custom method of that service: Feathers routes custom methods as
 * `POST <service>` with X-Service-Method, so the id travels in `params.route.id`.
 * Another verb on such a path is a 405 naming POST: without this, `GET <id>:transition`
 * reached `get` with the id `<id>:transition` and answered "no record".
 */
export const colonMethods = (servicePaths: string[]): Middleware => {
  const patterns = servicePaths.map((p) => new RegExp(`^/${p.replace(/^\//, '')}/([^/:]+):([a-zA-Z][\\w-]*)$`))
  return (ctx, next) => {
    // Most requests name no operation: no pattern to try.
    if (!ctx.path.includes(':')) return next()
    for (const [i, re] of patterns.entries()) {
      const m = ctx.path.match(re)
      if (!m) continue
      if (ctx.method !== 'POST') {
        throw new ApiError(
          'method-not-allowed',
          'http.method_not_allowed',
          `${ctx.method} is not allowed on ${ctx.path}: "${m[2]}" is an operation, called with POST ${ctx.path}.`,
          {},
          { Allow: 'POST' }
        )
      }
      ctx.path = `/${servicePaths[i].replace(/^\//, '')}`
      ctx.request.headers['x-service-method'] = m[2]
      ctx.feathers = { ...ctx.feathers, route: { id: decodeSegment(m[1]) } }
      break
    }
    return next()
  }
}

/** Rewrites a path a plugin serves under another spelling to its canonical one (Plugin.canonicalPath), before routing. */
export const canonicalPaths =
  (canonical: Array<(path: string) => string | undefined>): Middleware =>
  (ctx, next) => {
    for (const c of canonical) {
      const to = c(ctx.path)
      if (to !== undefined && to !== ctx.path) {
        ctx.path = to
        break
      }
    }
    return next()
  }
