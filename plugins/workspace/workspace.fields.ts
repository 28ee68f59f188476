import type { FieldDefinition, FieldType, GroupMember } from '../../core/modules/types.ts'
import { html, type SafeHtml } from '../settings/settings.shared.ts'
import type { People } from './workspace.context.ts'

/**
 * How each field type appears in the workspace: as a value on a record page or a list cell (`show`), as a form control
 * (`input`), and how a form's text becomes a payload value again (`read`). One row per field type, kept complete by
 * the compiler like every other derivation table of a module (core/modules/derive/), so a type added to the SDK
 * cannot reach a page without its control.
 */

/** The id of the one <datalist> of people a form with typed names carries. */
export const peopleListId = 'people'

/** What turns ids into words on a page: the names of users and the numbers of referenced records. */
export interface Names {
  users: ReadonlyMap<string, string>
  /** Referenced records the caller may read: their number and module. */
  records: ReadonlyMap<string, { number: string; moduleKey: string }>
}

/** A form control's context: its name and id, whether it may be changed, and the problem the server named for it. */
export interface Control {
  name: string
  id: string
  /** The ids of the hint and problem texts the control is described by. */
  describedBy: string
  invalid: boolean
  required: boolean
  /** People a user field may name: a picker of all of them, or, in a larger tenant, a typed name (`peopleListId`). */
  people: People
  /** The names of users already named (a typed name's control shows the name, not the id). */
  names?: Names
}

/** The outcome of reading one field from a form: nothing entered, a value, or why the text is no value of the type. */
export type Read = { empty: true } | { value: unknown } | { problem: string }

interface FieldUi {
  show(field: FieldDefinition, value: unknown, names: Names): SafeHtml | string
  input(field: FieldDefinition, value: unknown, c: Control): SafeHtml
  read(field: FieldDefinition, form: URLSearchParams, name: string): Read
  /**
   * Whether a value read from the form is the stored one as the control showed it (a time to the minute, a location
   * without its accuracy, chosen values in any order, text without its outer spaces): then the stored value stays as it
   * is, and saving a form nobody changed changes nothing. Default: equal as JSON.
   */
  same?(field: FieldDefinition, stored: unknown, read: unknown): boolean
}

export const optionsOf = (f: FieldDefinition) =>
  'options' in f
    ? f.options.map((o) =>
        typeof o === 'string' ? { value: o, label: o } : { value: o.value, label: o.label ?? o.value }
      )
    : []

const labelOf = (f: FieldDefinition, v: unknown) => optionsOf(f).find((o) => o.value === v)?.label ?? String(v)

const aria = (c: Control) =>
  html` id="${c.id}" name="${c.name}"${c.describedBy ? html` aria-describedby="${c.describedBy}"` : ''}${c.invalid ? html` aria-invalid="true"` : ''}${c.required ? html` required aria-required="true"` : ''}`

const text = (v: unknown) => (v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v))

/** A date-time as people read it here: minutes, in UTC (the forms take UTC too). */
export function showInstant(v: unknown): string {
  if (typeof v !== 'string') return text(v)
  const d = new Date(v)
  return Number.isNaN(d.getTime()) ? v : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`
}

const one = (form: URLSearchParams, name: string) => (form.get(name) ?? '').trim()

const readText = (_f: FieldDefinition, form: URLSearchParams, name: string): Read => {
  const v = one(form, name)
  return v ? { value: v } : { empty: true }
}

const readNumber =
  (integer: boolean) =>
  (_f: FieldDefinition, form: URLSearchParams, name: string): Read => {
    const v = one(form, name)
    if (!v) return { empty: true }
    const n = Number(v)
    if (!Number.isFinite(n)) return { problem: 'must be a number' }
    if (integer && !Number.isInteger(n)) return { problem: 'must be a whole number' }
    return { value: n }
  }

/**
 * A module's pattern as an input's `pattern`: the schema's pattern matches anywhere in the value (JSON Schema), the
 * attribute the whole value, so it is wrapped to match anywhere (an anchored pattern keeps its anchors' meaning).
 */
const htmlPattern = (pattern: string) => `[\\s\\S]*(?:${pattern})[\\s\\S]*`

const bounds = (f: FieldDefinition) =>
  html`${'minimum' in f && f.minimum !== undefined ? html` min="${f.minimum}"` : ''}${'maximum' in f && f.maximum !== undefined ? html` max="${f.maximum}"` : ''}`

const userName = (v: unknown, names: Names) =>
  typeof v === 'string' ? (names.users.get(v) ?? 'Unknown user') : text(v)

const choiceSelect = (f: FieldDefinition, v: unknown, c: Control, emptyLabel: string) =>
  html`<select${aria(c)}><option value="">${emptyLabel}</option>${optionsOf(f).map((o) => html`<option value="${o.value}"${o.value === v ? html` selected` : ''}>${o.label}</option>`)}</select>`

export const fieldUi: { [T in FieldType]: FieldUi } = {
  text: {
    show: (_f, v) => text(v),
    input: (f, v, c) =>
      html`<input type="text"${aria(c)} value="${text(v)}"${'maxLength' in f && f.maxLength ? html` maxlength="${f.maxLength}"` : ''}${'pattern' in f && f.pattern ? html` pattern="${htmlPattern(f.pattern)}"` : ''}>`,
    read: readText,
    same: (_f, stored, read) => typeof stored === 'string' && stored.trim() === read
  },
  longText: {
    show: (_f, v) => html`<span class="long">${text(v)}</span>`,
    input: (f, v, c) =>
      html`<textarea${aria(c)} rows="4"${'maxLength' in f && f.maxLength ? html` maxlength="${f.maxLength}"` : ''}>${text(v)}</textarea>`,
    read: (_f, form, name) => {
      const v = (form.get(name) ?? '').replace(/\r\n/g, '\n').trim()
      return v ? { value: v } : { empty: true }
    },
    same: (_f, stored, read) => typeof stored === 'string' && stored.replace(/\r\n/g, '\n').trim() === read
  },
  number: {
    show: (_f, v) => text(v),
    input: (f, v, c) =>
      html`<input type="number" step="any" inputmode="decimal"${aria(c)} value="${text(v)}"${bounds(f)}>`,
    read: readNumber(false)
  },
  integer: {
    show: (_f, v) => text(v),
    input: (f, v, c) =>
      html`<input type="number" step="1" inputmode="numeric"${aria(c)} value="${text(v)}"${bounds(f)}>`,
    read: readNumber(true)
  },
  boolean: {
    show: (_f, v) => (v === true ? 'Yes' : v === false ? 'No' : text(v)),
    input: (_f, v, c) =>
      html`<select${aria(c)}><option value="">Not said</option><option value="true"${v === true ? html` selected` : ''}>Yes</option><option value="false"${v === false ? html` selected` : ''}>No</option></select>`,
    read: (_f, form, name) => {
      const v = one(form, name)
      if (!v) return { empty: true }
      return v === 'true' || v === 'false' ? { value: v === 'true' } : { problem: 'must be yes or no' }
    }
  },
  date: {
    show: (_f, v) => text(v),
    input: (_f, v, c) => html`<input type="date"${aria(c)} value="${text(v)}">`,
    read: readText
  },
  datetime: {
    show: (_f, v) => showInstant(v),
    // datetime-local has no zone: the form says UTC and the value is read as UTC.
    input: (_f, v, c) =>
      html`<input type="datetime-local"${aria(c)} value="${typeof v === 'string' && !Number.isNaN(Date.parse(v)) ? new Date(v).toISOString().slice(0, 16) : text(v)}">`,
    read: (_f, form, name) => {
      const v = one(form, name)
      if (!v) return { empty: true }
      if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(v)) return { problem: 'must be a date and a time' }
      const d = new Date(`${v}Z`)
      return Number.isNaN(d.getTime()) ? { problem: 'must be a date and a time' } : { value: d.toISOString() }
    },
    same: (_f, stored, read) => minuteOf(stored) !== undefined && minuteOf(stored) === minuteOf(read)
  },
  singleChoice: {
    show: (f, v) => (v === undefined || v === null ? '' : labelOf(f, v)),
    input: (f, v, c) => choiceSelect(f, v, c, 'Choose…'),
    read: readText
  },
  multipleChoice: {
    show: (f, v) => (Array.isArray(v) ? v.map((x) => labelOf(f, x)).join(', ') : text(v)),
    input: (f, v, c) => {
      const chosen = new Set(Array.isArray(v) ? v : [])
      return html`<div class="choices" role="group" id="${c.id}"${c.describedBy ? html` aria-describedby="${c.describedBy}"` : ''}>${optionsOf(
        f
      ).map(
        (o, i) =>
          html`<label class="check"><input type="checkbox" name="${c.name}" value="${o.value}" id="${c.id}-${i}"${chosen.has(o.value) ? html` checked` : ''}> ${o.label}</label>`
      )}</div>`
    },
    read: (_f, form, name) => {
      const v = form.getAll(name).filter(Boolean)
      return v.length ? { value: v } : { empty: true }
    },
    same: (_f, stored, read) =>
      Array.isArray(stored) &&
      Array.isArray(read) &&
      stored.length === read.length &&
      read.every((v) => stored.includes(v))
  },
  user: {
    show: (_f, v, names) => userName(v, names),
    input: (_f, v, c) =>
      c.people.complete
        ? html`<select${aria(c)} autocomplete="off"><option value="">Nobody</option>${c.people.list.map((p) => html`<option value="${p.id}"${p.id === v ? html` selected` : ''}>${p.name}</option>`)}${
            typeof v === 'string' && !c.people.list.some((p) => p.id === v)
              ? html`<option value="${v}" selected>${c.names?.users.get(v) ?? 'Someone no longer active'}</option>`
              : ''
          }</select>`
        : // More people than a picker holds: a name is typed (the list suggests the first by name), and the server finds them.
          html`<input type="text"${aria(c)} list="${peopleListId}" autocomplete="off" value="${typeof v === 'string' ? (c.names?.users.get(v) ?? v) : ''}" placeholder="Name or user name">`,
    read: readText,
    same: (_f, stored, read) => stored === read
  },
  recordRef: {
    show: (_f, v, names) => {
      if (typeof v !== 'string') return text(v)
      const ref = names.records.get(v)
      return ref
        ? html`<a href="/records/${ref.moduleKey}/${v}">${ref.number}</a>`
        : html`<span class="muted">A record you cannot open</span>`
    },
    // The record's number, as people know it (the page finds the record by it); an id it cannot name stays an id.
    input: (f, v, c) =>
      html`<input type="text"${aria(c)} value="${typeof v === 'string' ? (c.names?.records.get(v)?.number ?? v) : text(v)}" placeholder="Record number or id of ${(f as { module: string }).module}" autocomplete="off" spellcheck="false">`,
    read: readText
  },
  group: {
    show: (f, v, names) => {
      const members = (f as { fields: GroupMember[] }).fields
      if (!Array.isArray(v) || !v.length) return ''
      return html`<table class="group"><thead><tr>${members.map((m) => html`<th scope="col">${m.label ?? m.key}</th>`)}</tr></thead><tbody>${v.map(
        (item: Record<string, unknown>) =>
          html`<tr>${members.map((m) => html`<td>${item?.[m.key] === undefined ? '' : fieldUi[m.type].show(m, item[m.key], names)}</td>`)}</tr>`
      )}</tbody></table>`
    },
    // A group's rows are edited through their members' controls (workspace.forms.ts lays them out).
    input: () => html``,
    read: () => ({ empty: true })
  },
  location: {
    show: (_f, v) => {
      const l = v as { latitude?: number; longitude?: number; label?: string } | undefined
      if (!l || typeof l !== 'object') return text(v)
      return `${l.label ? `${l.label} · ` : ''}${l.latitude}, ${l.longitude}`
    },
    input: (_f, v, c) => {
      const l = (v ?? {}) as { latitude?: number; longitude?: number; label?: string }
      return html`<div class="location" role="group" id="${c.id}"${c.describedBy ? html` aria-describedby="${c.describedBy}"` : ''}>
<div><label for="${c.id}-lat">Latitude</label><input type="number" step="any" inputmode="decimal" id="${c.id}-lat" name="${c.name}.latitude" value="${text(l.latitude)}" min="-90" max="90"></div>
<div><label for="${c.id}-lon">Longitude</label><input type="number" step="any" inputmode="decimal" id="${c.id}-lon" name="${c.name}.longitude" value="${text(l.longitude)}" min="-180" max="180"></div>
<div class="wide"><label for="${c.id}-label">Place name</label><input type="text" id="${c.id}-label" name="${c.name}.label" value="${text(l.label)}"></div>
<button type="button" class="secondary" data-locate="${c.id}" hidden>Use my location</button></div>`
    },
    read: (_f, form, name) => {
      const lat = one(form, `${name}.latitude`)
      const lon = one(form, `${name}.longitude`)
      const label = one(form, `${name}.label`)
      if (!lat && !lon && !label) return { empty: true }
      if (!lat || !lon) return { problem: 'needs both a latitude and a longitude' }
      const latitude = Number(lat)
      const longitude = Number(lon)
      if (!Number.isFinite(latitude) || !Number.isFinite(longitude)) return { problem: 'must be numbers' }
      return { value: { latitude, longitude, ...(label ? { label } : {}) } }
    },
    same: (_f, stored, read) => {
      const a = stored as { latitude?: number; longitude?: number; label?: string } | undefined
      const b = read as { latitude: number; longitude: number; label?: string }
      return !!a && a.latitude === b.latitude && a.longitude === b.longitude && (a.label ?? '') === (b.label ?? '')
    }
  }
}

/** A date-time to the minute, as the form's control holds it. */
function minuteOf(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined
  const d = new Date(v)
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString().slice(0, 16)
}

/** Whether a value read from a form is the stored value as the form showed it (see FieldUi.same); groups row by row. */
export function sameAsShown(field: FieldDefinition, stored: unknown, read: unknown): boolean {
  const blank = (v: unknown) => v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0)
  if (blank(stored) || blank(read)) return blank(stored) && blank(read)
  if (field.type === 'group') {
    if (!Array.isArray(stored) || !Array.isArray(read) || stored.length !== read.length) return false
    return stored.every((item: Record<string, unknown>, i) =>
      field.fields.every((m) => sameAsShown(m, item?.[m.key], (read[i] as Record<string, unknown>)?.[m.key]))
    )
  }
  const ui = fieldUi[field.type]
  return ui.same ? ui.same(field, stored, read) : JSON.stringify(stored) === JSON.stringify(read)
}

/** A field's value on a page (choice labels, user names, record numbers), '' when it has none. */
export function showValue(field: FieldDefinition, value: unknown, names: Names): SafeHtml | string {
  if (value === undefined || value === null || value === '') return ''
  return fieldUi[field.type].show(field, value, names)
}

/** The user ids and record ids a set of payloads names (for one lookup of names per page). */
export function namedIds(fields: readonly FieldDefinition[], payloads: ReadonlyArray<Record<string, unknown>>) {
  const users = new Set<string>()
  /** Referenced record ids by the module their field references. */
  const records = new Map<string, Set<string>>()
  const visit = (f: FieldDefinition, v: unknown) => {
    if (typeof v === 'string' && f.type === 'user') users.add(v)
    else if (typeof v === 'string' && f.type === 'recordRef')
      records.set(f.module, (records.get(f.module) ?? new Set()).add(v))
    else if (f.type === 'group' && Array.isArray(v))
      for (const item of v) for (const m of f.fields) visit(m, (item as Record<string, unknown>)?.[m.key])
  }
  for (const p of payloads) for (const f of fields) visit(f, p[f.key])
  return { users, records }
}
