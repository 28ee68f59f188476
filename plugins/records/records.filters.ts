import type { Knex } from 'knex'
import { creatorId, type RowRule } from '../../core/auth/access.ts'
import type { Principal } from '../../core/auth/principal.ts'
import { problems } from '../../core/errors/index.ts'
import {
  fieldFinding,
  fieldToFilter,
  filterableMembers,
  filterPaths,
  groupItem,
  groupItems,
  operatorSql,
  rangeIndexed,
  rangeOperators,
  type FilterSpec,
  type Operator
} from '../../core/modules/derive/filters.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { FieldDefinition } from '../../core/modules/types.ts'
import { isUuid, validationError } from '../../core/validation.ts'
import { clock } from '../../core/clock.ts'
import { canonicalExternalRef } from './records.external-ref.ts'
import { overdueCondition } from './records.due.ts'
import type { Search } from './records.search.ts'
import { dateFilterColumns, type DateFilterName, type RecordQuery } from './records.schema.ts'

/** One SQL condition of a list: its shape (part of the prepared statement's key), its values, its knex form. */
export interface FilterClause {
  shape: string
  values: unknown[]
  /** Mutates the builder; what it returns (knex's chain returns the builder, a thenable that runs only when awaited) is ignored, as ShapedQuery ignores it. */
  apply: (b: Knex.QueryBuilder) => unknown
  /** The same condition on every call (live records only): its plan does not depend on values (ShapedQuery.planEachCall). */
  constant?: true
  /**
   * A range on a value indexed in creation order too (`rangeIndexed`): where the first live record in it stands is
   * found inside that index, passing over the others, and a list in creation order with other filters starts there.
   */
  range?: true
  /** The text search's condition: a count may estimate the list from the words' statistics instead (records.class.ts). */
  search?: true
}

/** What a list of records is filtered by, besides its tenant and module. */
export interface FilterInput {
  query: RecordQuery
  module: RegisteredModule
  /** Who lists: `createdBy=me` is its user. */
  principal: Principal
  /** The caller's row-level rule, if any. */
  rule: RowRule | undefined
  /** Fields the caller may not read. */
  hidden: ReadonlySet<string>
  limit: number
  /** The list's search (records.search.ts `searchOf`), read once for the filter and the order. */
  search?: Search
}

/**
 * One list filter, written once: `read` takes its values from the query (checked; none when the
 * query does not use it, several for a filter that repeats), and each value yields both its SQL
 * conditions and what it binds a cursor to. The scope entries are those cursors were sealed with
 * before this table, so a cursor issued then still opens.
 */
interface RecordFilter<V> {
  read(input: FilterInput): V[]
  clauses(value: V): FilterClause[]
  /** The value's entry in the cursor scope; undefined binds nothing (the default, live records only). */
  scope(value: V): unknown
}

const clause = (shape: string, values: unknown[], apply: (b: Knex.QueryBuilder) => unknown): FilterClause => ({
  shape,
  values,
  apply
})
const filter = <V>(f: RecordFilter<V>) => f as RecordFilter<unknown>

const rowFilter = filter<RowRule>({
  read: ({ rule }) => (rule ? [rule] : []),
  clauses: (rule) => [clause(`row:${rule.key}`, rule.bindings, (b) => b.whereRaw(rule.sql, rule.bindings))],
  scope: (rule) => ['row', rule.key, rule.bindings]
})

// Sync clients ask for deleted records too, so that deletions reach them.
const deletedFilter = filter<'live' | 'includeDeleted'>({
  read: ({ query }) => [query.includeDeleted ? 'includeDeleted' : 'live'],
  clauses: (v) => (v === 'live' ? [{ ...clause('live', [], (b) => b.whereNull('r.deleted_at')), constant: true }] : []),
  scope: (v) => (v === 'live' ? undefined : v)
})

const stateFilter = filter<string[]>({
  read: ({ query, module }) => {
    if (!query.state) return []
    const states = query.state.split(',').map((s) => s.trim())
    const unknown = states.filter((s) => !module.states.has(s))
    if (unknown.length) {
      const allowed = [...module.states.keys()]
      throw validationError([
        {
          pointer: '/state',
          field: 'state',
          code: 'enum',
          detail: `must be one of: ${allowed.join(', ')} (got ${unknown.join(', ')})`,
          allowed
        }
      ])
    }
    return [states]
  },
  clauses: (states) => [clause(`state:${states.length}`, states, (b) => b.whereIn('r.state', states))],
  scope: (states) => ['state', states]
})

const idFilter = filter<string[]>({
  read: ({ query, limit }) => {
    if (!query.id) return []
    const ids = query.id.split(',').map((s) => s.trim().toLowerCase())
    const bad = ids.filter((s) => !isUuid(s))
    if (bad.length || ids.length > limit) {
      const detail = bad.length
        ? `must be record ids (UUIDs) separated by commas (got ${bad
            .slice(0, 3)
            .map((b) => JSON.stringify(b))
            .join(', ')})`
        : `names ${ids.length} records; at most the page limit (${limit}) per call`
      throw validationError([{ pointer: '/id', field: 'id', code: bad.length ? 'format' : 'maxItems', detail }])
    }
    return [ids]
  },
  clauses: (ids) => [clause(`id:${ids.length}`, ids, (b) => b.whereIn('r.id', ids))],
  scope: (ids) => ['id', ids]
})

/** A filter on one column by equality or `>=`, its value as the query gives it (after `canonical`). */
const columnFilter = (
  name: 'externalRef' | DateFilterName,
  column: string,
  operator: '=' | '>=' | '<',
  { canonical = (v: string) => v, range = false }: { canonical?: (v: string) => string; range?: boolean } = {}
) =>
  filter<string>({
    read: ({ query }) => (query[name] ? [canonical(query[name])] : []),
    clauses: (v) => [
      { ...clause(name, [v], (b) => b.where(column, operator, v)), ...(range ? { range: true as const } : {}) }
    ],
    scope: (v) => [name, v]
  })

/** Filtering on a field one may not read (a group's members included) would reveal it a bit at a time: a 403. */
function assertFilterable(module: RegisteredModule, hidden: ReadonlySet<string>, key: string): void {
  if (!hidden.has(key)) return
  const roles = module.fields.get(key)?.access?.read ?? []
  throw problems.forbidden(
    'field.forbidden',
    `This credential may not read field "${key}" of module "${module.definition.key}", so it cannot filter on it; reading it needs one of the roles ${roles.join(', ')}.`,
    { field: key }
  )
}

/**
 * The payload filters, one per field: a top-level field's conditions, or those on a group's members
 * (`payload[checklist.result]`), which one item of the group must meet together.
 */
const payloadFilter = filter<{ key: string; condition: unknown; clauses: FilterClause[] }>({
  read: ({ query, module, hidden }) => {
    const byField = new Map<string, Array<[string, unknown]>>()
    for (const [path, condition] of Object.entries(query.payload ?? {})) {
      const key = path.split('.', 1)[0]
      byField.set(key, [...(byField.get(key) ?? []), [path, condition]])
    }
    return [...byField].map(([key, entries]) => {
      // Filtering on a field one may not read (a group's members included) would reveal it a bit at a time.
      assertFilterable(module, hidden, key)
      const conditions = entries.flatMap(([path, condition]) => payloadConditions(module, path, condition))
      // A top-level field has one entry under its own key; any other is a member of the group `key`.
      const top = entries.length === 1 && entries[0][0] === key
      // (An export's JSON may give a member no operator: no condition, as for a top-level field.)
      const sqls: Array<{ sql: string; bindings: unknown[]; range?: boolean }> =
        top || !conditions.length ? conditions : [groupItems(key, conditions)]
      const condition = top
        ? entries[0][1]
        : Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      const clauses = sqls.map((c) => ({
        ...clause(c.sql, c.bindings, (b) => b.whereRaw(c.sql, c.bindings as Knex.RawBinding[])),
        ...(c.range ? { range: true as const } : {})
      }))
      return { key, condition, clauses }
    })
  },
  clauses: (v) => v.clauses,
  scope: (v) => ['payload', v.key, v.condition]
})

/** Overdue or not (a module's `due`, records.due.ts), on the platform's clock; its date field's index serves it. */
const overdueFilter = filter<{ overdue: boolean; sql: string; bindings: unknown[] }>({
  read: ({ query, module, hidden }) => {
    if (query.overdue === undefined) return []
    if (!module.definition.due)
      throw validationError([
        {
          pointer: '/overdue',
          field: 'overdue',
          code: 'filter',
          detail: `cannot be used: module "${module.definition.key}" declares no due date`
        }
      ])
    // Overdue is a filter on the due date: a field one may not read, as any payload filter.
    assertFilterable(module, hidden, module.definition.due.field)
    return [{ overdue: query.overdue, ...overdueCondition(module, query.overdue, clock().now()) }]
  },
  clauses: (v) => [clause(`overdue:${v.sql}`, v.bindings, (b) => b.whereRaw(v.sql, v.bindings as Knex.RawBinding[]))],
  scope: (v) => ['overdue', v.overdue]
})

/** Text search (records.search.ts): the module's search document against the query's words. */
const searchFilter = filter<Search & { q: string }>({
  read: ({ query, search }) => (search ? [{ q: query.q!, ...search }] : []),
  clauses: (v) => [
    {
      ...clause(`q:${v.document}`, [v.words], (b) =>
        b.whereRaw(`${v.document} @@ to_tsquery('simple'::regconfig, records_fold(?))`, [v.words])
      ),
      search: true
    }
  ],
  scope: (v) => ['q', v.q]
})

/** Numbers in any case (`inc-2026-00003`), whole or by their start; the platform's index on lower(number) serves both. */
const numberFilter = filter<string>({
  read: ({ query }) => (query.number ? [query.number.toLowerCase()] : []),
  clauses: (v) => [clause('number', [v], (b) => b.whereRaw('lower(r.number) = ?', [v]))],
  scope: (v) => ['number', v]
})
const numberPrefixFilter = filter<string>({
  read: ({ query }) => (query.numberPrefix ? [query.numberPrefix.toLowerCase()] : []),
  // A range of the index's order (text_pattern_ops compares bytes): LIKE with a bound pattern cannot use it.
  clauses: (v) => [
    clause('numberPrefix', [v, v], (b) =>
      b.whereRaw(`lower(r.number) ~>=~ ? AND lower(r.number) ~<~ (? || chr(1114111))`, [v, v])
    )
  ],
  scope: (v) => ['numberPrefix', v]
})

/**
 * Records by their creator: `createdBy.id`, the expression the row rule `createdBy: self` compares (core/auth/access.ts),
 * so one platform index (records.indexes.ts) serves both. `me` is the caller's user; the cursor binds the id it stands
 * for. A record made through a service account or API key is that token's (its `createdBy.id`), not the person's it
 * acts on behalf of (`onBehalfOf`): that is who made the token, not who reported the record (an integration's imports
 * would all be its creator's), and it keeps the filter what a reporter's row rule shows as their own, on one index.
 */
const createdByFilter = filter<string>({
  read: ({ query, principal }) => {
    const raw = query.createdBy
    if (raw === undefined) return []
    const refuse = (code: string, detail: string) =>
      validationError([{ pointer: '/createdBy', field: 'createdBy', code, detail }])
    if (raw === 'me') {
      if (!principal.userId)
        throw refuse(
          'filter',
          `cannot be "me": this credential (${principal.actor.type}) has no user behind it; give a user id`
        )
      return [principal.userId]
    }
    if (!isUuid(raw)) throw refuse('format', `must be a user id (UUID) or "me" (got ${JSON.stringify(raw)})`)
    return [raw.toLowerCase()]
  },
  clauses: (id) => [clause('createdBy', [id], (b) => b.whereRaw(`${creatorId()} = ?`, [id]))],
  scope: (id) => ['createdBy', id]
})

/**
 * The list filters of `GET /api/v1/records`, in the order their conditions bind in the SQL and
 * their entries stand in the cursor scope.
 */
const recordFilters: ReadonlyArray<RecordFilter<unknown>> = [
  rowFilter,
  deletedFilter,
  stateFilter,
  idFilter,
  columnFilter('externalRef', 'r.external_ref', '=', { canonical: canonicalExternalRef }),
  numberFilter,
  // Where updatedSince alone stood: a cursor issued with it keeps its scope.
  ...(Object.keys(dateFilterColumns) as DateFilterName[]).map((name) =>
    columnFilter(name, dateFilterColumns[name].column, dateFilterColumns[name].operator, {
      range: dateFilterColumns[name].rangeIndexed
    })
  ),
  payloadFilter,
  searchFilter,
  numberPrefixFilter,
  overdueFilter,
  createdByFilter
]

/**
 * The SQL conditions of a list and the cursor scope they make, from one reading of the query:
 * a cursor opens only under the filters (and tenant and module) it was issued with.
 */
export function listFilters(tenantId: string, input: FilterInput): { clauses: FilterClause[]; scope: unknown[] } {
  const clauses: FilterClause[] = []
  const scope: unknown[] = [tenantId, input.module.definition.key]
  for (const f of recordFilters) {
    for (const value of f.read(input)) {
      clauses.push(...f.clauses(value))
      const entry = f.scope(value)
      if (entry !== undefined) scope.push(entry)
    }
  }
  return { clauses, scope }
}

/**
 * What a filter path names: a filterable top-level field (its expression over `payload`) or a filterable member of a
 * group, `group.member` (over one item of the group); otherwise a 400 listing the paths that filter.
 */
function filterTarget(
  module: RegisteredModule,
  path: string
): { field: FieldDefinition; spec: FilterSpec; expr: string } {
  const [key, member, ...rest] = path.split('.')
  const top = module.fields.get(key)
  const field =
    member === undefined
      ? top && fieldFinding(top).filterable && top
      : top && !rest.length && filterableMembers(top).find((m) => m.key === member)
  const spec = field ? fieldToFilter[field.type] : null
  if (!field || !spec) {
    const allowed = filterPaths(module.definition.fields)
    throw validationError([
      {
        pointer: `/payload/${path}`,
        field: `payload.${path}`,
        code: 'filter',
        detail: `cannot be filtered on; filterable fields: ${allowed.join(', ')}`,
        allowed
      }
    ])
  }
  return { field, spec, expr: member === undefined ? spec.expr(key) : spec.expr(member, groupItem) }
}

/** A payload filter's SQL: the path must be filterable and the operators its type's. */
function payloadConditions(
  module: RegisteredModule,
  path: string,
  condition: unknown
): Array<{ sql: string; bindings: unknown[]; range?: boolean }> {
  const { field, spec, expr } = filterTarget(module, path)
  const ops: Array<[Operator, string | string[]]> =
    typeof condition === 'string'
      ? [[spec.bare ?? 'eq', condition]]
      : Object.entries(condition as Record<string, string | string[]>).map(([op, v]) => [op as Operator, v])
  const out: Array<{ sql: string; bindings: unknown[]; range?: boolean }> = []
  // A top-level field's range (a member's is inside its group's items, in no index of its own).
  const ranged = !path.includes('.') && rangeIndexed(field)
  for (const [op, raw] of ops) {
    const pointer = `/payload/${path}${typeof condition === 'string' ? '' : `/${op}`}`
    if (!spec.operators.includes(op)) {
      throw validationError([
        {
          pointer,
          field: `payload.${path}`,
          code: 'operator',
          detail: `does not support operator "${op}"; allowed: ${spec.operators.join(', ')}`,
          allowed: [...spec.operators]
        }
      ])
    }
    const values = Array.isArray(raw) ? raw.map(String) : [String(raw)]
    const parsed = values.map((v) => {
      const r = spec.parse(v, field)
      if ('error' in r)
        throw validationError([
          {
            pointer,
            field: `payload.${path}`,
            code: 'filter',
            detail: r.error,
            ...(r.allowed ? { allowed: r.allowed } : {})
          }
        ])
      return r.value
    })
    out.push({ ...operatorSql[op](expr, parsed), range: ranged && rangeOperators.includes(op) })
  }
  return out
}
