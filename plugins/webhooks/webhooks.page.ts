import type { Middleware } from 'koa'
import { isAdmin } from '../../core/auth/principal.ts'
import type { Session } from '../../core/auth/sessions.ts'
import type { App } from '../../core/declarations.ts'
import { ApiError, type FieldProblem } from '../../core/errors/index.ts'
import { eventKinds } from '../../core/events/events.ts'
import {
  frameFor,
  pageRouter,
  postedForm,
  sendPage,
  seeOther,
  signedIn,
  type PageRequest,
  type PageRoute
} from '../settings/settings.shared.ts'
import { subscribableKinds } from './webhooks.class.ts'
import {
  deletePage,
  editPage,
  emptySubscription,
  formOf,
  secretPage,
  type FieldErrors,
  type FormChoices,
  type FormField,
  type SubscriptionForm
} from './webhooks.forms.ts'
import type { WebhookData, WebhookOut, WebhookPatch } from './webhooks.schema.ts'
import { webhookDeliveriesPath, webhooksPath, webhookTestKind } from './webhooks.shared.ts'
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
    resume: (id: string) => webhooks.patch(id, { enabled: true }, params),
    create: (data: WebhookData) => webhooks.create(data, params),
    patch: (id: string, data: WebhookPatch) => webhooks.patch(id, data, params),
    rotate: (id: string) => webhooks['rotate-secret']({}, { ...params, id }),
    remove: (id: string) => webhooks.remove(id, params)
  }
}

/** The kinds the service accepts and the tenant's modules: what the forms offer, nothing the service would refuse. */
function choicesOf(r: PageRequest, session: Session): FormChoices {
  const described: Record<string, string> = {
    ...eventKinds,
    [webhookTestKind]: 'The test ping sent by “Send test event”.'
  }
  return {
    kinds: subscribableKinds.map((key) => ({ key, description: described[key] ?? '' })),
    modules: [...(r.platform.tenants.get(session.principal.tenantId)?.modules.keys() ?? [])]
  }
}

async function show(r: PageRequest) {
  const session = signedIn(r, webhooksPagePath)
  if (!session) return
  await showList(r, session, 200, emptySubscription, {})
}

async function showList(r: PageRequest, session: Session, status: number, form: SubscriptionForm, errors: FieldErrors) {
  const s = services(r, session)
  const { items } = await s.find()
  // One log read per subscription, one after another: a tenant has a handful, and each is a short index scan.
  const subscriptions = []
  for (const webhook of items) subscriptions.push({ webhook, attempts: (await s.attempts(webhook.id)).items })
  const done = String(r.ctx.query.done ?? '')
  const notice = Object.hasOwn(notices, done) ? (done as Notice) : undefined
  sendPage(
    r,
    status,
    webhooksPage({
      frame: frameFor(r, session),
      subscriptions,
      disableAfterFailingHours: r.platform.config.webhooks.disableAfterFailingHours,
      notice: status === 200 ? notice : undefined,
      form,
      choices: choicesOf(r, session),
      errors
    })
  )
}

/** A POST of the page: same origin, signed in, the session's CSRF token; then the action and a 303 back to the page. */
function action(run: (s: ReturnType<typeof services>, id: string) => Promise<Notice>) {
  return async (r: PageRequest) => {
    const posted = await postedForm(r, webhooksPagePath)
    if (!posted) return
    const notice = await run(services(r, posted.session), r.params.id)
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

/** The form's fields as the form sent them (checkboxes repeat; duplicates dropped). */
function formInput(form: URLSearchParams): SubscriptionForm {
  const list = (name: string) => [...new Set(form.getAll(name).map((v) => v.trim()))].filter(Boolean)
  return {
    url: (form.get('url') ?? '').trim(),
    description: (form.get('description') ?? '').trim(),
    kinds: list('kinds'),
    modules: list('modules'),
    enabled: form.get('enabled') === 'true'
  }
}

const formFields = new Set<FormField>(['url', 'description', 'kinds', 'modules', 'enabled'])

/**
 * The service's refusal, beside the field it names: a validation problem by its `field`
 * (`kinds.0` is the kinds), a refused target beside the URL; anything else above the form.
 */
function errorsOf(err: ApiError): FieldErrors {
  const out: FieldErrors = {}
  const add = (f: FormField, m: string) => {
    if (!out[f]?.includes(m)) (out[f] ??= []).push(m)
  }
  const list = err.extra.errors as FieldProblem[] | undefined
  if (err.problemCode === 'webhook.target_refused') add('url', err.message)
  else if (list?.length) {
    for (const e of list) {
      const f = e.field.split(/[./[]/)[0] as FormField
      add(formFields.has(f) ? f : '', formFields.has(f) ? `${e.detail}.` : `${e.field} ${e.detail}.`)
    }
  } else add('', err.message)
  return out
}

/** Runs a call of the service; its refusals (4xx) come back as the form's problems, anything else fails the page. */
async function attempt<T>(call: () => Promise<T>): Promise<{ ok: T } | { errors: FieldErrors; status: number }> {
  try {
    return { ok: await call() }
  } catch (err) {
    if (err instanceof ApiError && err.code < 500) return { errors: errorsOf(err), status: err.code }
    throw err
  }
}

const posted = (r: PageRequest) => postedForm(r, webhooksPagePath)

async function create(r: PageRequest) {
  const got = await posted(r)
  if (!got) return
  const input = formInput(got.form)
  const data: WebhookData = {
    url: input.url,
    kinds: input.kinds,
    ...(input.modules.length ? { modules: input.modules } : {}),
    ...(input.description ? { description: input.description } : {})
  }
  const done = await attempt(() => services(r, got.session).create(data))
  if ('errors' in done) return showList(r, got.session, done.status, input, done.errors)
  // In this answer only, never stored or redirected to: the secret exists only here.
  sendPage(r, 201, secretPage(frameFor(r, got.session), done.ok, true))
}

function sendEdit(
  r: PageRequest,
  session: Session,
  status: number,
  webhook: WebhookOut,
  o: Partial<Parameters<typeof editPage>[0]> = {}
) {
  sendPage(
    r,
    status,
    editPage({
      frame: frameFor(r, session),
      webhook,
      form: formOf(webhook),
      choices: choicesOf(r, session),
      errors: {},
      ...o
    })
  )
}

async function showEdit(r: PageRequest) {
  const session = signedIn(r, webhooksPagePath)
  if (!session) return
  sendEdit(r, session, 200, await services(r, session).get(r.params.id))
}

/** Only what the form changed is sent: an unchanged URL is not checked again, an enabled subscription not resumed (which would restart its failure clock). */
function changes(before: WebhookOut, f: SubscriptionForm): WebhookPatch {
  const same = (a: string[], b: string[]) => a.length === b.length && a.every((x) => b.includes(x))
  const patch: WebhookPatch = {}
  if (f.url !== before.url) patch.url = f.url
  if ((f.description || null) !== before.description) patch.description = f.description || null
  if (!same(f.kinds, before.kinds)) patch.kinds = f.kinds
  if (!same(f.modules, before.modules ?? [])) patch.modules = f.modules.length ? f.modules : null
  if (f.enabled !== before.enabled) patch.enabled = f.enabled
  return patch
}

async function update(r: PageRequest) {
  const got = await posted(r)
  if (!got) return
  const s = services(r, got.session)
  const before = await s.get(r.params.id)
  const input = formInput(got.form)
  const patch = changes(before, input)
  if (!Object.keys(patch).length) return seeOther(r, `${webhooksPagePath}?done=unchanged`)
  const done = await attempt(() => s.patch(before.id, patch))
  if ('errors' in done) return sendEdit(r, got.session, done.status, before, { form: input, errors: done.errors })
  seeOther(r, `${webhooksPagePath}?done=updated#webhook-${before.id}`)
}

async function rotate(r: PageRequest) {
  const got = await posted(r)
  if (!got) return
  const s = services(r, got.session)
  const done = await attempt(() => s.rotate(r.params.id))
  if ('errors' in done) {
    const before = await s.get(r.params.id)
    return sendEdit(r, got.session, done.status, before, { rotateError: Object.values(done.errors).flat().join(' ') })
  }
  sendPage(r, 200, secretPage(frameFor(r, got.session), done.ok, false))
}

async function confirmDelete(r: PageRequest) {
  const session = signedIn(r, webhooksPagePath)
  if (!session) return
  sendPage(r, 200, deletePage(frameFor(r, session), await services(r, session).get(r.params.id)))
}

async function remove(r: PageRequest) {
  const got = await posted(r)
  if (!got) return
  await services(r, got.session).remove(r.params.id)
  seeOther(r, `${webhooksPagePath}?done=deleted`)
}

export const webhookPageRoutes: PageRoute[] = [
  { method: 'GET', path: /^\/settings\/webhooks$/, handler: show },
  { method: 'POST', path: /^\/settings\/webhooks$/, handler: create },
  { method: 'GET', path: /^\/settings\/webhooks\/([^/]+)\/edit$/, keys: ['id'], handler: showEdit },
  { method: 'POST', path: /^\/settings\/webhooks\/([^/]+)\/edit$/, keys: ['id'], handler: update },
  { method: 'POST', path: /^\/settings\/webhooks\/([^/]+)\/rotate-secret$/, keys: ['id'], handler: rotate },
  { method: 'GET', path: /^\/settings\/webhooks\/([^/]+)\/delete$/, keys: ['id'], handler: confirmDelete },
  { method: 'POST', path: /^\/settings\/webhooks\/([^/]+)\/delete$/, keys: ['id'], handler: remove },
  { method: 'POST', path: /^\/settings\/webhooks\/([^/]+)\/test$/, keys: ['id'], handler: sendTest },
  { method: 'POST', path: /^\/settings\/webhooks\/([^/]+)\/resume$/, keys: ['id'], handler: resume }
]

/** The webhooks settings pages; the menu links them for tenant admins, the only ones the service serves. */
export function webhookPages(app: App): Middleware {
  return pageRouter(app, {
    routes: webhookPageRoutes,
    nav: [{ href: webhooksPagePath, label: 'Webhooks', visible: isAdmin }]
  })
}
