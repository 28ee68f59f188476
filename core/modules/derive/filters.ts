import { isFormat, isUuid } from '../../validation.ts'
import type { FieldDefinition, FieldType } from '../types.ts'

/** How a top-level payload field is filtered in list queries: its SQL expression and value parser. */
export interface FilterSpec {
  operators: readonly Operator[]
  /** SQL expression over the `payload` column; `key` is a validated camelCase identifier. */
  expr(key: string): string
  /** Parses one query-string value; returns an error text when it does not fit. */
  parse(raw: string, field: FieldDefinition): { value: unknown } | { error: string; allowed?: unknown[] }
}

export type Operator = 'eq' | 'ne' | 'in' | 'gt' | 'gte' | 'lt' | 'lte'
const equality: readonly Operator[] = ['eq', 'ne', 'in']
const ordered: readonly Operator[] = ['eq', 'ne', 'in', 'gt', 'gte', 'lt', 'lte']
const text = (key: string) => `(payload->>'${key}')`

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
  text: { operators: equality, expr: text, parse: asText },
  longText: null,
  number: { operators: ordered, expr: (k) => `(payload->>'${k}')::numeric`, parse: asNumber(false) },
  integer: { operators: ordered, expr: (k) => `(payload->>'${k}')::numeric`, parse: asNumber(true) },
  boolean: {
    operators: ['eq', 'ne'],
    expr: (k) => `(payload->>'${k}')::boolean`,
    parse: (raw) =>
      raw === 'true' || raw === 'false'
        ? { value: raw === 'true' }
        : { error: 'must be true or false', allowed: [true, false] }
  },
  date: {
    operators: ordered,
    expr: (k) => `(payload->>'${k}')::date`,
    parse: (raw) => (isFormat('date', raw) ? { value: raw } : { error: 'must be a date, YYYY-MM-DD' })
  },
  datetime: {
    operators: ordered,
    expr: (k) => `(payload->>'${k}')::timestamptz`,
    parse: (raw) =>
      isFormat('date-time', raw) ? { value: raw } : { error: 'must be an ISO 8601 date-time with a timezone' }
  },
  singleChoice: {
    operators: equality,
    expr: text,
    parse: (raw, f) => {
      const allowed = f.type === 'singleChoice' ? f.options.map((o) => (typeof o === 'string' ? o : o.value)) : []
      return allowed.includes(raw) ? { value: raw } : { error: `must be one of: ${allowed.join(', ')}`, allowed }
    }
  },
  multipleChoice: null,
  user: {
    operators: equality,
    expr: text,
    parse: (raw) => (isUuid(raw) ? { value: raw.toLowerCase() } : { error: 'must be a user id (UUID)' })
  },
  recordRef: {
    operators: equality,
    expr: text,
    parse: (raw) => (isUuid(raw) ? { value: raw.toLowerCase() } : { error: 'must be a record id (UUID)' })
  },
  group: null,
  location: null
}

export const sqlOperators: Record<Exclude<Operator, 'in'>, string> = {
  eq: '=',
  ne: 'IS DISTINCT FROM',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<='
}
