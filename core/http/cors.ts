import type { Middleware } from 'koa'
import type { AppConfig } from '../config.ts'

/** The request headers the API reads that make a browser ask first (preflight). */
export const corsRequestHeaders = [
  'Accept',
  'Authorization',
  'Content-Type',
  'Idempotency-Key',
  'If-Match',
  'If-None-Match',
  'traceparent',
  'tracestate',
  'X-CSRF-Token'
]

/** The response headers a page of another origin may read, beyond those CORS always lets through. */
export const corsExposedHeaders = [
  'ETag',
  'Location',
  'Allow',
  'Content-Disposition',
  'Idempotent-Replayed',
  'Retry-After',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'X-Trace-Id'
]

/** What is wrong with http.cors beyond its shape, each naming the setting. */
export function corsConfigProblems(cors: AppConfig['http']['cors']): string[] {
  const out: string[] = []
  for (const o of cors.origins) {
    if (
      o !== '*' &&
      !(URL.canParse(o) && ['http:', 'https:'].includes(new URL(o).protocol) && new URL(o).origin === o)
    ) {
      out.push(
        `/http/cors/origins has "${o}": an origin is a scheme, host and optional port, without a path or a trailing slash (https://app.example.com), or *`
      )
    }
  }
  if (cors.credentials && cors.origins.includes('*'))
    out.push(
      '/http/cors/credentials cannot be true with the origin *: list the origins that may act as the signed-in user'
    )
  return out
}

/**
 * Cross-origin calls from the browser pages of http.cors.origins (none by default: a page
 * of another origin cannot read any answer). Every answer to an allowed origin names it in
 * Access-Control-Allow-Origin and exposes the API's headers (ETag, Location, the rate-limit
 * headers…). An OPTIONS request is answered 204 with `Allow` wherever another verb would be
 * answered (the layers that know a path's verbs, the route guard, colon methods, Feathers,
 * a feature's own routes, refuse OPTIONS with 405 and `Allow`; that refusal becomes the
 * answer here, so no second list of verbs exists); a preflight from an allowed origin gets
 * those verbs in Access-Control-Allow-Methods. An unknown path stays 404. Placed outside
 * problemResponses so that it sees the final status.
 */
export const cors = (config: AppConfig['http']['cors']): Middleware => {
  const any = config.origins.includes('*')
  const listed = new Set(config.origins)
  const exposed = corsExposedHeaders.join(', ')
  return async (ctx, next) => {
    const origin = ctx.get('origin')
    const allowed = origin !== '' && (any || listed.has(origin))
    if (listed.size && !any) ctx.vary('Origin')
    if (allowed) {
      ctx.set('Access-Control-Allow-Origin', any ? '*' : origin)
      if (config.credentials) ctx.set('Access-Control-Allow-Credentials', 'true')
      ctx.set('Access-Control-Expose-Headers', exposed)
    }
    await next()
    const verbs = ctx.method === 'OPTIONS' && ctx.status === 405 ? ctx.response.get('allow') : ''
    if (!verbs) return
    ctx.status = 204
    ctx.body = null
    ctx.remove('Content-Type')
    ctx.set('Allow', `${verbs}, OPTIONS`)
    if (allowed && ctx.get('access-control-request-method')) {
      ctx.remove('Access-Control-Expose-Headers')
      ctx.set('Access-Control-Allow-Methods', verbs)
      ctx.set('Access-Control-Allow-Headers', corsRequestHeaders.join(', '))
      ctx.set('Access-Control-Max-Age', String(config.maxAgeSeconds))
    }
  }
}
