import type { Middleware } from 'koa'
import type { CredentialStore } from '../auth/credentials.ts'
import { csrfMatches, sessionCookie, type SessionStore } from '../auth/sessions.ts'
import { inTenant } from '../db/tenant-scope.ts'
import { problems } from '../errors/index.ts'

const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * Works out who is calling before anything else runs, so the rate limit can count per
 * credential: a bearer token, else a session cookie. The principal reaches Feathers in
 * `params.principal`. A bad token is held back in `ctx.state.authError` and thrown by
 * `rejectBadCredentials` after the rate limiter has counted the request by address.
 */
export const identify =
  (credentials: CredentialStore, sessions: SessionStore): Middleware =>
  async (ctx, next) => {
    const authorization = ctx.get('authorization')
    if (authorization) {
      try {
        ctx.state.principal = await credentials.authenticate(authorization)
      } catch (err) {
        ctx.state.authError = err
      }
    } else {
      const cookie = ctx.cookies.get(sessionCookie)
      const session = cookie ? await sessions.resolve(cookie) : undefined
      if (session) {
        ctx.state.session = session
        ctx.state.principal = session.principal
        // A cross-site page can make the browser send the cookie, never this header.
        if (
          !safeMethods.has(ctx.method) &&
          ctx.path.startsWith('/api/') &&
          !csrfMatches(session.csrfToken, ctx.get('x-csrf-token'))
        ) {
          ctx.state.authError = problems.forbidden(
            'auth.csrf',
            'A request authenticated by the session cookie must send the X-CSRF-Token header of the session.'
          )
        }
      }
    }
    if (ctx.state.principal && !ctx.state.authError) {
      // A browser script reads its CSRF token from GET /api/v1/me (other origins cannot: no CORS with credentials unless an operator allows them, core/http/cors.ts).
      ctx.feathers = {
        ...ctx.feathers,
        principal: ctx.state.principal,
        csrfToken: ctx.state.session?.csrfToken
      } as typeof ctx.feathers
    }
    // From here on the database shows the caller's tenant only (row-level security, core/db/tenant-scope.ts).
    const tenantId: string | undefined = ctx.state.principal?.tenantId
    await (tenantId ? inTenant(tenantId, next) : next())
  }

export const rejectBadCredentials: Middleware = (ctx, next) => {
  if (ctx.state.authError) throw ctx.state.authError
  return next()
}
