import type { ParameterizedContext } from 'koa'
import type { Session } from '../../core/auth/sessions.ts'
import type { App, Platform } from '../../core/declarations.ts'
import type { PageFrame } from './layout.ts'

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

/** The signed-in session that identify resolved from the cookie, if any. */
export function sessionOf(r: PageRequest): Session | undefined {
  return r.ctx.state.session as Session | undefined
}

/** The parts of the page frame that depend on who is signed in: who, and the menu of pages. */
export function frameFor(
  r: PageRequest,
  session: Session | undefined
): Omit<PageFrame, 'main' | 'title' | 'script' | 'head'> {
  if (!session) return { nonce: r.nonce }
  const p = session.principal
  const nav = (r.app.get('settingsPages')?.nav ?? [])
    .filter((l) => !l.visible || l.visible(p))
    .map((l) => ({ href: l.href, label: l.label, current: l.href === r.ctx.path }))
  return {
    nonce: r.nonce,
    nav,
    account: {
      name: p.actor.name,
      tenantName: r.platform.tenants.get(p.tenantId)?.name ?? p.tenantId,
      csrfToken: session.csrfToken
    }
  }
}
