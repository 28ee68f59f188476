import type { Middleware } from 'koa'
import { isAdmin } from '../../core/auth/principal.ts'
import type { Session } from '../../core/auth/sessions.ts'
import type { App } from '../../core/declarations.ts'
import {
  assertCsrf,
  assertSameOrigin,
  frameFor,
  pageRouter,
  readForm,
  sendPage,
  seeOther,
  sessionOf,
  signInLocation,
  type PageRequest,
  type PageRoute
} from '../settings/settings.shared.ts'
import { webhookDeliveriesPath, webhooksPath } from './webhooks.shared.ts'
import { attemptsShown, notices, webhooksPage, webhooksPagePath, type Notice } from './webhooks.views.ts'

export { webhooksPagePath }

/**
 * The page is one more door onto the webhooks services, with the session's principal: the
 * same rules as REST (admin only, scope webhooks:write, the tenant pinned) decide, so a
 * user who is no admin gets the services' 403 as the pages' refusal page, and a
 * subscription of another tenant is the services' 404.
 */
function services(r: PageRequest, session: Session) {
  const params = { provider: 'browser', principal: session.principal }
  const webhooks = r.app.service(webhooksPath)
  return {
    find: () => webhooks.find(params),
    get: (id: string) => webhooks.get(id, params),
    attempts: (id: string) =>
      r.app
        .service(webhookDeliveriesPath)
        .find({ ...params, route: { webhookId: id }, query: { limit: attemptsShown } }),
    test: (id: string) => webhooks.test({}, { ...params, id }),
    resume: (id: string) => webhooks.patch(id, { enabled: true }, params)
  }
}

/** The session, or a redirect to sign in (and then come back to this page). */
function signedIn(r: PageRequest): Session | undefined {
  const session = sessionOf(r)
  if (!session) seeOther(r, signInLocation(webhooksPagePath))
  return session
}

async function show(r: PageRequest) {
  const session = signedIn(r)
  if (!session) return
  const s = services(r, session)
  const { items } = await s.find()
  // One log read per subscription, one after another: a tenant has a handful, and each is a short index scan.
  const subscriptions = []
  for (const webhook of items) subscriptions.push({ webhook, attempts: (await s.attempts(webhook.id)).items })
  const done = String(r.ctx.query.done ?? '')
  const notice = Object.hasOwn(notices, done) ? (done as Notice) : undefined
  sendPage(
    r,
    200,
    webhooksPage({
      frame: frameFor(r, session),
      subscriptions,
      disableAfterFailingHours: r.platform.config.webhooks.disableAfterFailingHours,
      notice
    })
  )
}

/** A POST of the page: same origin, signed in, the session's CSRF token; then the action and a 303 back to the page. */
function action(run: (s: ReturnType<typeof services>, id: string) => Promise<Notice>) {
  return async (r: PageRequest) => {
    assertSameOrigin(r.ctx, r.platform.config.publicUrl)
    const session = signedIn(r)
    if (!session) return
    assertCsrf(session, await readForm(r.ctx))
    const notice = await run(services(r, session), r.params.id)
    seeOther(r, `${webhooksPagePath}?done=${notice}`)
  }
}

const sendTest = action(async (s, id) => {
  // The service queues a test for a disabled subscription too; it goes out once resumed, and the notice says so.
  const { enabled } = await s.get(id)
  await s.test(id)
  return enabled ? 'tested' : 'tested-paused'
})

const resume = action(async (s, id) => {
  // Resuming an enabled subscription would restart its failure clock (failingSince), so it is left as it is.
  if ((await s.get(id)).enabled) return 'already-enabled'
  await s.resume(id)
  return 'resumed'
})

export const webhookPageRoutes: PageRoute[] = [
  { method: 'GET', path: /^\/settings\/webhooks$/, handler: show },
  { method: 'POST', path: /^\/settings\/webhooks\/([^/]+)\/test$/, keys: ['id'], handler: sendTest },
  { method: 'POST', path: /^\/settings\/webhooks\/([^/]+)\/resume$/, keys: ['id'], handler: resume }
]

/**
 * The webhooks settings page. No link in the settings menu: the menu shows every link to
 * every signed-in user, and this page refuses all but tenant admins (the API key and
 * GraphQL pages serve everyone). Linked from the docs and README instead.
 */
export function webhookPages(app: App): Middleware {
  return pageRouter(app, {
    routes: webhookPageRoutes,
    nav: [{ href: webhooksPagePath, label: 'Webhooks', visible: isAdmin }]
  })
}
