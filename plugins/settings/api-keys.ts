import type { Session } from '../../core/auth/sessions.ts'
import { isAdmin } from '../../core/auth/principal.ts'
import { ApiError, type FieldProblem } from '../../core/errors/index.ts'
import type { TokenData, TokenGrant, TokenOut } from '../tokens/tokens.shared.ts'
import { tokensPath } from '../tokens/tokens.shared.ts'
import {
  createdPage,
  emptyForm,
  expiryChoices,
  listPage,
  type CreateForm,
  type ExpiryChoice
} from './api-keys.views.ts'
import { field } from './form-body.ts'
import { frameFor, postedForm, sendPage, seeOther, signedIn, type PageRequest, type PageRoute } from './page-request.ts'

export const apiKeysPath = '/settings/api-keys'
const dayMs = 86_400_000

/**
 * The pages are one more door onto the tokens service: the same hooks and rules as REST
 * (who may create which type, scopes, expiry) apply, with the session's principal.
 */
function tokens(r: PageRequest, session: Session) {
  const service = r.app.service(tokensPath)
  const params = { provider: 'browser', principal: session.principal }
  return {
    find: () => service.find({ ...params, query: isAdmin(session.principal) ? { all: true } : {} }),
    create: (data: TokenData) => service.create(data, params),
    remove: (id: string) => service.remove(id, params),
    // The form offers exactly what the service would accept from this principal.
    grant: (): TokenGrant => service.grant(params)
  }
}

/** The titles of the tenant's modules, for the module pickers. */
function moduleTitles(r: PageRequest, session: Session): Record<string, string> {
  const titles: Record<string, string> = {}
  for (const [key, m] of r.platform.tenants.get(session.principal.tenantId)?.modules ?? [])
    titles[key] = m.definition.title ?? key
  return titles
}

async function renderList(
  r: PageRequest,
  session: Session,
  status: number,
  form: CreateForm,
  errors: string[],
  notice?: string
) {
  const door = tokens(r, session)
  const { items } = await door.find()
  sendPage(
    r,
    status,
    listPage({
      frame: frameFor(r, session),
      tokens: items,
      admin: isAdmin(session.principal),
      grant: door.grant(),
      modules: moduleTitles(r, session),
      form,
      errors,
      notice
    })
  )
}

async function showList(r: PageRequest) {
  const session = signedIn(r, apiKeysPath)
  if (!session) return
  const notice =
    r.ctx.query.revoked === '1' ? 'The token was revoked: every call made with it now fails with 401.' : undefined
  await renderList(r, session, 200, emptyForm, [], notice)
}

function formInput(form: URLSearchParams): CreateForm {
  const expires = field(form, 'expires')
  const listed = (name: string) => [
    ...new Set(
      form
        .getAll(name)
        .map((s) => s.trim())
        .filter(Boolean)
    )
  ]
  return {
    name: field(form, 'name'),
    type: field(form, 'type') || 'personal',
    // A module picked beside a module-bound scope narrows it to that module (`records:read:incident`),
    // and picking one is asking for the scope, ticked or not.
    scopes: [
      ...new Set([
        ...listed('scopes'),
        ...[...form.keys()]
          .filter((k) => k.startsWith('module:') && field(form, k))
          .map((k) => k.slice('module:'.length))
      ])
    ].map((s) => {
      const moduleKey = field(form, `module:${s}`)
      return moduleKey ? `${s}:${moduleKey}` : s
    }),
    roles: listed('roles'),
    expires: (expiryChoices as readonly string[]).includes(expires) ? (expires as ExpiryChoice) : 'never',
    expiresOn: field(form, 'expiresOn')
  }
}

/** The service's input from the form, or the problems that stop it before the service is asked. */
function tokenData(f: CreateForm, raw: URLSearchParams): { data: TokenData; problems: string[] } {
  const problems: string[] = []
  if (!f.name) problems.push('Name: give the token a name, so you can recognise it later.')
  if (!(expiryChoices as readonly string[]).includes(field(raw, 'expires')))
    problems.push('Expires: choose when the token stops working.')
  let expiresAt: string | undefined
  if (f.expires === 'date') {
    // A round trip catches dates that Date.parse quietly rolls over (2026-02-30 → 2026-03-02).
    const day = /^\d{4}-\d{2}-\d{2}$/.test(f.expiresOn) ? new Date(`${f.expiresOn}T00:00:00Z`) : undefined
    const valid = !!day && !Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === f.expiresOn
    if (!valid) problems.push('Expiry date: pick a date, or another expiry choice.')
    else expiresAt = `${f.expiresOn}T23:59:59Z`
  } else if (f.expires !== 'never') {
    expiresAt = new Date(Date.now() + Number(f.expires) * dayMs).toISOString()
  }
  const data = {
    type: f.type,
    name: f.name,
    ...(f.scopes.length ? { scopes: f.scopes } : {}),
    ...(f.roles.length ? { roles: f.roles } : {}),
    ...(expiresAt ? { expiresAt } : {})
  } as TokenData
  return { data, problems }
}

const fieldLabels: Record<string, string> = {
  name: 'Name',
  type: 'Type',
  scopes: 'Scopes',
  expiresAt: 'Expiry date',
  roles: 'Roles'
}

/** The service's refusal, in the words of the form. */
function messagesOf(err: ApiError): string[] {
  const errors = err.extra.errors as FieldProblem[] | undefined
  if (!errors?.length) return [err.message]
  // One message per field: a value failing a union (date-time or null) is reported once per branch.
  const first = new Map<string, string>()
  for (const e of errors)
    if (!first.has(e.field)) first.set(e.field, `${fieldLabels[e.field.split('.')[0]] ?? e.field}: ${e.detail}.`)
  return [...first.values()]
}

async function create(r: PageRequest) {
  const posted = await postedForm(r, apiKeysPath)
  if (!posted) return
  const { session, form: raw } = posted
  const input = formInput(raw)
  const { data, problems } = tokenData(input, raw)
  if (problems.length) return renderList(r, session, 400, input, problems)
  let created: TokenOut
  try {
    created = await tokens(r, session).create(data)
  } catch (err) {
    if (err instanceof ApiError && err.code < 500) return renderList(r, session, err.code, input, messagesOf(err))
    throw err
  }
  // Rendered in this response, never stored or redirected to: the full token exists only here.
  sendPage(r, 201, createdPage(frameFor(r, session), created))
}

async function revoke(r: PageRequest) {
  const posted = await postedForm(r, apiKeysPath)
  if (!posted) return
  await tokens(r, posted.session).remove(r.params.id)
  seeOther(r, `${apiKeysPath}?revoked=1`)
}

export const apiKeyRoutes: PageRoute[] = [
  { method: 'GET', path: /^\/settings\/api-keys$/, handler: showList },
  { method: 'POST', path: /^\/settings\/api-keys$/, handler: create },
  { method: 'POST', path: /^\/settings\/api-keys\/([^/]+)\/revoke$/, keys: ['id'], handler: revoke }
]
