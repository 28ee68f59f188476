import type { Knex } from 'knex'
import { sql } from '../../core/db/index.ts'
import { problems } from '../../core/errors/index.ts'
import { fieldFinding, fieldToFilter } from '../../core/modules/derive/filters.ts'
import type { FieldType } from '../../core/modules/types.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import { validationError } from '../../core/validation.ts'
import type { RecordRow } from './records.repository.ts'
import type { Search } from './records.search.ts'

/**
 * The order of a list (`sort`) and how a page resumes after its last row (keyset paging). Every order ends with
 * `seq`, unique, so rows of equal value keep one order and a cursor names a position no insert can move: a row
 * inserted while a client pages is never the reason another is skipped or repeated. Records without a value come
 * last in both directions. They are a segment of their own: the valued rows by (value, seq) first, then the others
 * by seq, each a range of the field's index (records.indexes.ts), so a page 1,000 deep costs what the first does.
 */
export interface ListOrder {
  /** Part of the statement's shape. */
  shape: string
  /** A select column with bindings, added before every other clause (its values come first in the statement). */
  rank?: Segment
  /**
   * Only the newest `window` records the filters select are ordered (relevance: ranking reads each candidate's text);
   * the segments then take the lowest `seq` of them as `bound`.
   */
  window?: number
  /** The cursor scope entry: a cursor opens only under the sort it was issued with. Undefined for the default. */
  scope: unknown
  /** Extra select column carrying the row's position. */
  column?: string
  /** The statements that make a page from a cursor position (undefined: the first page), tried in order until full. */
  segments(position: unknown[] | undefined, bound?: number): Segment[]
  /** The cursor position after a row. */
  position(row: RecordRow & { sort_value?: string | null }): unknown[]
}

export interface Segment {
  shape: string
  values: unknown[]
  apply: (b: Knex.QueryBuilder) => unknown
}

/** The SQL type a sortable field's value compares as (a cursor's value is bound with this cast). */
const sortTypes: Partial<Record<FieldType, string>> = {
  text: 'text',
  number: 'numeric',
  integer: 'numeric',
  date: 'date',
  datetime: 'timestamptz',
  singleChoice: 'text'
}

/** Sorts every module has, by their names in `sort`. */
const systemSorts: Record<string, { expr: string; type: string; nullable: boolean }> = {
  createdAt: { expr: 'r.created_at', type: 'timestamptz', nullable: false },
  updatedAt: { expr: 'r.updated_at', type: 'timestamptz', nullable: false },
  number: { expr: 'r.number', type: 'text', nullable: true }
}

/** The shape of the default order, creation order: a list in it may start further on (`bound`, records.class.ts rangeStart). */
export const seqShape = 'order:seq'

const seqOrder: ListOrder = {
  shape: seqShape,
  scope: undefined,
  segments: (pos, bound) => [
    {
      shape: `${pos ? 'after:seq.' : ''}${bound === undefined ? '' : 'from:seq.'}order:seq`,
      values: [...(pos ? [pos[0]] : []), ...(bound === undefined ? [] : [bound])],
      apply: (b) => {
        if (pos) b.where('r.seq', '>', pos[0] as number)
        if (bound !== undefined) b.where('r.seq', '>=', bound)
        b.orderBy('r.seq')
      }
    }
  ],
  position: (row) => [row.seq]
}

/**
 * `updatedSince` without a sort: change order, with the cursors it always issued ([updated_at, seq], no sort entry).
 * updated_at at full (microsecond) precision: the ISO columns stop at milliseconds, and a cursor at a truncated
 * instant sorts before the row it ended on, so that row (and any later one in the same millisecond) came back.
 */
const syncOrder: ListOrder = {
  shape: 'order:updated',
  scope: undefined,
  column: `to_char(r.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS sort_value`,
  segments: (pos) => [
    {
      shape: pos ? 'after:updated.order:updated' : 'order:updated',
      values: pos ? [pos[0], pos[1]] : [],
      apply: (b) =>
        (pos
          ? b.whereRaw('(r.updated_at, r.seq) > (?::timestamptz, ?)', [pos[0] as string, pos[1] as number])
          : b
        ).orderBy([{ column: 'r.updated_at' }, { column: 'r.seq' }])
    }
  ],
  position: (row) => [row.sort_value, row.seq]
}

/** An order by an expression: the valued rows by (value, seq), then (when it may be missing) the others by seq. */
function valueOrder(name: string, expr: string, type: string, nullable: boolean, descending: boolean): ListOrder {
  const dir = descending ? 'desc' : 'asc'
  const after = descending ? '<' : '>'
  const valued = (pos: unknown[] | undefined): Segment => ({
    shape: `sort:${name}:${dir}:valued${pos ? ':after' : ''}`,
    values: pos ? [pos[1], pos[2]] : [],
    apply: (b) => {
      if (nullable) b.whereRaw(`${expr} IS NOT NULL`)
      if (pos) b.whereRaw(`(${expr}, r.seq) ${after} (?::${type}, ?)`, [pos[1] as string, pos[2] as number])
      b.orderByRaw(`${expr} ${dir}, r.seq ${dir}`)
    }
  })
  const missing = (pos: unknown[] | undefined): Segment => ({
    shape: `sort:${name}:${dir}:missing${pos ? ':after' : ''}`,
    values: pos ? [pos[2]] : [],
    apply: (b) => {
      b.whereRaw(`${expr} IS NULL`)
      if (pos) b.where('r.seq', after, pos[2] as number)
      b.orderByRaw(`r.seq ${dir}`)
    }
  })
  return {
    shape: `sort:${name}:${dir}`,
    scope: ['sort', name, dir],
    // As text: numeric, date, timestamptz (microseconds) and text all read back exactly through the segment's cast.
    column: `(${expr})::text AS sort_value`,
    segments: (pos) => {
      if (!pos) return nullable ? [valued(undefined), missing(undefined)] : [valued(undefined)]
      if (pos[0] === 'missing') return [missing(pos)]
      return nullable ? [valued(pos), missing(undefined)] : [valued(pos)]
    },
    position: (row) =>
      row.sort_value === null || row.sort_value === undefined
        ? ['missing', null, row.seq]
        : ['valued', row.sort_value, row.seq]
  }
}

/** How many of the newest matches of a search `sort=relevance` ranks. */
export const relevanceWindow = 1000

/**
 * Best match first (`sort=relevance`, with `q`): PostgreSQL's cover density rank of the search text against the words,
 * ties newest first. Ranking reads each candidate's text (the index holds words, not ranks), so it ranks the newest
 * `relevanceWindow` matches: bounded work, whatever a word matches; `count=true` says how many match in all.
 */
function relevanceOrder(search: Search): ListOrder {
  const rank = `ts_rank_cd(${search.document}, to_tsquery('simple'::regconfig, records_fold(?)))`
  return {
    shape: 'sort:relevance',
    scope: ['sort', 'relevance'],
    window: relevanceWindow,
    // As text: a real's text form reads back as the same real.
    rank: {
      shape: 'rank',
      values: [search.words],
      apply: (b) => b.select(sql.raw(`(${rank})::text AS sort_value`, [search.words]))
    },
    segments: (pos, bound) => [
      {
        shape: `sort:relevance${bound === undefined ? '' : ':window'}${pos ? ':after' : ''}`,
        values: [...(bound === undefined ? [] : [bound]), ...(pos ? [search.words, pos[0], pos[1]] : []), search.words],
        apply: (b) => {
          if (bound !== undefined) b.where('r.seq', '>=', bound)
          if (pos) b.whereRaw(`(${rank}, r.seq) < (?::real, ?)`, [search.words, pos[0] as string, pos[1] as number])
          b.orderByRaw(`${rank} desc, r.seq desc`, [search.words])
        }
      }
    ],
    position: (row) => [row.sort_value, row.seq]
  }
}

/** The names `sort` takes for a module, as the caller may use them: system ones, then `payload.<key>` of sortable fields it may read. */
export function sortNames(module: RegisteredModule, hidden: ReadonlySet<string>): string[] {
  return [
    ...Object.keys(systemSorts),
    'relevance',
    ...module.definition.fields
      .filter((f) => fieldFinding(f).sortable && sortTypes[f.type] && !hidden.has(f.key))
      .map((f) => `payload.${f.key}`)
  ]
}

/**
 * The order `sort` names (`createdAt`, `-updatedAt`, `number`, `payload.<key>`; `-` for descending), checked: a field
 * the caller may not read cannot order its list (the order would tell its values), nor one not declared sortable.
 */
export function listOrder(
  sort: string | undefined,
  updatedSince: boolean,
  module: RegisteredModule,
  hidden: ReadonlySet<string>,
  search: Search | undefined
): ListOrder {
  if (sort === undefined) return updatedSince ? syncOrder : seqOrder
  if (sort === 'relevance') {
    if (search) return relevanceOrder(search)
    throw validationError([
      { pointer: '/sort', field: 'sort', code: 'search', detail: 'relevance orders a search: give q with it' }
    ])
  }
  const descending = sort.startsWith('-')
  const name = descending ? sort.slice(1) : sort
  const system = systemSorts[name]
  if (system) return valueOrder(name, system.expr, system.type, system.nullable, descending)
  const key = name.startsWith('payload.') ? name.slice('payload.'.length) : undefined
  const field = key === undefined ? undefined : module.fields.get(key)
  if (field && key && hidden.has(key)) {
    const roles = field.access?.read ?? []
    throw problems.forbidden(
      'field.forbidden',
      `This credential may not read field "${key}" of module "${module.definition.key}", so it cannot sort by it; reading it needs one of the roles ${roles.join(', ')}.`,
      { field: key }
    )
  }
  const type = field && fieldFinding(field).sortable ? sortTypes[field.type] : undefined
  if (!field || !type) {
    const allowed = sortNames(module, hidden)
    throw validationError([
      {
        pointer: '/sort',
        field: 'sort',
        code: 'enum',
        detail: `cannot sort by "${name}"; allowed: ${allowed.join(', ')}, each ascending or with - for descending`,
        allowed
      }
    ])
  }
  return valueOrder(name, fieldToFilter[field.type]!.expr(field.key), type, true, descending)
}
