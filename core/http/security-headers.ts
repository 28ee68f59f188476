import { randomBytes } from 'node:crypto'
import type { ParameterizedContext } from 'koa'

/** A fresh CSP nonce for one response: the only inline script and style that may run on it. */
export function newNonce(): string {
  return randomBytes(16).toString('base64')
}

/** The policy of the service's own pages: nothing runs or styles but what carries this response's nonce. */
export function nonceCsp(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "img-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'"
  ].join('; ')
}

/**
 * The headers every HTML page of the service sends, with its Content-Security-Policy (a page
 * that needs a looser one, like Swagger UI, passes its own). The one place they are set, so
 * a new page cannot forget one. Caching stays each page's own choice.
 *
 * Referrer-Policy is `same-origin`, not `no-referrer`: under `no-referrer` browsers send
 * `Origin: null` on the pages' own form posts (Fetch spec, "serializing a request
 * origin"; seen in Chromium 156), which the login-CSRF check must refuse, so nobody could
 * sign in. `same-origin` sends no Referer to any other site either, the point of
 * `no-referrer`.
 */
export function setHtmlSecurityHeaders(ctx: ParameterizedContext, csp: string) {
  ctx.set({
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'same-origin',
    // For browsers that predate frame-ancestors.
    'X-Frame-Options': 'DENY',
    'Cross-Origin-Opener-Policy': 'same-origin'
  })
}
