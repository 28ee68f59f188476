import { isFormat, isUuid } from '../../validation.ts'
import type { FieldDefinition, FieldType } from '../types.ts'

/** How a top-level payload field is filtered, sorted and indexed in list queries: its SQL expression and value parser. */
export interface FilterSpec {
  operators: readonly Operator[]
  /**
   * SQL expression over the `payload` column; `key` is a validated camelCase identifier. It is also the expression
   * of the field's index (plugins/records/records.indexes.ts), so it must be immutable and never fail: a value of
   * another type (the same key in another module, a record stored under an older version) is NULL, not an error.
   */
  expr(key: string): string
  /** Parses one query-string value; returns an error text when it does not fit. */
  parse(raw: string, field: FieldDefinition): { value: unknown } | { error: string; allowed?: unknown[] }
  /** Indexed unless the module says otherwise (`filterable: false`), and sortable by default. */
  defaults: { indexed: boolean; sortable: boolean }
}

export type Operator = 'eq' | 'ne' | 'in' | 'gt' | 'gte' | 'lt' | 'lte'
const equality: readonly Operator[] = ['eq', 'ne', 'in']
const ordered: readonly Operator[] = ['eq', 'ne', 'in', 'gt', 'gte', 'lt', 'lte']
const text = (key: string) => `(payload->>'${key}')`
// The functions of plugins/records/migrations/005-query-functions.ts: typed values or NULL, never an error.
const numeric = (key: string) => `records_numeric(payload->'${key}')`
const off = { indexed: false, sortable: false }
const indexed = { indexed: true, sortable: false }
const dated = { indexed: true, sortable: true }

const asText: FilterSpec['parse'] = (raw) => ({ value: raw })
const asNumber =
  (integer: boolean): FilterSpec['parse'] =>
  (raw) => {
    const n = Number(raw)
    if (raw.trim() === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n)))
      return { error: `must be ${integer ? 'an integer' : 'a number'}` }
    return { value: n }
  }

/** One row per field type; null marks a type that cannot be filtered on (groups, lists, objects, long text). */
export const fieldToFilter: { [T in FieldType]: FilterSpec | null } = {
  text: { operators: equality, expr: text, parse: asText, defaults: off },
  longText: null,
  number: { operators: ordered, expr: numeric, parse: asNumber(false), defaults: off },
  integer: { operators: ordered, expr: numeric, parse: asNumber(true), defaults: off },
  boolean: {
    operators: ['eq', 'ne'],
    expr: (k) => `records_boolean(payload->'${k}')`,
    parse: (raw) =>
      raw === 'true' || raw === 'false'
        ? { value: raw === 'true' }
        : { error: 'must be true or false', allowed: [true, false] },
    defaults: off
  },
  date: {
    operators: ordered,
    expr: (k) => `records_date(payload->>'${k}')`,
    parse: (raw) => (isFormat('date', raw) ? { value: raw } : { error: 'must be a date, YYYY-MM-DD' }),
    defaults: dated
  },
  datetime: {
    operators: ordered,
    expr: (k) => `records_timestamptz(payload->>'${k}')`,
    parse: (raw) =>
      isFormat('date-time', raw) ? { value: raw } : { error: 'must be an ISO 8601 date-time with a timezone' },
    defaults: dated
  },
  singleChoice: {
    operators: equality,
    expr: text,
    parse: (raw, f) => {
      const allowed = f.type === 'singleChoice' ? f.options.map((o) => (typeof o === 'string' ? o : o.value)) : []
      return allowed.includes(raw) ? { value: raw } : { error: `must be one of: ${allowed.join(', ')}`, allowed }
    },
    defaults: indexed
  },
  multipleChoice: null,
  user: {
    operators: equality,
    expr: text,
    parse: (raw) => (isUuid(raw) ? { value: raw.toLowerCase() } : { error: 'must be a user id (UUID)' }),
    defaults: indexed
  },
  recordRef: {
    operators: equality,
    expr: text,
    parse: (raw) => (isUuid(raw) ? { value: raw.toLowerCase() } : { error: 'must be a record id (UUID)' }),
    defaults: indexed
  },
  group: null,
  location: null
}

/** The field types text search reads (`searchable` by default when the field has no access rule). */
export const searchableTypes: ReadonlySet<FieldType> = new Set(['text', 'longText'])

/** How lists find records by a field: its declarations (SDK `filterable`, `sortable`, `searchable`) over its type's defaults. */
export interface FieldFinding {
  filterable: boolean
  /** An index is kept for it (records.indexes.ts): sortable, or filterable by declaration or by its type's default. */
  indexed: boolean
  sortable: boolean
  searchable: boolean
}

export function fieldFinding(field: FieldDefinition): FieldFinding {
  const spec = fieldToFilter[field.type]
  const declared = field as { filterable?: boolean; sortable?: boolean; searchable?: boolean }
  const filterable = !!spec && declared.filterable !== false
  const sortable = !!spec && (declared.sortable ?? spec.defaults.sortable)
  return {
    filterable,
    sortable,
    indexed: sortable || (filterable && (declared.filterable ?? spec.defaults.indexed)),
    searchable: searchableTypes.has(field.type) && (declared.searchable ?? field.access === undefined)
  }
}

export const sqlOperators: Record<Exclude<Operator, 'in'>, string> = {
  eq: '=',
  ne: 'IS DISTINCT FROM',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<='
}
