import type { RegisteredModule } from '../registry.ts'
import { systemFields, type SystemField, type SystemFieldKind } from '../system-fields.ts'
import type { FieldDefinition, FieldType } from '../types.ts'

/** A cell as the export renderers take it; each renderer formats it by its runtime type and the column kind. */
export type CellValue = string | number | boolean | Date | null

/** How one payload field becomes one export column. */
export interface ColumnSpec {
  key: string
  /** The field label, or its key when it has none. */
  header: string
  /** Renderers format a Date as a date (`date`) or a date-time (`datetime`); numbers stay typed. */
  kind: 'text' | 'number' | 'integer' | 'boolean' | 'date' | 'datetime'
  /** Preferred column width in characters. */
  width: number
  /** The cell for a payload value; tolerant of malformed stored values (never throws). */
  value(v: unknown): CellValue
}

/** A record as the export reads it: the stored payload, not yet trimmed to the columns. */
export interface ExportRecord {
  number: string
  state: string
  createdAt: string
  updatedAt: string
  createdBy: { name: string }
  updatedBy?: { name: string }
  externalRef?: string | null
  payload: Record<string, unknown>
}

/** How cells are worded: the same for every column of one export. */
export interface ColumnOptions {
  /** `labels`: states and choices by their labels (an option without one by its value); `keys` (default): as stored. */
  values?: 'keys' | 'labels'
  /** The name of a user id, when known; user fields fall back to the id. */
  userName?: (id: string) => string | undefined
}

export interface ExportColumn extends ColumnSpec {
  get(record: ExportRecord): CellValue
  /**
   * The stored value the cell is made from, when `get(r)` is `value(read(r))`: a renderer may then
   * look at it first (the CSV writes a date-time already stored as ISO text as it is, without a Date).
   */
  read?(record: ExportRecord): unknown
}

/** `only` named keys the caller may not export; `allowed` lists the ones it may, for a 400 answer. */
export class ExportColumnsError extends Error {
  constructor(
    message: string,
    readonly unknown: string[],
    readonly allowed: string[]
  ) {
    super(message)
    this.name = 'ExportColumnsError'
  }
}

const isBlank = (v: unknown) => v === undefined || v === null || v === ''

/** Plain text of a stored scalar; objects fall back to JSON so nothing is silently lost. */
function asText(v: unknown): string | null {
  if (isBlank(v)) return null
  if (typeof v === 'string') return v
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  if (v instanceof Date) return v.toISOString()
  return JSON.stringify(v)
}

function asNumber(v: unknown): CellValue {
  if (isBlank(v)) return null
  if (typeof v === 'number') return Number.isFinite(v) ? v : null
  const n = typeof v === 'string' ? Number(v) : NaN
  return Number.isFinite(n) ? n : asText(v)
}

/** A `YYYY-MM-DD` value as a Date at UTC midnight, so every renderer shows the same calendar day. */
function asDate(v: unknown): CellValue {
  if (isBlank(v)) return null
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v
  if (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v)) {
    const d = new Date(`${v}T00:00:00Z`)
    if (!Number.isNaN(d.getTime())) return d
  }
  return asText(v)
}

function asDateTime(v: unknown): CellValue {
  if (isBlank(v)) return null
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v
  if (typeof v === 'string') {
    const d = new Date(v)
    if (!Number.isNaN(d.getTime())) return d
  }
  return asText(v)
}

function asBoolean(v: unknown): CellValue {
  if (isBlank(v)) return null
  return typeof v === 'boolean' ? v : asText(v)
}

/** Dates inside composite values (groups) are written as text, the same way the CSV writes them. */
function cellText(c: CellValue, kind: ColumnSpec['kind']): string {
  if (c === null) return ''
  if (c instanceof Date) return kind === 'date' ? c.toISOString().slice(0, 10) : c.toISOString()
  return String(c)
}

/** `item: result, note; item: result` — the first subfield names the entry, the rest follow it. */
function groupText(v: unknown, fields: readonly FieldDefinition[], o: ColumnOptions): string | null {
  if (isBlank(v)) return null
  if (!Array.isArray(v)) return asText(v)
  if (v.length === 0) return null
  const specs = fields.map((f) => columnOf(f, o))
  return v
    .map((item) => {
      if (!item || typeof item !== 'object' || Array.isArray(item)) return asText(item) ?? ''
      const parts = specs.map((s) => cellText(s.value((item as Record<string, unknown>)[s.key]), s.kind))
      const [first, ...rest] = parts
      const tail = rest.filter((p) => p !== '').join(', ')
      return tail ? `${first}: ${tail}` : first
    })
    .join('; ')
}

function locationText(v: unknown): string | null {
  if (isBlank(v)) return null
  const loc = v as { latitude?: unknown; longitude?: unknown; label?: unknown }
  if (typeof v !== 'object' || typeof loc.latitude !== 'number' || typeof loc.longitude !== 'number') return asText(v)
  const label = typeof loc.label === 'string' && loc.label !== '' ? ` (${loc.label})` : ''
  return `${loc.latitude}, ${loc.longitude}${label}`
}

/** A choice value's label, in labels mode; keys (and values no option names) stay as stored. */
function choiceWording(f: FieldDefinition, o: ColumnOptions): (v: unknown) => string | null {
  if (o.values !== 'labels' || (f.type !== 'singleChoice' && f.type !== 'multipleChoice')) return asText
  const labels = new Map(f.options.map((x) => (typeof x === 'string' ? [x, x] : [x.value, x.label ?? x.value])))
  return (v) => (typeof v === 'string' ? (labels.get(v) ?? v) : asText(v))
}

function userText(v: unknown, o: ColumnOptions): string | null {
  return typeof v === 'string' ? (o.userName?.(v) ?? v) : asText(v)
}

const col = (f: FieldDefinition, kind: ColumnSpec['kind'], width: number, value: ColumnSpec['value']): ColumnSpec => {
  const header = f.label ?? f.key
  return { key: f.key, header, kind, width: Math.max(width, Math.min(header.length, 40)), value }
}

/** One row per field type: how a payload value becomes an export cell. */
export const fieldToColumn: Record<FieldType, (f: FieldDefinition, o?: ColumnOptions) => ColumnSpec> = {
  text: (f) => col(f, 'text', 30, asText),
  longText: (f) => col(f, 'text', 50, asText),
  number: (f) => col(f, 'number', 12, asNumber),
  integer: (f) => col(f, 'integer', 10, asNumber),
  boolean: (f) => col(f, 'boolean', 8, asBoolean),
  date: (f) => col(f, 'date', 12, asDate),
  datetime: (f) => col(f, 'datetime', 20, asDateTime),
  singleChoice: (f, o = {}) => col(f, 'text', 16, choiceWording(f, o)),
  multipleChoice: (f, o = {}) => {
    const word = choiceWording(f, o)
    return col(f, 'text', 30, (v) =>
      Array.isArray(v) ? (v.length ? v.map((x) => word(x) ?? '').join(', ') : null) : word(v)
    )
  },
  user: (f, o = {}) => col(f, 'text', o.userName ? 24 : 38, (v) => userText(v, o)),
  recordRef: (f) => col(f, 'text', 38, asText),
  group: (f, o = {}) => col(f, 'text', 60, (v) => groupText(v, f.type === 'group' ? f.fields : [], o)),
  location: (f) => col(f, 'text', 30, locationText)
}

/** The column of any field definition. */
export function columnOf(f: FieldDefinition, o: ColumnOptions = {}): ColumnSpec {
  return fieldToColumn[f.type](f, o)
}

/** Types that make a poor summary column when a module names none (long, composite or wide). */
const unsummarised = new Set<FieldType>(['longText', 'group', 'location', 'multipleChoice'])

/** The module's summary columns: its `summaryColumns`, or its first four short top-level fields. */
export function summaryColumns(module: RegisteredModule): string[] {
  const declared = module.definition.summaryColumns
  if (declared?.length) return [...declared]
  return module.definition.fields
    .filter((f) => !unsummarised.has(f.type))
    .slice(0, 4)
    .map((f) => f.key)
}

/** One row per system field kind that has a column (core/modules/system-fields.ts): its cell and column kind. */
const systemColumnKinds = {
  uuid: { kind: 'text', value: asText },
  string: { kind: 'text', value: asText },
  integer: { kind: 'integer', value: asNumber },
  datetime: { kind: 'datetime', value: asDateTime },
  actor: { kind: 'text', value: asText }
} satisfies { [K in SystemFieldKind]: Pick<ColumnSpec, 'kind' | 'value'> }

/** The system fields with a column (number, state, timestamps, actors, the source-system reference), worded per `o`. */
function systemColumns(module: RegisteredModule, o: ColumnOptions): ExportColumn[] {
  const stateLabels = new Map([...module.states.values()].map((s) => [s.key, s.label ?? s.key]))
  const state =
    o.values === 'labels' ? (v: unknown) => (typeof v === 'string' ? (stateLabels.get(v) ?? v) : asText(v)) : asText
  return systemFields.flatMap((f: SystemField) => {
    if (!f.column) return []
    const { kind, value: plain } = systemColumnKinds[f.kind]
    const value = f.column.cell === 'state' ? state : plain
    const field = (r: ExportRecord) => (r as unknown as Record<string, unknown>)[f.key]
    const read =
      f.column.cell === 'actorName' ? (r: ExportRecord) => (field(r) as { name?: unknown } | undefined)?.name : field
    const get = (r: ExportRecord) => value(read(r))
    return [{ key: f.key, header: f.column.header, kind, width: f.column.width, value, get, read }]
  })
}

/** `<field>.id`: a user field's id beside its name, so a spreadsheet can still be joined to the source system. */
function userIdColumn(f: FieldDefinition): ExportColumn {
  const header = `${f.label ?? f.key} (id)`
  const read = (r: ExportRecord) => r.payload?.[f.key]
  return { key: `${f.key}.id`, header, kind: 'text', width: 38, value: asText, get: (r) => asText(read(r)), read }
}

/**
 * Export columns of a module: system columns, then visible top-level fields, each user field
 * followed by its id; `only` picks and orders them.
 */
export function exportColumns(
  module: RegisteredModule,
  options: { hidden: ReadonlySet<string>; only?: string[] } & ColumnOptions
): ExportColumn[] {
  const fieldColumns: ExportColumn[] = module.definition.fields
    .filter((f) => !options.hidden.has(f.key))
    .flatMap((f) => {
      const spec = columnOf(f, options)
      const read = (r: ExportRecord) => r.payload?.[f.key]
      const column: ExportColumn = { ...spec, get: (r: ExportRecord) => spec.value(read(r)), read }
      return f.type === 'user' ? [column, userIdColumn(f)] : [column]
    })
  const all = [...systemColumns(module, options), ...fieldColumns]
  if (!options.only) return all

  const byKey = new Map(all.map((c) => [c.key, c]))
  const allowed = [...byKey.keys()]
  // A hidden field is dropped like any field the caller may not read: it must never reach a file.
  const requested = [...new Set(options.only)].filter((k) => !options.hidden.has(k.replace(/\.id$/, '')))
  const unknown = requested.filter((k) => !byKey.has(k))
  if (unknown.length) {
    throw new ExportColumnsError(
      `Unknown export column${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')}; allowed: ${allowed.join(', ')}`,
      unknown,
      allowed
    )
  }
  if (!requested.length)
    throw new ExportColumnsError(`No exportable column was selected; allowed: ${allowed.join(', ')}`, [], allowed)
  return requested.map((k) => byKey.get(k)!)
}

/** The PDF default: Number, State, the visible summary columns, then Created as a short date. */
export function summaryExportColumns(
  module: RegisteredModule,
  options: { hidden: ReadonlySet<string> } & ColumnOptions
): ExportColumn[] {
  const keys = ['number', 'state', ...summaryColumns(module).filter((k) => !options.hidden.has(k)), 'createdAt']
  return exportColumns(module, { ...options, only: keys }).map((c) =>
    c.key === 'createdAt'
      ? { ...c, kind: 'date', width: 10, value: asDate, get: (r) => asDateTime(r.createdAt), read: undefined }
      : c
  )
}
