import { sessionCookie } from '../../core/auth/sessions.ts'
import { logger } from '../../core/logger.ts'
import { field, readForm } from './form-body.ts'
import { homeOf, sendPage, seeOther, sessionOf, type PageRequest, type PageRoute } from './page-request.ts'
import { assertCsrf, assertSameOrigin, expiredSessionCookie, safeNext, sessionCookieHeader } from './security.ts'
import { oidcLabel, oidcOf, oidcStart } from './sign-in-oidc.ts'
import { signInPage, type SignInView } from './sign-in.views.ts'

/** One message for an unknown organisation, an unknown user and a wrong password alike. */
export const wrongCredentials = 'The organisation, user name or password is not right.'
const windowMs = 60_000
/**
 * Attempts per client address are this many times the per-account limit: one address
 * may be a whole office behind NAT, yet a spray of guesses over many user names from
 * one address is still capped.
 */
export const addressFactor = 5

/**
 * Counts the attempt against the account (tenant + user name) and the client address.
 * Returns seconds to wait when either is over its limit. Without a limiter (or when
 * the shared store fails) attempts are let through, as for the request rate limit.
 */
async function throttled(r: PageRequest, tenant: string, userName: string): Promise<number | undefined> {
  const limiter = r.platform.limiter
  if (!limiter) return undefined
  const limit = r.platform.limitsFor(tenant).signInAttemptsPerMinute
  try {
    for (const [key, max] of [
      [`signin:addr:${r.ctx.ip}`, limit * addressFactor],
      // Lower-cased so case variants of one name share a count; capped so a key stays short.
      [`signin:${tenant.slice(0, 63)}:${userName.toLowerCase().slice(0, 256)}`, limit]
    ] as const) {
      const result = await limiter.hit(key, max, windowMs)
      if (!result.allowed) return Math.max(1, Math.ceil(result.retryAfterMs / 1000))
    }
  } catch (err) {
    logger.warn('sign-in throttle unavailable; letting the attempt through', { error: (err as Error).message })
  }
  return undefined
}

/**
 * What the page offers for single sign-on: the button of the organisation, when it is
 * known and signs in through an IdP; else, when any organisation does, a way to look its
 * up. An unknown organisation and one without single sign-on look the same.
 */
function ssoOf(r: PageRequest, tenant: string, next: string): Pick<SignInView, 'sso' | 'ssoOffered'> {
  const o = tenant ? oidcOf(r.platform, tenant) : undefined
  return {
    sso: o && { href: oidcStart(tenant, next), label: oidcLabel(o) },
    ssoOffered: Object.values(r.platform.config.tenants).some((t) => t.oidc)
  }
}

async function showSignIn(r: PageRequest) {
  const tenants = r.platform.tenants.list()
  const query = r.ctx.query
  const tenant =
    typeof query.tenant === 'string' ? query.tenant.slice(0, 63) : tenants.length === 1 ? tenants[0].id : ''
  const next = safeNext(typeof query.next === 'string' ? query.next : undefined, homeOf(r.app))
  sendPage(r, 200, signInPage({ nonce: r.nonce, tenant, userName: '', next, ...ssoOf(r, tenant, next) }))
}

async function signIn(r: PageRequest) {
  assertSameOrigin(r.ctx, r.platform.config.publicUrl)
  const form = await readForm(r.ctx)
  const tenant = field(form, 'tenant').toLowerCase()
  const userName = field(form, 'userName')
  const password = field(form, 'password', { trim: false })
  const next = safeNext(form.get('next'), homeOf(r.app))
  const again = (status: number, error: string) =>
    sendPage(r, status, signInPage({ nonce: r.nonce, tenant, userName, next, error, ...ssoOf(r, tenant, next) }))
  if (form.has('sso')) {
    // To the page with the organisation's button, not straight to the IdP: the form-action
    // policy of this page would stop the browser following a form's redirect to another site.
    if (!tenant) return again(400, 'Enter your organisation to use single sign-on.')
    if (!oidcOf(r.platform, tenant))
      return again(
        400,
        'This organisation does not sign in through an identity provider here. Sign in with your user name and password.'
      )
    return seeOther(
      r,
      `/sign-in?tenant=${encodeURIComponent(tenant)}&next=${encodeURIComponent(next).replace(/%2F/g, '/')}`
    )
  }
  if (!tenant || !userName || !password) return again(400, 'Enter your organisation, user name and password.')
  const wait = await throttled(r, tenant, userName)
  if (wait !== undefined) {
    r.ctx.set('Retry-After', String(wait))
    // Counted with the API's 429s (records_rate_limit_refusals_total), under its own code.
    r.ctx.state.problemCode = 'sign_in.throttled'
    return again(429, `Too many sign-in attempts. Wait ${wait} second${wait === 1 ? '' : 's'} and try again.`)
  }
  // An unknown organisation costs the same password check as a wrong password: nothing tells them apart.
  const user = await r.platform.users.checkPassword(tenant, userName, password)
  if (!user) return again(401, wrongCredentials)
  // A fresh session id on every sign-in: a cookie planted before it (session fixation) is worthless.
  await r.platform.sessions.destroy(r.ctx.cookies.get(sessionCookie))
  const session = await r.platform.sessions.create(user.tenantId, user.id)
  await r.platform.users.recordSignIn(user.tenantId, user.id)
  r.ctx.set('Set-Cookie', sessionCookieHeader(session.cookieValue, r.platform.config.sessions.ttlHours * 3600))
  seeOther(r, next)
}

async function signOut(r: PageRequest) {
  assertSameOrigin(r.ctx, r.platform.config.publicUrl)
  const form = await readForm(r.ctx)
  const session = sessionOf(r)
  if (session) {
    assertCsrf(session, form)
    await r.platform.sessions.destroy(r.ctx.cookies.get(sessionCookie))
  }
  r.ctx.set('Set-Cookie', expiredSessionCookie)
  seeOther(r, '/sign-in')
}

export const signInRoutes: PageRoute[] = [
  { method: 'GET', path: /^\/sign-in$/, handler: showSignIn },
  { method: 'POST', path: /^\/sign-in$/, handler: signIn },
  { method: 'POST', path: /^\/sign-out$/, handler: signOut }
]
