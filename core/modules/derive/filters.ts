import { isFormat, isUuid } from '../../validation.ts'
import type { FieldDefinition, FieldType } from '../types.ts'

/** How a payload field is filtered, sorted and indexed in list queries: its SQL expression and value parser. */
export interface FilterSpec {
  operators: readonly Operator[]
  /** What a bare value (`payload[field]=value`, no operator) means; `eq` unless said. */
  bare?: Operator
  /**
   * SQL expression over the jsonb `source`: the `payload` column for a top-level field, one item of a group for a
   * member (`groupItems`). `key` is a validated camelCase identifier. Over `payload` it is also the expression of the
   * field's index (plugins/records/records.indexes.ts), so it must be immutable and never fail: a value of another type
   * (the same key in another module, a record stored under an older version) is NULL, not an error.
   */
  expr(key: string, source?: string): string
  /** Parses one query-string value; returns an error text when it does not fit. */
  parse(raw: string, field: FieldDefinition): { value: unknown } | { error: string; allowed?: unknown[] }
  /** Indexed unless the module says otherwise (`filterable: false`), and sortable by default. */
  defaults: { indexed: boolean; sortable: boolean }
  /** The index method that serves `expr` and the type's operators: btree for comparisons, gin for jsonb containment. */
  index: 'btree' | 'gin'
}

export type Operator = 'eq' | 'ne' | 'in' | 'gt' | 'gte' | 'lt' | 'lte' | 'contains' | 'containsAny'

/** The operators whose value is a list: REST's repeated or comma-joined values, GraphQL's lists. */
export type ListOperator = Extract<Operator, 'in' | 'contains' | 'containsAny'>
export const listOperators: readonly ListOperator[] = ['in', 'contains', 'containsAny']
export const isListOperator = (op: Operator): op is ListOperator => (listOperators as readonly Operator[]).includes(op)

/** What each operator means, for the GraphQL and OpenAPI descriptions. */
export const operatorDocs: Record<Operator, string> = {
  eq: 'Equal to',
  ne: 'Not equal to',
  in: 'One of',
  gt: 'Greater than',
  gte: 'At least',
  lt: 'Less than',
  lte: 'At most',
  contains: 'Holds this value (several: all of them)',
  containsAny: 'Holds at least one of these values'
}

/** One operator's SQL condition over a field's expression and its parsed values (one unless the operator takes a list). */
export type OperatorSql = (expr: string, values: unknown[]) => { sql: string; bindings: unknown[] }

const compare =
  (sql: string): OperatorSql =>
  (expr, values) => ({ sql: `${expr} ${sql} ?`, bindings: values.slice(0, 1) })

/**
 * One SQL per operator, whichever type offers it: a type whose values need another SQL gets another operator. The
 * containment operators read a jsonb array expression, and are those a GIN index on it serves (`@>`, `?|`); `?|` would
 * also match a bare string (a value of another type under the key), hence the array test. (`\\?` is knex's literal
 * question mark.)
 */
export const operatorSql: Record<Operator, OperatorSql> = {
  eq: compare('='),
  ne: compare('IS DISTINCT FROM'),
  in: (expr, values) => ({ sql: `${expr} IN (${values.map(() => '?').join(', ')})`, bindings: values }),
  gt: compare('>'),
  gte: compare('>='),
  lt: compare('<'),
  lte: compare('<='),
  contains: (expr, values) => ({ sql: `${expr} @> ?::jsonb`, bindings: [JSON.stringify(values)] }),
  containsAny: (expr, values) => ({
    sql: `(jsonb_typeof(${expr}) = 'array' AND ${expr} \\?| ?::text[])`,
    bindings: [values]
  })
}

const equality: readonly Operator[] = ['eq', 'ne', 'in']
const ordered: readonly Operator[] = ['eq', 'ne', 'in', 'gt', 'gte', 'lt', 'lte']
const text = (key: string, source = 'payload') => `(${source}->>'${key}')`
// The functions of plugins/records/migrations/005-query-functions.ts: typed values or NULL, never an error.
const numeric = (key: string, source = 'payload') => `records_numeric(${source}->'${key}')`
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
const asOption: FilterSpec['parse'] = (raw, f) => {
  const allowed =
    f.type === 'singleChoice' || f.type === 'multipleChoice'
      ? f.options.map((o) => (typeof o === 'string' ? o : o.value))
      : []
  return allowed.includes(raw) ? { value: raw } : { error: `must be one of: ${allowed.join(', ')}`, allowed }
}

/**
 * One row per field type; null marks a type that cannot be filtered on itself (long text, locations; a group is
 * filtered through its members, `groupItems`).
 */
export const fieldToFilter: { [T in FieldType]: FilterSpec | null } = {
  text: { operators: equality, expr: text, parse: asText, defaults: off, index: 'btree' },
  longText: null,
  number: { operators: ordered, expr: numeric, parse: asNumber(false), defaults: off, index: 'btree' },
  integer: { operators: ordered, expr: numeric, parse: asNumber(true), defaults: off, index: 'btree' },
  boolean: {
    operators: ['eq', 'ne'],
    expr: (k, source = 'payload') => `records_boolean(${source}->'${k}')`,
    parse: (raw) =>
      raw === 'true' || raw === 'false'
        ? { value: raw === 'true' }
        : { error: 'must be true or false', allowed: [true, false] },
    defaults: off,
    index: 'btree'
  },
  date: {
    operators: ordered,
    expr: (k, source = 'payload') => `records_date(${source}->>'${k}')`,
    parse: (raw) => (isFormat('date', raw) ? { value: raw } : { error: 'must be a date, YYYY-MM-DD' }),
    defaults: dated,
    index: 'btree'
  },
  datetime: {
    operators: ordered,
    expr: (k, source = 'payload') => `records_timestamptz(${source}->>'${k}')`,
    parse: (raw) =>
      isFormat('date-time', raw) ? { value: raw } : { error: 'must be an ISO 8601 date-time with a timezone' },
    defaults: dated,
    index: 'btree'
  },
  singleChoice: {
    operators: equality,
    expr: text,
    parse: asOption,
    defaults: indexed,
    index: 'btree'
  },
  // The record's list of values as jsonb: what `@>` and `?|` read, and a GIN index serves.
  multipleChoice: {
    operators: ['contains', 'containsAny'],
    bare: 'contains',
    expr: (k, source = 'payload') => `(${source}->'${k}')`,
    parse: asOption,
    defaults: off,
    index: 'gin'
  },
  user: {
    operators: equality,
    expr: text,
    parse: (raw) => (isUuid(raw) ? { value: raw.toLowerCase() } : { error: 'must be a user id (UUID)' }),
    defaults: indexed,
    index: 'btree'
  },
  recordRef: {
    operators: equality,
    expr: text,
    parse: (raw) => (isUuid(raw) ? { value: raw.toLowerCase() } : { error: 'must be a record id (UUID)' }),
    defaults: indexed,
    index: 'btree'
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

/** The operators of a range: `gt`, `gte`, `lt`, `lte`. */
export const rangeOperators: readonly Operator[] = ['gt', 'gte', 'lt', 'lte']

/**
 * A field whose ranges are indexed in creation order too, (tenant, module, seq, value), beside its (value, seq) index:
 * an indexed field of a type with ranges (numbers, dates, date-times). A range in creation order then passes over
 * the records outside it inside the index (plugins/records/records.indexes.ts, records.filters.ts).
 */
export function rangeIndexed(field: FieldDefinition): boolean {
  const spec = fieldToFilter[field.type]
  return !!spec && spec.index === 'btree' && fieldFinding(field).indexed && spec.operators.includes('gte')
}

/** The members of a group lists may filter by (`payload[group.member]`); none for a field of another type. */
export function filterableMembers(field: FieldDefinition): readonly FieldDefinition[] {
  return field.type === 'group' ? field.fields.filter((m) => fieldFinding(m).filterable) : []
}

/** The filter paths of a module's fields: each filterable field's key, and `group.member` for a group's members. */
export function filterPaths(fields: readonly FieldDefinition[]): string[] {
  return fields.flatMap((f) =>
    fieldFinding(f).filterable ? [f.key] : filterableMembers(f).map((m) => `${f.key}.${m.key}`)
  )
}

/** Where a member's `expr` reads one item of its group inside `groupItems`. */
export const groupItem = 'item.value'

/**
 * Conditions on a group's members (each over `groupItem`) as one condition on the record: at least one item meets them
 * all. A stored value that is not a list (another type under the same key) has no items, never an error.
 */
export function groupItems(key: string, conditions: ReadonlyArray<{ sql: string; bindings: unknown[] }>) {
  const items = `payload->'${key}'`
  return {
    sql: `EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${items}) = 'array' THEN ${items} END) AS item(value) WHERE ${conditions.map((c) => c.sql).join(' AND ')})`,
    bindings: conditions.flatMap((c) => c.bindings)
  }
}
