import type { ParameterizedContext } from 'koa'
import type { Session } from '../../core/auth/sessions.ts'
import type { App, Platform } from '../../core/declarations.ts'
import { readForm } from './form-body.ts'
import type { PageFrame } from './layout.ts'
import { assertCsrf, assertSameOrigin, signInLocation } from './security.ts'

/** One request to a settings page, with what every handler needs. */
export interface PageRequest {
  ctx: ParameterizedContext
  app: App
  platform: Platform
  /** The CSP nonce of this response. */
  nonce: string
  /** Path parameters of the matched route, e.g. the token id. */
  params: Record<string, string>
}

export interface PageRoute {
  method: 'GET' | 'POST'
  path: RegExp
  /** Names of the capture groups of `path`, in order. */
  keys?: string[]
  handler(r: PageRequest): Promise<void>
}

/** Where a signed-in person starts: the records workspace when it is installed, else the API keys page. */
export const homeOf = (app: App): string => app.get('settingsPages')?.home ?? '/settings/api-keys'

export function sendPage(r: PageRequest, status: number, body: string) {
  r.ctx.status = status
  r.ctx.type = 'text/html; charset=utf-8'
  r.ctx.body = body
}

/** 303: the browser follows with a GET, so a reload never re-sends the form. */
export function seeOther(r: PageRequest, location: string) {
  r.ctx.status = 303
  r.ctx.set('Location', location)
  r.ctx.body = ''
}

/**
 * The signed-in session, or a redirect to sign in and come back to `back` (the page itself by default; a form's
 * handler names the page the form is on, since the browser comes back with a GET).
 */
export function signedIn(
  r: PageRequest,
  back = r.ctx.path + (r.ctx.querystring ? `?${r.ctx.querystring}` : '')
): Session | undefined {
  const session = sessionOf(r)
  if (!session) seeOther(r, signInLocation(back))
  return session
}

/**
 * A signed-in form, the one door of every POST of a signed-in page: sent from this site, by a signed-in person, with
 * the session's CSRF token; undefined when nobody is signed in (the browser is sent to sign in and back to `back`).
 */
export async function postedForm(
  r: PageRequest,
  back: string,
  maxBytes?: number
): Promise<{ session: Session; form: URLSearchParams } | undefined> {
  assertSameOrigin(r.ctx, r.platform.config.publicUrl)
  const session = signedIn(r, back)
  if (!session) return undefined
  const form = await readForm(r.ctx, maxBytes)
  assertCsrf(session, form)
  return { session, form }
}

/** The signed-in session that identify resolved from the cookie, if any. */
export function sessionOf(r: PageRequest): Session | undefined {
  return r.ctx.state.session as Session | undefined
}

/** The parts of the page frame that depend on who is signed in: who, and the menu of pages. */
export function frameFor(
  r: PageRequest,
  session: Session | undefined
): Omit<PageFrame, 'main' | 'title' | 'script' | 'head'> {
  if (!session) return { nonce: r.nonce, home: homeOf(r.app) }
  const p = session.principal
  const nav = (r.app.get('settingsPages')?.nav ?? [])
    .filter((l) => !l.visible || l.visible(p))
    .map((l) => ({
      href: l.href,
      label: l.label,
      // The page itself is `page`; a page below a section's link (a record under /records) makes the link `true`.
      current:
        l.href === r.ctx.path
          ? ('page' as const)
          : l.section && r.ctx.path.startsWith(`${l.href}/`)
            ? ('true' as const)
            : undefined
    }))
  return {
    nonce: r.nonce,
    home: homeOf(r.app),
    nav,
    account: {
      name: p.actor.name,
      tenantName: r.platform.tenants.get(p.tenantId)?.name ?? p.tenantId,
      csrfToken: session.csrfToken
    }
  }
}
