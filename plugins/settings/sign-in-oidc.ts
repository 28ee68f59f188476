import { timingSafeEqual } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import * as oidc from 'openid-client'
import { sessionCookie } from '../../core/auth/sessions.ts'
import type { UserInfo } from '../../core/auth/users.ts'
import { defaultOidcScopes, isLoopbackUrl, type OidcConfig } from '../../core/config.ts'
import type { Platform } from '../../core/declarations.ts'
import { logger } from '../../core/logger.ts'
import { messagePage } from './layout.ts'
import { PageError } from './page-error.ts'
import { frameFor, homeOf, sendPage, seeOther, sessionOf, type PageRequest, type PageRoute } from './page-request.ts'
import { safeNext, sessionCookieHeader } from './security.ts'
import { flowCookie, flowCookieHeader, flowSeconds, FlowSeal, type Flow } from './sign-in-oidc-flow.ts'

/*
 * OpenID Connect sign-in for users an IdP provisions (SCIM) without a password here:
 * authorization code flow with PKCE (S256), state and nonce, through openid-client.
 * What the flow remembers between the redirect and the answer travels in a sealed
 * cookie (sign-in-oidc-flow.ts).
 */

/** Discovered provider metadata is kept this long, then read again (a failure is never kept). */
const discoveryTtlMs = 24 * 3_600_000
const discoveryAttempts = 3

const tenantSegment = '([a-z][a-z0-9-]{0,62})'

/** Where a tenant's IdP sends the browser back: one address per tenant, registered at the IdP. */
export function oidcCallbackUrl(publicUrl: string, tenantId: string): string {
  return `${publicUrl}/sign-in/oidc/${tenantId}/callback`
}

/** The tenant's single sign-on, if its config has one and the tenant is live. */
export function oidcOf(platform: Platform, tenantId: string): OidcConfig | undefined {
  return platform.tenants.get(tenantId) ? platform.config.tenants[tenantId]?.oidc : undefined
}

/** The sign-in page's link to start single sign-on for a tenant. */
export function oidcStart(tenantId: string, next: string): string {
  return `/sign-in/oidc/${tenantId}?next=${encodeURIComponent(next).replace(/%2F/g, '/')}`
}

export const oidcLabel = (o: OidcConfig) => o.label ?? 'Sign in with single sign-on'

/** A refusal shown as a page, with what to log about it. */
class Refusal extends PageError {
  constructor(
    status: number,
    title: string,
    message: string,
    readonly reason: string,
    readonly details: Record<string, unknown> = {}
  ) {
    super(status, title, message)
  }
}

function sameText(a: string, b: string): boolean {
  const [x, y] = [Buffer.from(a), Buffer.from(b)]
  return x.length === y.length && timingSafeEqual(x, y)
}

/** Provider metadata per tenant, discovered on first use and shared by concurrent requests. */
class Discovery {
  private readonly cache = new Map<string, { config: Promise<oidc.Configuration>; until: number }>()

  get(tenantId: string, o: OidcConfig): Promise<oidc.Configuration> {
    const hit = this.cache.get(tenantId)
    if (hit && hit.until > Date.now()) return hit.config
    const entry = { config: this.discover(tenantId, o), until: Date.now() + discoveryTtlMs }
    this.cache.set(tenantId, entry)
    entry.config.catch(() => this.cache.get(tenantId) === entry && this.cache.delete(tenantId))
    return entry.config
  }

  private async discover(tenantId: string, o: OidcConfig): Promise<oidc.Configuration> {
    const issuer = new URL(o.issuer)
    const secret = o.clientSecret ?? process.env[o.clientSecretEnv ?? ''] ?? ''
    const auth =
      o.tokenEndpointAuthMethod === 'client_secret_post'
        ? oidc.ClientSecretPost(secret)
        : oidc.ClientSecretBasic(secret)
    // Plain http only for a provider on this machine (config refuses it elsewhere).
    const execute = issuer.protocol === 'http:' && isLoopbackUrl(issuer) ? [oidc.allowInsecureRequests] : []
    for (let attempt = 1; ; attempt++) {
      try {
        return await oidc.discovery(issuer, o.clientId, undefined, auth, { execute, timeout: 10 })
      } catch (err) {
        logger.warn('oidc discovery failed', { tenantId, issuer: o.issuer, attempt, error: describe(err) })
        if (attempt >= discoveryAttempts) throw err
        await sleep(250 * attempt)
      }
    }
  }
}

/** What an error of openid-client says, without a stack: the error, its code and its cause. */
function describe(err: unknown): string {
  if (err instanceof oidc.AuthorizationResponseError || err instanceof oidc.ResponseBodyError)
    return `${err.error}${err.error_description ? `: ${err.error_description}` : ''}`
  const e = err as Error & { code?: string; cause?: unknown }
  const cause = e?.cause instanceof Error && e.cause.message !== e.message ? ` (${e.cause.message})` : ''
  return `${e?.code ? `${e.code}: ` : ''}${e?.message ?? String(err)}${cause}`
}

const unreachable = (err: unknown) =>
  new Refusal(
    502,
    'Identity provider unavailable',
    "Your organisation's identity provider could not be reached or did not answer as expected, so you were not signed in. Try again in a minute; if it goes on, tell your administrator.",
    'provider-unavailable',
    { error: describe(err) }
  )

/**
 * The browser routes of single sign-on: GET /sign-in/oidc/<tenant> sends the browser to
 * the tenant's IdP, GET /sign-in/oidc/<tenant>/callback takes its answer, finds the user
 * and starts the same session a password sign-in does. Every refusal is a page (no
 * session is made) and a log line with its reason.
 */
export function oidcRoutes(platform: Platform): PageRoute[] {
  const seal = new FlowSeal(platform)
  const discovery = new Discovery()

  const configured = (tenantId: string): OidcConfig => {
    const o = oidcOf(platform, tenantId)
    // The same answer for an unknown organisation and one without single sign-on.
    if (!o)
      throw new Refusal(
        404,
        'Single sign-on not set up',
        'This organisation does not sign in through an identity provider here. Sign in with your user name and password instead.',
        'not-configured'
      )
    return o
  }

  async function start(r: PageRequest) {
    const tenantId = r.params.tenant
    const o = configured(tenantId)
    const config = await discovery.get(tenantId, o).catch((err) => Promise.reject(unreachable(err)))
    const flow: Flow = {
      tenant: tenantId,
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier: oidc.randomPKCECodeVerifier(),
      next: safeNext(typeof r.ctx.query.next === 'string' ? r.ctx.query.next : undefined, homeOf(r.app)),
      expires: Date.now() + flowSeconds * 1000
    }
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: oidcCallbackUrl(platform.urls.public, tenantId),
      scope: o.scopes ?? defaultOidcScopes,
      code_challenge: await oidc.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: 'S256',
      state: flow.state,
      nonce: flow.nonce
    })
    r.ctx.set('Set-Cookie', flowCookieHeader(await seal.seal(flow), flowSeconds))
    seeOther(r, url.href)
  }

  /** The provider's answer: checked, exchanged for tokens, and the ID token's identity looked up. */
  async function signedInUser(
    r: PageRequest,
    tenantId: string,
    o: OidcConfig
  ): Promise<{ user: UserInfo; next: string; sub: string }> {
    const flow = await seal.open(r.ctx.cookies.get(flowCookie))
    if (!flow || flow.tenant !== tenantId) {
      throw new Refusal(
        400,
        'Sign-in not recognised',
        'This sign-in was not started in this browser, or took longer than 10 minutes, so nothing was done. Start again from the sign-in page (cookies must be allowed for this site).',
        'flow-missing'
      )
    }
    const state = r.ctx.query.state
    if (typeof state !== 'string' || !sameText(state, flow.state)) {
      throw new Refusal(
        400,
        'Sign-in does not match',
        "The identity provider's answer does not belong to the sign-in started in this browser (its state does not match), so it was refused. Start again from the sign-in page.",
        'state-mismatch'
      )
    }
    const config = await discovery.get(tenantId, o).catch((err) => Promise.reject(unreachable(err)))
    // The callback address as registered, whatever host a proxy in front forwarded the request as.
    const current = new URL(oidcCallbackUrl(platform.urls.public, tenantId))
    current.search = r.ctx.querystring
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>
    try {
      tokens = await oidc.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true
      })
    } catch (err) {
      if (err instanceof oidc.AuthorizationResponseError) {
        const denied = err.error === 'access_denied'
        throw new Refusal(
          denied ? 403 : 502,
          denied ? 'Sign-in declined' : 'Identity provider refused',
          `The identity provider did not sign you in (${describe(err)}).${denied ? '' : ' Tell your administrator: the single sign-on set-up may be wrong.'}`,
          denied ? 'provider-denied' : 'provider-error',
          { error: describe(err) }
        )
      }
      if (err instanceof oidc.ResponseBodyError) {
        throw new Refusal(
          502,
          'Identity provider refused',
          `The identity provider refused to complete the sign-in (${describe(err)}). Start again; if it goes on, tell your administrator.`,
          'token-refused',
          { error: describe(err) }
        )
      }
      if (err instanceof oidc.ClientError) {
        // An ID token or response that failed a check: issuer, audience, signature, expiry, nonce.
        const what = err.cause instanceof Error ? err.cause.message : err.message
        throw new Refusal(
          502,
          'Sign-in could not be verified',
          `The identity provider's answer failed a check (${what}), so you were not signed in. Start again; if it goes on, tell your administrator.`,
          'token-invalid',
          { error: describe(err) }
        )
      }
      throw unreachable(err)
    }
    const claims = tokens.claims()!
    const claim = o.match
    let value: unknown = claims[claim]
    let verified: unknown = claims.email_verified
    if (value === undefined && tokens.access_token && config.serverMetadata().userinfo_endpoint) {
      // Providers may return scope claims (email) only from UserInfo (OpenID Connect Core 5.4); its subject must be the ID token's.
      const info = await oidc
        .fetchUserInfo(config, tokens.access_token, claims.sub)
        .catch((err) => Promise.reject(unreachable(err)))
      value = info[claim]
      verified = info.email_verified
    }
    const details = { sub: claims.sub, [claim]: value }
    if (typeof value !== 'string' || !value) {
      throw new Refusal(
        403,
        'Account not recognised',
        `Your identity provider did not say which account you are (its answer has no "${claim}" claim, which this organisation's single sign-on uses to find you). Tell your administrator.`,
        'claim-missing',
        details
      )
    }
    if (claim === 'email' && verified === false) {
      throw new Refusal(
        403,
        'Email not verified',
        `Your identity provider says your email address ${value} is not verified, so it cannot identify you here. Verify it there, or ask your administrator.`,
        'email-unverified',
        details
      )
    }
    const users = await platform.users.forSignIn(tenantId, claim === 'email' ? { email: value } : { externalId: value })
    const tenantName = platform.tenants.get(tenantId)?.name ?? tenantId
    const email = claim === 'email' ? value : claims.email
    // Which IdP account it was, for the person and the administrator they ask.
    const shown = typeof email === 'string' ? ` as ${email}` : ` (account ${value})`
    if (users.length === 0) {
      throw new Refusal(
        403,
        'No account here for you',
        `You signed in at your identity provider${shown}, but ${tenantName} has no account for you in Records. Ask your administrator to assign you the Records app in Entra ID or Okta; once it has provisioned your account, sign in again.`,
        'unknown-user',
        details
      )
    }
    if (users.length > 1) {
      throw new Refusal(
        403,
        'Account not clear',
        `You signed in at your identity provider${shown}, but more than one account of ${tenantName} matches it, so none was chosen. Ask your administrator to correct the accounts.`,
        'ambiguous-user',
        details
      )
    }
    const [user] = users
    if (!user.active) {
      throw new Refusal(
        403,
        'Account deactivated',
        `Your account in ${tenantName} is deactivated, so you cannot sign in. If you should have access, ask your administrator to reactivate it (in Entra ID or Okta, where it is managed).`,
        'inactive-user',
        { ...details, userId: user.id }
      )
    }
    return { user, next: flow.next, sub: claims.sub }
  }

  async function callback(r: PageRequest) {
    const tenantId = r.params.tenant
    // The flow is used once, whatever the outcome.
    r.ctx.set('Set-Cookie', flowCookieHeader('', 0))
    const { user, next, sub } = await signedInUser(r, tenantId, configured(tenantId))
    // As after a password sign-in: a fresh session id, whatever cookie came before.
    await platform.sessions.destroy(r.ctx.cookies.get(sessionCookie))
    const session = await platform.sessions.create(user.tenantId, user.id)
    await platform.users.recordSignIn(user.tenantId, user.id)
    r.ctx.append('Set-Cookie', sessionCookieHeader(session.cookieValue, platform.config.sessions.ttlHours * 3600))
    logger.info('oidc sign-in', { tenantId, userId: user.id, sub, traceId: r.ctx.state.traceId })
    seeOther(r, next)
  }

  /** Refusals as pages that lead back to the tenant's sign-in, each logged with its reason. */
  const refusing = (handler: (r: PageRequest) => Promise<void>) => async (r: PageRequest) => {
    try {
      await handler(r)
    } catch (err) {
      if (!(err instanceof Refusal)) throw err
      logger.warn('oidc sign-in refused', {
        tenantId: r.params.tenant,
        reason: err.reason,
        ...err.details,
        traceId: r.ctx.state.traceId
      })
      const back = { href: `/sign-in?tenant=${encodeURIComponent(r.params.tenant)}`, text: 'Back to sign in' }
      sendPage(r, err.status, messagePage({ ...frameFor(r, sessionOf(r)), title: err.title }, err.message, back))
    }
  }

  return [
    {
      method: 'GET',
      path: new RegExp(`^\\/sign-in\\/oidc\\/${tenantSegment}$`),
      keys: ['tenant'],
      handler: refusing(start)
    },
    {
      method: 'GET',
      path: new RegExp(`^\\/sign-in\\/oidc\\/${tenantSegment}\\/callback$`),
      keys: ['tenant'],
      handler: refusing(callback)
    }
  ]
}
