import { FeathersError } from '@feathersjs/errors'
import type { Middleware } from 'koa'
import type { Principal } from '../../core/auth/principal.ts'
import type { App } from '../../core/declarations.ts'
import { patternTemplate, setRouteTemplate } from '../../core/http/route-template.ts'
import { logger } from '../../core/logger.ts'
import { messagePage } from './layout.ts'
import { PageError } from './page-error.ts'
import { frameFor, homeOf, sendPage, sessionOf, type PageRequest, type PageRoute } from './page-request.ts'
import { newNonce, setPageHeaders } from './security.ts'

/** A link of the settings navigation, shown to a signed-in user on every page (or to those `visible` admits). */
export interface NavLink {
  href: string
  label: string
  /** Whom the link is shown to, when not everyone signed in may use the page (e.g. admins only). */
  visible?: (principal: Principal) => boolean
  /** Shown before the links without one (the records workspace before the settings pages). */
  first?: boolean
  /** The link is current on every page below it too (`/records/incident` under `/records`). */
  section?: boolean
}

/** What a feature adds to the browser pages: its routes and, for the pages a person opens from the menu, a link. */
export interface PageSet {
  routes: readonly PageRoute[]
  nav?: readonly NavLink[]
  /** The page a person lands on after signing in and through the brand link (the last set naming one wins; default: the API keys page). */
  home?: string
}

declare module '../../core/declarations.ts' {
  interface Settings {
    /**
     * Every page route and navigation link registered so far (pageRouter), in registration
     * order: the navigation reads it, and the side-channel test lists its doors from it.
     */
    settingsPages?: { routes: readonly PageRoute[]; nav: readonly NavLink[]; home?: string }
  }
}

function match(
  routes: readonly PageRoute[],
  method: string,
  path: string
): { route?: PageRoute; params: Record<string, string>; allowed: string[] } | undefined {
  const allowed: string[] = []
  let found: { route: PageRoute; params: Record<string, string> } | undefined
  for (const route of routes) {
    const m = route.path.exec(path)
    if (!m) continue
    allowed.push(route.method)
    if (found || (route.method !== method && !(route.method === 'GET' && method === 'HEAD'))) continue
    const params: Record<string, string> = {}
    route.keys?.forEach((k, i) => (params[k] = m[i + 1]))
    found = { route, params }
  }
  if (!allowed.length) return undefined
  return { route: found?.route, params: found?.params ?? {}, allowed }
}

/** The template of the first route matching `path` (its metrics and request-log label). */
function routeOf(routes: readonly PageRoute[], path: string): string {
  const route = routes.find((r) => r.path.test(path))!
  return patternTemplate(route.path, route.keys)
}

/** A refusal or failure as a page a person can read, in place of problem+json. */
function renderFailure(r: PageRequest, err: unknown) {
  let status = 500
  let title = 'Something went wrong'
  let message = `The page could not be shown; nothing was changed. Quote this reference if you report it: ${r.ctx.state.traceId ?? 'unknown'}.`
  if (err instanceof PageError) {
    ;({ status, title, message } = err)
    r.ctx.set(err.headers)
  } else if (err instanceof FeathersError && err.code < 500) {
    // ApiError is one: a refusal by the tokens service (e.g. a token that is not yours).
    status = err.code
    title = status === 404 ? 'Not found' : status === 403 ? 'Not allowed' : 'Request refused'
    message = err.message
  } else {
    logger.error('settings page failed', {
      traceId: r.ctx.state.traceId,
      method: r.ctx.method,
      path: r.ctx.path,
      error: (err as Error)?.stack ?? String(err)
    })
  }
  const session = sessionOf(r)
  const link = session
    ? { href: homeOf(r.app), text: 'Back to the start page' }
    : { href: '/sign-in', text: 'Go to sign in' }
  sendPage(r, status, messagePage({ ...frameFor(r, session), title }, message, link))
}

/**
 * Server-rendered pages for people in a browser, as Koa middleware after Feathers' REST
 * layer (which passes on every path that is no service): each response gets a fresh CSP
 * nonce and the pages' security headers, a wrong method a 405 page, a failure a page
 * rather than problem+json. Identify has already resolved the session cookie
 * (ctx.state.session). Every feature with pages mounts its own router (the settings
 * plugin for sign-in and API keys, graphql for its console), so the pages of a removed
 * feature go with it; the registration is recorded in `settingsPages`.
 */
export function pageRouter(app: App, set: PageSet): Middleware {
  const before = app.get('settingsPages') ?? { routes: [], nav: [] }
  // By label, so the menu reads the same whatever the order of the plugins.
  const nav = [...before.nav, ...(set.nav ?? [])].sort(
    (a, b) => Number(!!b.first) - Number(!!a.first) || a.label.localeCompare(b.label)
  )
  app.set('settingsPages', { routes: [...before.routes, ...set.routes], nav, home: set.home ?? before.home })
  const platform = app.get('platform')
  return async (ctx, next) => {
    const found = match(set.routes, ctx.method, ctx.path)
    if (!found) return next()
    setRouteTemplate(ctx, routeOf(set.routes, ctx.path))
    const nonce = newNonce()
    setPageHeaders(ctx, nonce)
    const r: PageRequest = { ctx, app, platform, nonce, params: {} }
    if (!found.route) {
      const allowed = [...new Set(found.allowed.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m])))]
      ctx.set('Allow', allowed.join(', '))
      return renderFailure(
        r,
        new PageError(
          405,
          'Method not allowed',
          `${ctx.method} is not accepted here; this address takes ${allowed.join(', ')}.`
        )
      )
    }
    try {
      r.params = Object.fromEntries(Object.entries(found.params).map(([k, v]) => [k, decodeURIComponent(v)]))
    } catch {
      return renderFailure(r, new PageError(404, 'Not found', 'There is no such page.'))
    }
    try {
      await found.route.handler(r)
    } catch (err) {
      renderFailure(r, err)
    }
  }
}
