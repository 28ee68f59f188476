import type { ParameterizedContext } from 'koa'
import { csrfMatches, sessionCookie, type Session } from '../../core/auth/sessions.ts'
import { nonceCsp, setHtmlSecurityHeaders } from '../../core/http/security-headers.ts'
import { PageError } from './page-error.ts'

export { newNonce } from '../../core/http/security-headers.ts'

/**
 * Headers on every settings page, redirects and refusals included: those of every HTML page
 * (core/http/security-headers.ts, where Referrer-Policy is explained), with the strict nonce
 * policy. Pages show account data (and the creation page a secret), so none may be cached.
 */
export function setPageHeaders(ctx: ParameterizedContext, nonce: string) {
  setHtmlSecurityHeaders(ctx, nonceCsp(nonce))
  ctx.set('Cache-Control', 'no-store')
}

const notFromHere = () =>
  new PageError(
    403,
    'Form from another site',
    'This form was sent from a page of another site, so it was refused. Open this site directly and try again.'
  )

/**
 * Refuses a POST sent by a page of another origin (login CSRF: signing the victim in as
 * the attacker). Browsers send Origin on every POST (`null` from sandboxed frames and
 * data: URLs, refused too), and current ones also Sec-Fetch-Site, which no page can
 * forge. A request with neither is not from a browser form and is let through, the CSRF
 * token still guarding the signed-in forms. Ours is the origin the request was addressed
 * to, or the configured public URL (a TLS-terminating proxy in front makes them differ).
 */
export function assertSameOrigin(ctx: ParameterizedContext, publicUrl: string | null) {
  const site = ctx.get('sec-fetch-site')
  if (site && site !== 'same-origin' && site !== 'none') throw notFromHere()
  const origin = ctx.get('origin')
  if (!origin) return
  // Not ctx.origin: since Koa 3 that is the Origin header itself, not the request's own origin.
  const ours = new Set([`${ctx.protocol}://${ctx.host}`])
  if (publicUrl) ours.add(new URL(publicUrl).origin)
  if (!ours.has(origin)) throw notFromHere()
}

/** Every signed-in form carries the session's CSRF token; a cross-site page cannot read it. */
export function assertCsrf(session: Session, form: URLSearchParams) {
  if (!csrfMatches(session.csrfToken, form.get('csrf'))) {
    throw new PageError(
      403,
      'Form expired',
      'This form is out of date or was not sent by this site, so nothing was changed. Reload the page and try again.'
    )
  }
}

/**
 * The session cookie, written by hand: Koa's ctx.cookies refuses `Secure` on a plain
 * HTTP request, and browsers keep Secure cookies from http://localhost and 127.0.0.1.
 */
export function sessionCookieHeader(value: string, maxAgeSeconds: number): string {
  return `${sessionCookie}=${value}; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`
}

export const expiredSessionCookie = `${sessionCookie}=; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=0`

/**
 * Where to go after signing in: only a path of this site, checked as the browser will read
 * it. The URL parser drops tabs and newlines, reads a backslash as `/` and resolves `.`/`..`
 * segments, so `/.//evil.com` becomes `//evil.com`, another host: the value is normalised
 * first and the result checked. Control characters, whitespace, backslashes and
 * percent-encoded slashes (no page of this site has one) fall back to the default. The one
 * check for every door that redirects after a sign-in (password and single sign-on, whose
 * sealed flow cookie carries the checked value to the callback).
 */
export function safeNext(value: string | null | undefined, fallback = '/settings/api-keys'): string {
  if (!value || value.length > 500 || !value.startsWith('/') || /[\\\u0000-\u001f\u007f\s]/.test(value)) return fallback
  const base = 'http://records.invalid'
  let url: URL
  try {
    url = new URL(value, base)
  } catch {
    return fallback
  }
  if (url.origin !== base || /%(2f|5c)/i.test(url.pathname)) return fallback
  const next = url.pathname + url.search + url.hash
  return next.startsWith('/') && !next.startsWith('//') ? next : fallback
}

/** `/sign-in?next=/settings/api-keys`, the slashes of the path left readable. */
export function signInLocation(next: string): string {
  return `/sign-in?next=${encodeURIComponent(next).replace(/%2F/g, '/')}`
}
