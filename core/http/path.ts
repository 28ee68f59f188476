import type { Middleware } from 'koa'

/**
 * A request path as the Feathers router reads it: the router strips every leading slash,
 * so `//api/v1/webhooks/1` reaches the webhooks service. A guard that tested the path as
 * sent (`startsWith('/api/')`) was skipped for it (the CSRF check). Trailing slashes stay
 * (the router strips them too; the route guard refuses them).
 */
export function routedPath(path: string): string {
  return path.startsWith('//') ? path.replace(/^\/+/, '/') : path
}

/**
 * First middleware after the trace id: `ctx.path` becomes the routed spelling, so every later
 * guard (CSRF, route guard, body readers, plugins' routes) and the router see one spelling.
 * `ctx.originalUrl` keeps what was sent.
 */
export const routedPaths: Middleware = (ctx, next) => {
  const routed = routedPath(ctx.path)
  if (routed !== ctx.path) ctx.path = routed
  return next()
}
