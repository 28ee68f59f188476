import type { RegisteredModule } from '../registry.ts'
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
  payload: Record<string, unknown>
}

export interface ExportColumn extends ColumnSpec {
  get(record: ExportRecord): CellValue
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
function groupText(v: unknown, fields: readonly FieldDefinition[]): string | null {
  if (isBlank(v)) return null
  if (!Array.isArray(v)) return asText(v)
  if (v.length === 0) return null
  const specs = fields.map((f) => columnOf(f))
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

const col = (f: FieldDefinition, kind: ColumnSpec['kind'], width: number, value: ColumnSpec['value']): ColumnSpec => {
  const header = f.label ?? f.key
  return { key: f.key, header, kind, width: Math.max(width, Math.min(header.length, 40)), value }
}

/** One row per field type: how a payload value becomes an export cell. */
export const fieldToColumn: Record<FieldType, (f: FieldDefinition) => ColumnSpec> = {
  text: (f) => col(f, 'text', 30, asText),
  longText: (f) => col(f, 'text', 50, asText),
  number: (f) => col(f, 'number', 12, asNumber),
  integer: (f) => col(f, 'integer', 10, asNumber),
  boolean: (f) => col(f, 'boolean', 8, asBoolean),
  date: (f) => col(f, 'date', 12, asDate),
  datetime: (f) => col(f, 'datetime', 20, asDateTime),
  singleChoice: (f) => col(f, 'text', 16, asText),
  multipleChoice: (f) => col(f, 'text', 30, (v) => (Array.isArray(v) ? (v.length ? v.map((x) => asText(x) ?? '').join(', ') : null) : asText(v))),
  user: (f) => col(f, 'text', 38, asText),
  recordRef: (f) => col(f, 'text', 38, asText),
  group: (f) => col(f, 'text', 60, (v) => groupText(v, f.type === 'group' ? f.fields : [])),
  location: (f) => col(f, 'text', 30, locationText)
}

/** The column of any field definition. */
export function columnOf(f: FieldDefinition): ColumnSpec {
  return fieldToColumn[f.type](f)
}

const systemColumns: readonly ExportColumn[] = [
  { key: 'number', header: 'Number', kind: 'text', width: 18, value: asText, get: (r) => asText(r.number) },
  { key: 'state', header: 'State', kind: 'text', width: 16, value: asText, get: (r) => asText(r.state) },
  { key: 'createdAt', header: 'Created', kind: 'datetime', width: 20, value: asDateTime, get: (r) => asDateTime(r.createdAt) },
  { key: 'updatedAt', header: 'Updated', kind: 'datetime', width: 20, value: asDateTime, get: (r) => asDateTime(r.updatedAt) },
  { key: 'createdBy', header: 'Created by', kind: 'text', width: 24, value: asText, get: (r) => asText(r.createdBy?.name) }
]

/** Export columns of a module: system columns, then visible top-level fields; `only` picks and orders them. */
export function exportColumns(module: RegisteredModule, options: { hidden: ReadonlySet<string>; only?: string[] }): ExportColumn[] {
  const fieldColumns: ExportColumn[] = module.definition.fields
    .filter((f) => !options.hidden.has(f.key))
    .map((f) => {
      const spec = columnOf(f)
      return { ...spec, get: (r: ExportRecord) => spec.value(r.payload?.[f.key]) }
    })
  const all = [...systemColumns, ...fieldColumns]
  if (!options.only) return all

  const byKey = new Map(all.map((c) => [c.key, c]))
  const allowed = [...byKey.keys()]
  // A hidden field is dropped like any field the caller may not read: it must never reach a file.
  const requested = [...new Set(options.only)].filter((k) => !options.hidden.has(k))
  const unknown = requested.filter((k) => !byKey.has(k))
  if (unknown.length) {
    throw new ExportColumnsError(`Unknown export column${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')}; allowed: ${allowed.join(', ')}`, unknown, allowed)
  }
  if (!requested.length) throw new ExportColumnsError(`No exportable column was selected; allowed: ${allowed.join(', ')}`, [], allowed)
  return requested.map((k) => byKey.get(k)!)
}
