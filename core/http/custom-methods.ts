import type { Middleware } from 'koa'

/**
 * Maps `POST <service>/<id>:<method>` (e.g. `/api/v1/records/42:transition`) onto the
 * Feathers custom method of that service: Feathers routes custom methods as
 * `POST <service>` with X-Service-Method, so the id travels in `params.route.id`.
 */
export const colonMethods = (servicePaths: string[]): Middleware => {
  const patterns = servicePaths.map((p) => new RegExp(`^/${p.replace(/^\//, '')}/([^/:]+):([a-zA-Z][\\w-]*)$`))
  return async (ctx, next) => {
    if (ctx.method === 'POST') {
      for (const [i, re] of patterns.entries()) {
        const m = ctx.path.match(re)
        if (!m) continue
        ctx.path = `/${servicePaths[i].replace(/^\//, '')}`
        ctx.request.headers['x-service-method'] = m[2]
        ctx.feathers = { ...ctx.feathers, route: { id: decodeURIComponent(m[1]) } }
        break
      }
    }
    return next()
  }
}
