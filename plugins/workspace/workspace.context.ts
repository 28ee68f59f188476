import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { can, hiddenFields, writesField } from '../../core/auth/access.ts'
import type { Principal } from '../../core/auth/principal.ts'
import type { Session } from '../../core/auth/sessions.ts'
import { ApiError, type FieldProblem } from '../../core/errors/index.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { FieldDefinition } from '../../core/modules/types.ts'
import { isUuid } from '../../core/validation.ts'
import { recordsPath } from '../records/records.shared.ts'
import { PageError, type PageRequest } from '../settings/settings.shared.ts'
import { namedIds, type Names } from './workspace.fields.ts'

/** The most people a user field's picker offers (the tenant's active users by name); more is a typed user name. */
export const peopleCap = 500

/** The referenced records of one module a page names by number (a list page's references: its 50 records' fields). */
const referencesShown = 200

/** People a picker offers: the first `peopleCap` by name, and whether they are all the tenant's active people. */
export interface People {
  list: ReadonlyArray<{ id: string; name: string }>
  complete: boolean
}

/** No people: a page that names nobody (a form without a user field this person may write) loads none. */
export const nobody: People = { list: [], complete: true }

/** A record as the records service answers it (REST's JSON body). */
export interface RecordView {
  id: string
  moduleKey: string
  number: string
  state: string
  version: number
  createdAt: string
  updatedAt: string
  createdBy: { name: string; id: string; type: string }
  updatedBy: { name: string }
  payload: Record<string, unknown>
  activity?: Array<{
    id: number
    at: string
    actor: { name: string; onBehalfOf?: { name: string } }
    action: string
    changes: Array<{ field: string; from: unknown; to: unknown }>
    transition: { key: string; from: string; to: string } | null
    comment: string | null
  }>
  attachments?: Array<{
    id: string
    fileName: string
    contentType: string
    size: number
    uploadedAt: string
    uploadedBy: { name: string }
  }>
  availableTransitions?: Array<{
    key: string
    label: string
    to: string
    missingFields: string[]
    refusal?: { code: string; detail: string }
  }>
}

/**
 * One request of a workspace page, for the person signed in: the modules they may read, and the records service
 * called with their principal, exactly as REST and GraphQL call it (provider `browser`), so every rule of the
 * service (rights, rows, fields, validation, idempotency, limits) is the page's rule too.
 */
export class Desk {
  readonly principal: Principal

  constructor(
    readonly r: PageRequest,
    readonly session: Session
  ) {
    this.principal = session.principal
  }

  /** Params of a service call by this person; `extra` adds ifMatch, idempotencyKey, query… */
  call<E extends object>(extra?: E) {
    return { provider: 'browser', principal: this.principal, ...(extra as E) }
  }

  /** Params of a call on one record of `m`: the service answers 404 for a record of another module (as for none). */
  onRecord<E extends object>(m: RegisteredModule, extra?: E) {
    return this.call({ moduleKey: m.definition.key, ...(extra as E) })
  }

  get records() {
    return this.r.app.service(recordsPath)
  }

  /** The tenant's modules this person may read records of, by title. */
  modules(): RegisteredModule[] {
    const tenant = this.r.platform.tenants.get(this.principal.tenantId)
    return [...(tenant?.modules.values() ?? [])]
      .filter((m) => can(this.principal, m, 'read'))
      .sort((a, b) => a.definition.title.localeCompare(b.definition.title))
  }

  /** A module of the tenant this person may read, or a 404 page (the same answer for one that does not exist). */
  module(key: string): RegisteredModule {
    const m = this.r.platform.tenants.get(this.principal.tenantId)?.modules.get(key)
    if (!m || !can(this.principal, m, 'read'))
      throw new PageError(404, 'Not found', `There is no module "${key}" you may read.`)
    return m
  }

  can(m: RegisteredModule, action: string) {
    return can(this.principal, m, action)
  }

  hidden(m: RegisteredModule) {
    return hiddenFields(this.principal, m)
  }

  /** The module's fields this person may read, in the module's order. */
  readable(m: RegisteredModule): FieldDefinition[] {
    const hidden = this.hidden(m)
    return m.definition.fields.filter((f) => !hidden.has(f.key))
  }

  /** Whether this person may change the field of `m` (its write rule; computed fields are nobody's to write). */
  writable(m: RegisteredModule, f: FieldDefinition): boolean {
    return !m.fieldRules.computedKeys.has(f.key) && writesField(this.principal, f)
  }

  /** The names behind the user and record ids of these payloads: one lookup of users, one list per referenced module. */
  async names(m: RegisteredModule, payloads: ReadonlyArray<Record<string, unknown>>): Promise<Names> {
    const ids = namedIds(this.readable(m), payloads)
    const users = await this.r.platform.users.names(this.principal.tenantId, ids.users)
    const records = new Map<string, { number: string; moduleKey: string }>()
    for (const [moduleKey, wanted] of ids.records) {
      const target = this.r.platform.tenants.get(this.principal.tenantId)?.modules.get(moduleKey)
      const valid = [...wanted].filter(isUuid).slice(0, referencesShown)
      if (!target || !this.can(target, 'read') || !valid.length) continue
      // Only the records this person may read come back: the others show as "a record you cannot open".
      const page = await this.records.find(
        this.call({ query: { moduleKey, id: valid.join(','), limit: referencesShown } })
      )
      for (const rec of page.items as unknown as RecordView[])
        records.set(rec.id, { number: rec.number, moduleKey: rec.moduleKey })
    }
    return { users, records }
  }

  /**
   * The tenant's active people by name, for a page that lets this person name someone (a form with a user field they
   * may write, a list they manage): at most `peopleCap`, and whether that is all of them (if not, names are typed).
   */
  async people(): Promise<People> {
    const list = await this.r.platform.users.directory(this.principal.tenantId, peopleCap + 1)
    return { list: list.slice(0, peopleCap), complete: list.length <= peopleCap }
  }

  /**
   * The id a text typed for a field names, as people name what a user or a reference field holds: a person by name
   * (personNamed), a record by its number (recordNumbered); undefined for a field of another type, or an id already.
   */
  async idNamed(f: FieldDefinition, text: string): Promise<{ id: string } | { problem: string } | undefined> {
    if (isUuid(text)) return undefined
    if (f.type === 'user') return this.personNamed(text)
    if (f.type === 'recordRef') return this.recordNumbered(f.module, text)
    return undefined
  }

  /** The record of module `moduleKey` numbered `text` (in any case) that this person may open, or why there is none. */
  async recordNumbered(moduleKey: string, text: string): Promise<{ id: string } | { problem: string }> {
    const typed = text.trim()
    const shown = typed.length > 40 ? `${typed.slice(0, 40)}…` : typed
    const target = this.r.platform.tenants.get(this.principal.tenantId)?.modules.get(moduleKey)
    if (!target || !this.can(target, 'read')) return { problem: `names no record you may open ("${shown}")` }
    const nothing = {
      problem: `names no ${target.definition.title.toLowerCase()} you may open ("${shown}"): type its number, e.g. ${target.numberPattern.example(new Date())}`
    }
    // What the API's number filter refuses (empty, longer than any number) names no record either.
    const page = await this.records
      .find(this.call({ query: { moduleKey, number: typed, limit: 1 } }))
      .catch((err: unknown) => {
        if (refusalOf(err).status === 400) return undefined
        throw err
      })
    const rec = page?.items[0] as unknown as RecordView | undefined
    return rec ? { id: rec.id } : nothing
  }

  /** The one active person a typed text names (their user name or display name, in any case), or why it names none. */
  async personNamed(text: string): Promise<{ id: string } | { problem: string }> {
    const found = await this.r.platform.users.directory(this.principal.tenantId, 2, text)
    if (found.length === 1) return { id: found[0].id }
    return {
      problem: found.length
        ? `names several people ("${text}"): type the user name of the one you mean`
        : `names nobody ("${text}"): type a person's name or user name`
    }
  }
}

/** How long a resent form waits for the first send of its key to finish (then the first's answer is the answer). */
const inFlightWaitMs = 3_000

/**
 * A write of a form, sent with its submit key as the Idempotency-Key. A double submit sends the form twice and the
 * browser shows the second answer: while the first send still holds the key the service answers 409
 * `idempotency.in_flight`, so the second waits for it and answers what the first did (the replay), not a refusal.
 */
export async function submitOnce<T>(write: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + inFlightWaitMs
  for (;;) {
    try {
      return await write()
    } catch (err) {
      if (!(err instanceof ApiError && err.problemCode === 'idempotency.in_flight') || Date.now() > deadline) throw err
      await sleep(50)
    }
  }
}

/** A fresh key for a form's submit: the service's Idempotency-Key, so a double click or a resent form writes once. */
export const newSubmitKey = () => randomUUID()

/**
 * The submit key of a form shown again after a refusal: a new one, since the refusal is the key's answer and the
 * corrected form is a new request; but the same one when the first send of the key was still being written (its
 * answer is yet to come: sending the form again replays it, one record).
 */
export const keyAfter = (refusal: { code: string }, key: string) =>
  refusal.code === 'idempotency.in_flight' ? key : newSubmitKey()

/** A state's label (its key when it has none). */
export const stateLabel = (m: RegisteredModule, key: string) => m.states.get(key)?.label ?? key

/**
 * A refusal of the service as a form shows it: problems beside the fields they name (`field.invalid`'s errors, by the
 * top-level key of their pointer) and the rest at the top. Anything but a 4xx ApiError is no refusal (rethrown).
 */
export function refusalOf(err: unknown): {
  status: number
  code: string
  fields: Map<string, string[]>
  top: string[]
} {
  if (!(err instanceof ApiError) || err.code >= 500) throw err
  // A replay of an earlier refusal (the same submit key sent again) answers as the first time: its status and code.
  const status = err.replayBody?.status ?? err.code
  const code = err.replayBody?.code ?? err.problemCode
  const fields = new Map<string, string[]>()
  const top: string[] = []
  const errors = ((err.replayBody?.errors ?? err.extra.errors) as FieldProblem[] | undefined) ?? []
  for (const e of errors) {
    const key =
      /^\/payload\/([^/]+)/.exec(e.pointer ?? '')?.[1] ??
      (typeof err.extra.field === 'string' ? err.extra.field : undefined)
    if (key) fields.set(key, [...(fields.get(key) ?? []), e.detail])
    else top.push(e.detail)
  }
  if (!errors.length) {
    const field = typeof err.extra.field === 'string' ? err.extra.field : undefined
    if (field) fields.set(field, [err.message])
    top.push(err.message)
  } else if (top.length === 0 && fields.size === 0) top.push(err.message)
  return { status, code, fields, top }
}
