import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { FieldDefinition, GroupMember } from '../../core/modules/types.ts'
import {
  html,
  PageError,
  postedForm,
  seeOther,
  signedIn,
  type PageRequest,
  type SafeHtml
} from '../settings/settings.shared.ts'
import {
  Desk,
  keyAfter,
  newSubmitKey,
  nobody,
  refusalOf,
  stateLabel,
  submitOnce,
  type People,
  type RecordView
} from './workspace.context.ts'
import { fieldUi, peopleListId, sameAsShown, showValue, type Names, type Read } from './workspace.fields.ts'
import { whyUnavailable } from './workspace.transitions.ts'
import { sendWorkspacePage } from './workspace.views.ts'

/** Forms carry long texts and groups of many rows: more than the settings pages' 8 KiB, at most the API's default JSON cap (1 MiB). */
const maxFormBytes = 1024 * 1024
/**
 * The rows of a group a form reads at most: the module's `maxItems`, else this many (the form body's cap bounds them
 * anyway). A form shows every row the record has (none may be lost by saving it) and a blank one to add.
 */
const groupRowCap = 10_000
const rowCap = (f: { maxItems?: number }) => f.maxItems ?? groupRowCap

/** What a form shows: the values (as entered, or as stored), the problems beside fields, and those of the whole form. */
interface FormState {
  values: Record<string, unknown>
  problems: ReadonlyMap<string, string[]>
  top: string[]
}

/** How each field of a form appears: a control, read-only text (locked, computed, not the person's to write), or nothing. */
interface FormFields {
  fields: FieldDefinition[]
  required: ReadonlySet<string>
  readOnly: ReadonlySet<string>
  /** Why read-only fields are read-only, beside them. */
  readOnlyWhy: (f: FieldDefinition) => string
}

const hasValue = (v: unknown) => v !== undefined && v !== null && v !== '' && !(Array.isArray(v) && v.length === 0)

function groupRows(
  f: FieldDefinition & { type: 'group' },
  value: unknown,
  prefix: string,
  s: FormState,
  people: People,
  names: Names
): SafeHtml {
  const items = Array.isArray(value) ? (value as Array<Record<string, unknown>>) : []
  const rows = Math.max(items.length + (items.length < rowCap(f) ? 1 : 0), f.minItems ?? 1)
  return html`${Array.from({ length: rows }, (_, i) => {
    const item = items[i] ?? {}
    return html`<fieldset class="group-item"><legend>${f.label ?? f.key} ${i + 1}${i >= items.length ? ' (new)' : ''}</legend>${f.fields.map(
      (member: GroupMember) => {
        const name = `${prefix}.${i}.${member.key}`
        const id = `f-${f.key}-${i}-${member.key}`
        return html`<div class="field"><label for="${id}">${member.label ?? member.key}</label>${fieldUi[
          member.type
        ].input(member, item[member.key], {
          name,
          id,
          describedBy: '',
          invalid: false,
          // A member is required in the rows the record has and those the group needs; a spare new row may stay empty.
          required: !!member.required && (i < items.length || i < (f.minItems ?? 0)),
          people,
          names
        })}</div>`
      }
    )}</fieldset>`
  })}${s.problems.get(f.key)?.map((p) => html`<p class="problem">${p}</p>`) ?? ''}`
}

/** The controls of a form, in the module's order, each labelled, with its hint and the server's problem beside it. */
function controls(ff: FormFields, s: FormState, names: Names, people: People): SafeHtml {
  return html`${ff.fields.map((f) => {
    const id = `f-${f.key}`
    const label = f.label ?? f.key
    const problems = s.problems.get(f.key) ?? []
    const value = s.values[f.key]
    if (ff.readOnly.has(f.key))
      return html`<div class="field"><span class="label" id="${id}-label"><strong>${label}</strong></span><div class="readonly" aria-labelledby="${id}-label">${hasValue(value) ? showValue(f, value, names) : html`<span class="empty">Not set</span>`}</div><p class="hint">${ff.readOnlyWhy(f)}</p></div>`
    const hint = f.description ? html`<p class="hint" id="${id}-hint">${f.description}</p>` : ''
    const problemHtml = problems.map((p, i) => html`<p class="problem" id="${id}-problem-${i}">${label} ${p}</p>`)
    const describedBy = [f.description ? `${id}-hint` : '', ...problems.map((_, i) => `${id}-problem-${i}`)]
      .filter(Boolean)
      .join(' ')
    const required = ff.required.has(f.key)
    if (f.type === 'group')
      return html`<div class="field"><fieldset><legend>${label}${required ? html` <span class="req" aria-hidden="true">*</span>` : ''}</legend>${hint}${groupRows(f, value, f.key, s, people, names)}</fieldset></div>`
    const grouped = f.type === 'multipleChoice' || f.type === 'location'
    const control = fieldUi[f.type].input(f, value, {
      name: f.key,
      id,
      describedBy,
      invalid: problems.length > 0,
      required,
      people,
      names
    })
    return grouped
      ? html`<div class="field"><fieldset><legend>${label}${required ? html` <span class="req" aria-hidden="true">*</span>` : ''}</legend>${hint}${control}${problemHtml}</fieldset></div>`
      : html`<div class="field"><label for="${id}">${label}${required ? html` <span class="req" aria-hidden="true">*</span><span class="visually-hidden"> (required)</span>` : ''}</label>${hint}${control}${problemHtml}</div>`
  })}`
}

/** Reads the form's values of these fields: each by its type's table row; a group row by row, blank rows dropped. */
function readFields(
  fields: FieldDefinition[],
  form: URLSearchParams
): { values: Record<string, unknown>; problems: Map<string, string[]> } {
  const values: Record<string, unknown> = {}
  const problems = new Map<string, string[]>()
  const take = (f: FieldDefinition, name: string): Read => fieldUi[f.type].read(f, form, name)
  for (const f of fields) {
    if (f.type === 'group') {
      const items: Array<Record<string, unknown>> = []
      for (let i = 0; i < rowCap(f); i++) {
        const item: Record<string, unknown> = {}
        let seen = false
        for (const member of f.fields) {
          const got = take(member, `${f.key}.${i}.${member.key}`)
          if ('value' in got) item[member.key] = got.value
          else if ('problem' in got)
            problems.set(f.key, [
              ...(problems.get(f.key) ?? []),
              `row ${i + 1}: ${member.label ?? member.key} ${got.problem}`
            ])
          if (form.has(`${f.key}.${i}.${member.key}`)) seen = true
        }
        if (!seen) break
        if (Object.keys(item).length) items.push(item)
      }
      if (items.length) values[f.key] = items
      continue
    }
    const got = take(f, f.key)
    if ('value' in got) values[f.key] = got.value
    else if ('problem' in got) problems.set(f.key, [got.problem])
  }
  return { values, problems }
}

/** Whether a field, or a member of a group, is a user field: what makes a form name people. */
const namesPeople = (f: FieldDefinition) =>
  f.type === 'user' || (f.type === 'group' && f.fields.some((m) => m.type === 'user'))

/** The people a form offers: only a form with a user field this person may fill in loads the directory. */
function peopleFor(desk: Desk, ff: FormFields): Promise<People> {
  return ff.fields.some((f) => !ff.readOnly.has(f.key) && namesPeople(f)) ? desk.people() : Promise.resolve(nobody)
}

/**
 * The people and records a form names as people know them made ids: a user typed by name (a tenant with more people
 * than a picker holds), a referenced record by its number (`INC-2026-00042`, in any case); an id stays as it is. What
 * names nobody, or several, or no record the person may open, is a problem beside the field.
 */
async function resolveNamed(
  desk: Desk,
  fields: FieldDefinition[],
  values: Record<string, unknown>,
  problems: Map<string, string[]>
) {
  const resolve = async (f: FieldDefinition, v: unknown, key: string, where = ''): Promise<unknown> => {
    const found = typeof v === 'string' ? await desk.idNamed(f, v) : undefined
    if (!found) return v
    if ('id' in found) return found.id
    problems.set(key, [...(problems.get(key) ?? []), `${where}${found.problem}`])
    return v
  }
  for (const f of fields) {
    if (f.key in values) values[f.key] = await resolve(f, values[f.key], f.key)
    if (f.type === 'group' && Array.isArray(values[f.key]))
      for (const [i, item] of (values[f.key] as Array<Record<string, unknown>>).entries())
        for (const m of f.fields)
          if (m.key in item) item[m.key] = await resolve(m, item[m.key], f.key, `row ${i + 1}: ${m.label ?? m.key} `)
  }
}

async function formPage(
  desk: Desk,
  status: number,
  p: {
    m: RegisteredModule
    title: string
    action: string
    submit: string
    intro?: SafeHtml
    hidden: Record<string, string>
    ff: FormFields
    s: FormState
    names: Names
    extra?: SafeHtml
    back: string
  }
) {
  const people = await peopleFor(desk, p.ff)
  const problems = [...p.s.top]
  const fieldCount = [...p.s.problems.values()].reduce((n, l) => n + l.length, 0)
  sendWorkspacePage(desk, status, {
    title: p.title,
    module: p.m,
    main: html`<p class="crumbs"><a href="/records/${p.m.definition.key}">${p.m.definition.title}</a></p><h1>${p.title}</h1>${p.intro ?? ''}
${problems.length || fieldCount ? html`<div class="alert error" role="alert" tabindex="-1" id="form-problems">${problems.length ? html`${problems.map((x) => html`<p>${x}</p>`)}` : ''}${fieldCount ? html`<p>${fieldCount === 1 ? 'One field needs' : `${fieldCount} fields need`} your attention: see the messages beside ${fieldCount === 1 ? 'it' : 'them'}.</p>` : ''}</div>` : ''}
<form method="post" action="${p.action}" class="card record-form" novalidate>
<input type="hidden" name="csrf" value="${desk.session.csrfToken}">
${Object.entries(p.hidden).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}
${controls(p.ff, p.s, p.names, people)}
${people.complete ? '' : html`<datalist id="${peopleListId}">${people.list.map((x) => html`<option value="${x.name}"></option>`)}</datalist>`}
${p.extra ?? ''}
<div class="actions sticky-submit"><button type="submit">${p.submit}</button><a href="${p.back}">Cancel</a></div>
</form>`
  })
}

const computedWhy = 'Computed by the platform from other fields.'

/** The fields of a create form: every readable field, the ones this person may not write or that are computed shown read-only. */
function createFields(desk: Desk, m: RegisteredModule): FormFields {
  const fields = desk.readable(m)
  const initial = m.states.get(m.definition.workflow.initial)
  const required = new Set([...fields.filter((f) => f.required).map((f) => f.key), ...(initial?.requires ?? [])])
  const readOnly = new Set(fields.filter((f) => !desk.writable(m, f)).map((f) => f.key))
  // Left out: computed fields (no value before the record exists), and the fields the workflow asks for later (those a
  // later state or a transition requires, and the initial state does not): the transition that needs them asks.
  const later = new Set([
    ...m.definition.workflow.states.filter((s) => s.key !== initial?.key).flatMap((s) => s.requires ?? []),
    ...m.definition.workflow.transitions.flatMap((t) => t.requires ?? [])
  ])
  return {
    fields: fields.filter((f) => !m.fieldRules.computedKeys.has(f.key) && (required.has(f.key) || !later.has(f.key))),
    required,
    readOnly,
    readOnlyWhy: () => 'Only some roles may fill this in.'
  }
}

async function renderCreate(desk: Desk, m: RegisteredModule, status: number, s: FormState, key: string) {
  const d = m.definition
  await formPage(desk, status, {
    m,
    title: `New ${d.title.toLowerCase()}`,
    action: `/records/${d.key}/new`,
    submit: `Create ${d.title.toLowerCase()}`,
    hidden: { submitKey: key },
    ff: createFields(desk, m),
    s,
    names: await desk.names(m, [s.values]),
    back: `/records/${d.key}`,
    intro: html`<p class="muted">Fields marked <span class="req">*</span> are required. Times are in UTC.</p>`
  })
}

/** `GET /records/:module/new`. */
export async function showCreate(r: PageRequest) {
  const session = signedIn(r)
  if (!session) return
  const desk = new Desk(r, session)
  const m = desk.module(r.params.module)
  const values: Record<string, unknown> = {}
  for (const f of m.definition.fields)
    if ('default' in f && f.default !== undefined && f.default !== 'today()') values[f.key] = f.default
  await renderCreate(desk, m, 200, { values, problems: new Map(), top: [] }, newSubmitKey())
}

/**
 * `POST /records/:module/new`: the records service's create with the form's submit key as the Idempotency-Key, so a
 * double click or a resent form makes one record (the second answer is the first's record).
 */
export async function create(r: PageRequest) {
  const back = `/records/${r.params.module}/new`
  const posted = await postedForm(r, back, maxFormBytes)
  if (!posted) return
  const desk = new Desk(r, posted.session)
  const m = desk.module(r.params.module)
  const key = posted.form.get('submitKey') || newSubmitKey()
  const ff = createFields(desk, m)
  const writable = ff.fields.filter((f) => !ff.readOnly.has(f.key))
  const { values, problems } = readFields(writable, posted.form)
  await resolveNamed(desk, writable, values, problems)
  if (problems.size) return renderCreate(desk, m, 400, { values, problems, top: [] }, key)
  try {
    const rec = (await submitOnce(() =>
      desk.records.create({ moduleKey: m.definition.key, payload: values }, desk.call({ idempotencyKey: key }))
    )) as unknown as RecordView
    seeOther(r, `/records/${m.definition.key}/${rec.id}?done=created`)
  } catch (err) {
    const refusal = refusalOf(err)
    // The refused request is answered and its key spent on it: the corrected form is a new request.
    return renderCreate(
      desk,
      m,
      refusal.status,
      { values, problems: refusal.fields, top: refusal.top },
      keyAfter(refusal, key)
    )
  }
}

/** A 403 page: the form of an action the person may not take is not served (its POST would be refused too). */
const notAllowed = (why: string) => new PageError(403, 'Not allowed', why)

/** A record's page of the person signed in (or sent to sign in and back): the module and the record as they may read it. */
export async function openRecord(
  r: PageRequest
): Promise<{ desk: Desk; m: RegisteredModule; rec: RecordView } | undefined> {
  const session = signedIn(r)
  if (!session) return undefined
  const desk = new Desk(r, session)
  const m = desk.module(r.params.module)
  return { desk, m, rec: await readRecord(desk, m, r.params.id) }
}

/** A record this person may read, through the service's get (404 for one they may not see, as REST answers). */
export async function readRecord(desk: Desk, m: RegisteredModule, id: string): Promise<RecordView> {
  return await desk.records.get(id, desk.onRecord(m))
}

/** The fields of an edit form: locked ones (the state's `locks`), computed ones and those not theirs to write read-only. */
function editFields(desk: Desk, m: RegisteredModule, rec: RecordView): FormFields {
  const fields = desk.readable(m)
  const locks = m.states.get(rec.state)?.locks ?? []
  const locked = (f: FieldDefinition) => locks.includes('*') || locks.includes(f.key)
  return {
    fields,
    required: new Set([
      ...fields.filter((f) => f.required).map((f) => f.key),
      ...(m.states.get(rec.state)?.requires ?? [])
    ]),
    readOnly: new Set(fields.filter((f) => locked(f) || !desk.writable(m, f)).map((f) => f.key)),
    readOnlyWhy: (f) =>
      m.fieldRules.computedKeys.has(f.key)
        ? computedWhy
        : locked(f)
          ? `Locked while the record is ${stateLabel(m, rec.state).toLowerCase()}.`
          : 'Only some roles may change this.'
  }
}

/**
 * What a form sent from an older version of a record (the service's 412 on If-Match) says: that someone else changed
 * it, what did not happen, a link to the record as it is now, and what else the person can do (`again`, a link when
 * `againHref` is given).
 */
function conflictAlert(m: RegisteredModule, rec: RecordView, notDone: string, again: string, againHref?: string) {
  const href = `/records/${m.definition.key}/${rec.id}`
  return html`<div class="alert warn" role="alert">Someone else changed ${rec.number} after you opened this page, so ${notDone}. <a href="${href}">Open the record as it is now</a> to see what changed${again ? html`, or ${againHref ? html`<a href="${againHref}">${again}</a>` : again}` : ''}.</div>`
}

async function renderEdit(
  desk: Desk,
  m: RegisteredModule,
  rec: RecordView,
  status: number,
  s: FormState,
  version: number,
  key: string,
  conflict = false
) {
  const d = m.definition
  await formPage(desk, status, {
    m,
    title: `Edit ${rec.number}`,
    action: `/records/${d.key}/${rec.id}/edit`,
    submit: 'Save changes',
    hidden: { version: String(version), submitKey: key },
    ff: editFields(desk, m, rec),
    s,
    names: await desk.names(m, [s.values, rec.payload]),
    back: `/records/${d.key}/${rec.id}`,
    intro: conflict
      ? conflictAlert(
          m,
          rec,
          'your changes were not saved. Your entries are kept below',
          'start again from its current version',
          `/records/${d.key}/${rec.id}/edit`
        )
      : html`<p class="muted">State: ${stateLabel(m, rec.state)}. Times are in UTC.</p>`
  })
}

/** `GET /records/:module/:id/edit`. */
export async function showEdit(r: PageRequest) {
  const opened = await openRecord(r)
  if (!opened) return
  const { desk, m, rec } = opened
  if (!desk.can(m, 'update')) throw notAllowed(`You may not change ${rec.number}.`)
  await renderEdit(
    desk,
    m,
    rec,
    200,
    { values: rec.payload, problems: new Map(), top: [] },
    rec.version,
    newSubmitKey()
  )
}

/** The merge patch from a record's payload to a form's values over the editable fields: changed keys, null for a cleared one. */
function patchOf(fields: FieldDefinition[], before: Record<string, unknown>, after: Record<string, unknown>) {
  const patch: Record<string, unknown> = {}
  for (const f of fields) {
    if (sameAsShown(f, before[f.key], after[f.key])) continue
    patch[f.key] = after[f.key] === undefined ? null : after[f.key]
  }
  return patch
}

/**
 * `POST /records/:module/:id/edit`: a PATCH of the fields changed, conditional on the version the form was opened at
 * (If-Match): a change by someone else in between is a 412, explained, with the person's entries kept.
 */
export async function edit(r: PageRequest) {
  const back = `/records/${r.params.module}/${r.params.id}/edit`
  const posted = await postedForm(r, back, maxFormBytes)
  if (!posted) return
  const desk = new Desk(r, posted.session)
  const m = desk.module(r.params.module)
  const rec = await readRecord(desk, m, r.params.id)
  const version = Number(posted.form.get('version')) || rec.version
  const key = posted.form.get('submitKey') || newSubmitKey()
  const ff = editFields(desk, m, rec)
  const editable = ff.fields.filter((f) => !ff.readOnly.has(f.key))
  const { values, problems } = readFields(editable, posted.form)
  await resolveNamed(desk, editable, values, problems)
  const shown = { ...rec.payload, ...values }
  for (const f of editable) if (!(f.key in values)) delete shown[f.key]
  if (problems.size) return renderEdit(desk, m, rec, 400, { values: shown, problems, top: [] }, version, key)
  const patch = patchOf(editable, rec.payload, values)
  if (!Object.keys(patch).length) return seeOther(r, `/records/${m.definition.key}/${rec.id}?done=unchanged`)
  try {
    await submitOnce(() =>
      desk.records.patch(rec.id, { payload: patch }, desk.onRecord(m, { ifMatch: `"${version}"`, idempotencyKey: key }))
    )
    seeOther(r, `/records/${m.definition.key}/${rec.id}?done=saved`)
  } catch (err) {
    const refusal = refusalOf(err)
    const conflict = refusal.status === 412
    return renderEdit(
      desk,
      m,
      rec,
      refusal.status,
      { values: shown, problems: refusal.fields, top: conflict ? [] : refusal.top },
      conflict ? version : rec.version,
      keyAfter(refusal, key),
      conflict
    )
  }
}

/** The fields a transition asks for: those its target state and the transition itself require, all shown editable if writable. */
function transitionFields(desk: Desk, m: RegisteredModule, key: string): FormFields {
  const needed = m.guards.get(key) ?? []
  const fields = desk.readable(m).filter((f) => needed.includes(f.key))
  return {
    fields,
    required: new Set(needed),
    readOnly: new Set(fields.filter((f) => !desk.writable(m, f)).map((f) => f.key)),
    readOnlyWhy: () => 'You may not fill this in; someone who may must set it first.'
  }
}

async function renderTransition(
  desk: Desk,
  m: RegisteredModule,
  rec: RecordView,
  key: string,
  status: number,
  s: FormState,
  comment: string,
  submitKey: string,
  conflict = false
) {
  const d = m.definition
  const t = m.transitions.get(key)!
  const available = rec.availableTransitions?.find((a) => a.key === key)
  await formPage(desk, status, {
    m,
    title: `${t.label ?? t.key}: ${rec.number}`,
    action: `/records/${d.key}/${rec.id}/transition/${key}`,
    submit: t.label ?? t.key,
    hidden: { version: String(rec.version), submitKey },
    ff: transitionFields(desk, m, key),
    s,
    names: await desk.names(m, [s.values, rec.payload]),
    back: `/records/${d.key}/${rec.id}`,
    intro: html`${conflict ? conflictAlert(m, rec, 'it was not moved', available && !available.refusal ? `send this form again to move it as it is now` : '') : ''}<p>Moves ${rec.number} from <strong>${stateLabel(m, rec.state)}</strong> to <strong>${stateLabel(m, t.to)}</strong>.</p>${available?.refusal ? html`<div class="alert warn" role="alert">${available.refusal.detail}</div>` : ''}`,
    extra: html`<div class="field"><label for="f-comment">Comment <span class="muted">(optional)</span></label><textarea id="f-comment" name="comment" rows="3" maxlength="4000">${comment}</textarea></div>`
  })
}

/** The transition of the record named by the route, or a 404 page for a key the module does not have. */
function transitionOf(m: RegisteredModule, key: string) {
  if (!m.transitions.has(key))
    throw new PageError(404, 'Not found', `${m.definition.title} has no transition "${key}".`)
  return key
}

/** `GET /records/:module/:id/transition/:key`: the transition's form, asking exactly for the fields it requires. */
export async function showTransition(r: PageRequest) {
  const opened = await openRecord(r)
  if (!opened) return
  const { desk, m, rec } = opened
  const key = transitionOf(m, r.params.key)
  const why = whyUnavailable(desk, m, rec, key)
  if (why) throw notAllowed(why)
  await renderTransition(
    desk,
    m,
    rec,
    key,
    200,
    { values: rec.payload, problems: new Map(), top: [] },
    '',
    newSubmitKey()
  )
}

/** `POST /records/:module/:id/transition/:key`: the records service's transition, its fields as the transition's payload. */
export async function transition(r: PageRequest) {
  const back = `/records/${r.params.module}/${r.params.id}`
  const posted = await postedForm(r, back, maxFormBytes)
  if (!posted) return
  const desk = new Desk(r, posted.session)
  const m = desk.module(r.params.module)
  const rec = await readRecord(desk, m, r.params.id)
  const key = transitionOf(m, r.params.key)
  const submitKey = posted.form.get('submitKey') || newSubmitKey()
  const comment = (posted.form.get('comment') ?? '').trim()
  const ff = transitionFields(desk, m, key)
  const editable = ff.fields.filter((f) => !ff.readOnly.has(f.key))
  const { values, problems } = readFields(editable, posted.form)
  await resolveNamed(desk, editable, values, problems)
  const shown = { ...rec.payload, ...values }
  if (problems.size)
    return renderTransition(desk, m, rec, key, 400, { values: shown, problems, top: [] }, comment, submitKey)
  const patch = patchOf(editable, rec.payload, values)
  const version = Number(posted.form.get('version')) || rec.version
  try {
    await submitOnce(() =>
      desk.records.transition(
        { transition: key, ...(comment ? { comment } : {}), ...(Object.keys(patch).length ? { payload: patch } : {}) },
        desk.onRecord(m, { id: rec.id, ifMatch: `"${version}"`, idempotencyKey: submitKey })
      )
    )
    seeOther(r, `/records/${m.definition.key}/${rec.id}?done=moved`)
  } catch (err) {
    const refusal = refusalOf(err)
    const conflict = refusal.status === 412
    return renderTransition(
      desk,
      m,
      conflict ? await readRecord(desk, m, rec.id) : rec,
      key,
      refusal.status,
      { values: shown, problems: refusal.fields, top: conflict ? [] : refusal.top },
      comment,
      keyAfter(refusal, submitKey),
      conflict
    )
  }
}

/** `GET /records/:module/:id/delete`: what deleting means, and the button that does it. */
export async function showDelete(r: PageRequest) {
  const opened = await openRecord(r)
  if (!opened) return
  const { desk, m, rec } = opened
  renderDelete(desk, m, rec, 200)
}

/** The delete confirmation; after a conflict (`status` 412), what happened above it and the button at the current version. */
function renderDelete(desk: Desk, m: RegisteredModule, rec: RecordView, status: number) {
  if (!desk.can(m, 'delete')) throw notAllowed(`You may not delete ${rec.number}.`)
  const d = m.definition
  sendWorkspacePage(desk, status, {
    title: `Delete ${rec.number}`,
    module: m,
    main: html`<p class="crumbs"><a href="/records/${d.key}">${d.title}</a> › <a href="/records/${d.key}/${rec.id}">${rec.number}</a></p><h1>Delete ${rec.number}?</h1>
${status === 412 ? conflictAlert(m, rec, 'it was not deleted', 'delete it as it is now with the button below') : ''}<div class="card"><p>The record leaves every list and search. It is not erased: its history stays in the audit log, and an integration that syncs deletions is told.</p>
<form method="post" action="/records/${d.key}/${rec.id}/delete"><input type="hidden" name="csrf" value="${desk.session.csrfToken}"><input type="hidden" name="version" value="${rec.version}"><input type="hidden" name="submitKey" value="${newSubmitKey()}">
<div class="actions"><button type="submit" class="danger">Delete ${rec.number}</button><a href="/records/${d.key}/${rec.id}">Keep it</a></div></form></div>`
  })
}

/** `POST /records/:module/:id/delete`: the records service's soft delete, conditional on the version shown. */
export async function remove(r: PageRequest) {
  const back = `/records/${r.params.module}/${r.params.id}`
  const posted = await postedForm(r, back)
  if (!posted) return
  const desk = new Desk(r, posted.session)
  const m = desk.module(r.params.module)
  const version = posted.form.get('version')
  try {
    await submitOnce(() =>
      desk.records.remove(
        r.params.id,
        desk.onRecord(m, {
          ...(version ? { ifMatch: `"${version}"` } : {}),
          idempotencyKey: posted.form.get('submitKey') || newSubmitKey()
        })
      )
    )
  } catch (err) {
    if (refusalOf(err).status !== 412) throw err
    return renderDelete(desk, m, await readRecord(desk, m, r.params.id), 412)
  }
  seeOther(r, `/records/${m.definition.key}?done=deleted`)
}
