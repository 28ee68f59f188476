/**
 * A request path as the Feathers router reads it: the router strips every leading slash,
 * so `//api/v1/webhooks/1` reaches the webhooks service. A guard that tested the path as
 * sent (`startsWith('/api/')`) was skipped for it. `identify` (the CSRF check) reads the
 * path through this, and `canonicalPaths` rewrites `ctx.path` to it before the route guard,
 * the body readers, the plugins' routes and the router, so every later guard sees one
 * spelling. Trailing slashes stay (the router strips them too; the route guard refuses them).
 */
export function routedPath(path: string): string {
  return path.startsWith('//') ? path.replace(/^\/+/, '/') : path
}

