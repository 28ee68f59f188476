import type pg from 'pg'
import {
  assertCan,
  can,
  canFire,
  hiddenFields,
  redactActivity,
  redactPayload,
  rowRule
} from '../../core/auth/access.ts'
import { requirePrincipal, type Principal } from '../../core/auth/principal.ts'
import { sql, transaction, type Queryable } from '../../core/db/index.ts'
import { ShapedQuery } from '../../core/db/shaped-query.ts'
import { problems } from '../../core/errors/index.ts'
import { entityTag, hasWeakTag, ifMatchPasses } from '../../core/http/entity-tag.ts'
import { listOperators } from '../../core/modules/derive/filters.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { WorkflowTransition } from '../../core/modules/types.ts'
import type { CursorCodec } from '../../core/pagination/cursor.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'
import { assertValid, isUuid, validationError } from '../../core/validation.ts'
import * as repo from './records.repository.ts'
import { readableModule } from './records.access.ts'
import { listFilters, type FilterClause } from './records.filters.ts'
import { listOrder, seqShape } from './records.sort.ts'
import { searchOf, type SearchPlan, type WordFrequencies } from './records.search.ts'
import { referenceProblems } from './records.checks.ts'
import { canonicalExternalRef } from './records.external-ref.ts'
import { hasValue } from './records.payload.ts'
import { createRules, deleteRules, patchRules, transitionRules } from './records.rules.ts'
import { separationRefusal } from './records.duties.ts'
import { separationOf } from '../../core/modules/duties.ts'
import { changeRecords, createRecordRows, type RecordChangeOp } from './records.write.ts'
import { asCurrent, moveLocked, settleRefused } from './records.migrate.ts'
import { moduleLiteral } from './records.indexes.ts'
import {
  recordCreateValidator,
  recordPatchValidator,
  recordQueryValidator,
  recordTransitionValidator,
  dateFilterProperties,
  type RecordCreate,
  type RecordOut,
  type RecordPatch,
  type RecordQuery,
  type RecordTransition
} from './records.schema.ts'
import type { CallParams } from '../../core/hooks/call-params.ts'

/** What a list item may carry besides its columns, each in the same statement (GraphQL asks for what its query selects). */
export type RecordInclude = 'activity' | 'attachments' | 'transitions'

export interface RecordParams extends CallParams<RecordQuery> {
  /** Internal only (exports): answer with the number of matching records, no page. */
  countOnly?: boolean
  /**
   * Internal only (exports, `exports.pageSize`): the page size, past `pagination.maxLimit`, of a
   * reader that pages through a whole selection; ignored on a call with a provider.
   */
  pageLimit?: number
  /** find: items with their activity, attachments or available transitions, as `get` gives them. */
  include?: readonly RecordInclude[]
  /** find: a cursor after each item (`RecordPage.cursors`), for GraphQL connection edges. */
  itemCursors?: boolean
  /** get and changes: the record must be of this module (GraphQL's per-module fields); another module's record is a 404. */
  moduleKey?: string
  /** Set by the idempotency hook: stores the response inside the write's own transaction. */
  idempotency?: { complete(db: pg.PoolClient, body: unknown): Promise<void> }
}

export interface RecordPage {
  items: RecordOut[]
  nextCursor: string | null
  limit: number
  /** With params.countOnly. */
  total?: number
  /** With `count=true`: the records the filters select, exact up to countBound, else estimated. */
  count?: { value: number; exact: boolean }
  /** With params.itemCursors: the cursor of the page that starts after each item. */
  cursors?: string[]
}

/** Records a list counts exactly when asked (`count=true`); above it, the count is the planner's estimate. */
export const countBound = 10_000

export interface RecordsOptions {
  pool: pg.Pool
  tenants: TenantDirectory
  cursors: CursorCodec
  defaultLimit: number
  maxLimit: number
  /** The most common words of each module's search text, which choose how a search reads (records.search.ts). */
  words: WordFrequencies
}

/**
 * The records service: REST, the CLI and later transports call it. Its write rules are
 * records.rules.ts and its writes records.write.ts, which bulk loads use for many rows
 * per statement (plugins/bulk): each write here is a batch of one.
 */
export class RecordsService {
  private readonly validateQuery
  private readonly firableCache = new Map<
    string,
    Array<{ key: string; label: string; to: string; requires: readonly string[]; definition: WorkflowTransition }>
  >()
  constructor(private readonly o: RecordsOptions) {
    this.validateQuery = recordQueryValidator(o.maxLimit)
  }

  /** The statistics a search's plan is chosen by, which the index builder keeps up to date. */
  get words(): WordFrequencies {
    return this.o.words
  }

  private principal(params: RecordParams): Principal {
    return requirePrincipal(params, 'A records call')
  }

  private notFound(id: string, tenantId?: string) {
    // Typed `boolean`, not used as the condition itself: isUuid's `value is string` would narrow a string
    // id that is not a UUID to `never` below.
    const uuid: boolean = isUuid(id)
    if (uuid)
      return problems.notFound(
        'record.not_found',
        `No live record ${id} for this tenant. A deleted record is still in the audit log: GET /api/v1/audit-log?recordId=${id}.`
      )
    // A record number in place of the id: say where records are found by number.
    const owner =
      tenantId && String(id).length <= 100
        ? [...(this.o.tenants.get(tenantId)?.modules.values() ?? [])].find((m) => m.numberPattern.matches(id))
        : undefined
    if (owner) {
      const find = `GET /api/v1/records?moduleKey=${owner.definition.key}&number=${encodeURIComponent(id)}`
      return problems.notFound(
        'record.not_found',
        `${id} is a record number, not a record id (a UUID). Find the record by its number with ${find} (add &includeDeleted=true for a deleted one); its id is in the answer.`
      )
    }
    return problems.notFound(
      'record.not_found',
      `No record ${id}: record ids are UUIDs, e.g. the id in a create's Location header. To find a record by its number: GET /api/v1/records?moduleKey=<module>&number=<number>.`
    )
  }

  /** The record's module, checked installed for the caller's tenant; a record of another module is a 404. */
  private moduleOf(
    principal: Principal,
    row: repo.RecordRow | undefined,
    id: string,
    moduleKey?: string
  ): RegisteredModule {
    const m = row && this.o.tenants.get(principal.tenantId)?.modules.get(row.module_key)
    if (m && moduleKey !== undefined && m.definition.key !== moduleKey)
      throw problems.notFound('record.not_found', `No live ${moduleKey} record ${id} for this tenant.`)
    const readable = readableModule(this.o.tenants, principal, row)
    if (!readable) throw this.notFound(id)
    return readable
  }

  private present(
    principal: Principal,
    module: RegisteredModule,
    stored: repo.RecordRow,
    hidden?: ReadonlySet<string>
  ): RecordOut {
    const row = asCurrent(module, stored)
    const out = viewCurrent(principal, module, row, hidden)
    out.attachments ??= []
    // Who fired what so far, for a rule that holds its actor apart from them: a list reads it (firedJson, find), GET
    // one has the record's whole activity.
    const fired =
      stored.fired ??
      row.activity
        ?.filter((a) => a.action === 'transitioned' && a.transition)
        .map((a) => ({ key: a.transition!.key, actor: a.actor }))
    out.availableTransitions = this.firable(principal, module, row.state).map((t) => {
      const refusal = separationRefusal(principal, t.definition, {
        createdBy: row.created_by,
        payload: row.payload,
        transitions: fired
      })
      return {
        key: t.key,
        label: t.label,
        to: t.to,
        missingFields: t.requires.filter((f) => !hasValue(row.payload[f])),
        ...(refusal ? { refusal } : {})
      }
    })
    return out
  }

  /** Transitions the principal's roles may fire from a state, with the fields their guards require; cached per module version, state and roles. */
  private firable(principal: Principal, module: RegisteredModule, state: string) {
    const key = `${module.versionKey}|${state}|${principal.roles === 'all' ? '*' : principal.roles.join(',')}`
    let list = this.firableCache.get(key)
    if (!list) {
      list = module.definition.workflow.transitions
        .filter((t) => t.from.includes(state) && canFire(principal, module, t))
        .map((t) => ({
          key: t.key,
          label: t.label ?? t.key,
          to: t.to,
          requires: module.guards.get(t.key)!,
          definition: t
        }))
      if (this.firableCache.size > 10_000) this.firableCache.clear()
      this.firableCache.set(key, list)
    }
    return list
  }

  /**
   * Checks record references (the schema was checked by the rules). Only references in
   * `changed` are re-checked on an update: a link to an incident deleted later must not
   * freeze every other edit of the corrective action.
   */
  private async checkReferences(
    principal: Principal,
    module: RegisteredModule,
    payload: Record<string, unknown>,
    db: pg.Pool | pg.PoolClient,
    changed?: ReadonlySet<string>
  ) {
    const [found] = await referenceProblems(db, this.o.tenants, principal.tenantId, module, [{ payload, changed }])
    if (found.length) throw validationError(found)
  }

  async find(params: RecordParams): Promise<RecordPage> {
    const principal = this.principal(params)
    const q = inListsOf({ ...(params.query ?? {}) })
    assertValid<RecordQuery>(this.validateQuery, q)
    if (q.moduleKey === undefined) return this.findByNumber(principal, q, params)
    const module = this.o.tenants.module(principal.tenantId, q.moduleKey)
    assertCan(principal, module, 'read')
    const limit = (!params.provider && params.pageLimit) || (q.limit ?? this.o.defaultLimit)
    const rule = rowRule(principal, module)
    const hidden = hiddenFields(principal, module)

    // The order of the page (records.sort.ts): `sort` when given; else updatedSince pages in change order (incremental
    // sync), and a list in creation order.
    const search = searchOf(q.q, module)
    const plan = search && this.o.words.plan(search)
    const order = listOrder(q.sort, !!q.updatedSince, module, hidden, search)
    const include = new Set(params.include ?? [])
    // A list's transitions tell who is held apart from firing them: a rule on earlier transitions reads who fired
    // those (one narrow column, not the activity).
    const separated = include.has('transitions')
      ? [...new Set(module.definition.workflow.transitions.flatMap((t) => separationOf(t).transitions))].sort()
      : []
    const columns = [
      repo.recordColumns,
      ...(order.column ? [order.column] : []),
      ...(include.has('activity') ? [repo.activityJson] : []),
      ...(include.has('attachments') ? [repo.attachmentsJson] : []),
      ...(separated.length ? [repo.firedJson(separated)] : [])
    ].join(', ')
    // The statement's shape names every column it selects.
    const shape = [
      'records.find',
      ...[...include].filter((i) => i !== 'transitions').sort(),
      ...(separated.length ? [`fired:${separated.join(',')}`] : [])
    ].join('.')
    // Internal callers (exports) may ask for the count of the same selection instead of a page.
    const countOnly = params.countOnly === true && !params.provider
    // A cursor is bound to its tenant, module and filters: the same clauses as the SQL make its scope (records.filters.ts),
    // and to its sort.
    const filters = listFilters(principal.tenantId, { query: q, module, principal, rule, hidden, limit, search })
    // Tenant and module are pinned on every shape, first: the count once lacked them and counted every tenant's records.
    // A filter's values decide its plan (records.filters.ts: every clause but a constant one).
    const byValues = filters.clauses.some((c) => !c.constant)
    const selection = (query: ShapedQuery, clauses = filters.clauses) => {
      query
        .planEachCall(byValues)
        .add('tenant', [principal.tenantId], (b) => b.where('r.tenant_id', principal.tenantId))
        // The module as a literal, not a parameter: a module's indexes hold its records only (records.indexes.ts), and
        // a generic plan, which knows no parameter's value, could not use them. A statement per module and shape.
        .add(`module:${module.definition.key}`, [], (b) =>
          b.andWhereRaw(`r.module_key = ${moduleLiteral(module.definition.key)}`)
        )
      for (const c of clauses) query.add(c.shape, c.values, c.apply)
      return query
    }
    // A search whose words the statistics say are common is counted from them (see count).
    const share = search && q.count ? this.o.words.share(search) : undefined
    const searched = share === undefined ? undefined : { share, others: filters.clauses.filter((c) => !c.search) }
    const scope = JSON.stringify(order.scope === undefined ? filters.scope : [...filters.scope, order.scope])
    const position = q.cursor ? this.o.cursors.decode(q.cursor, scope) : undefined
    // The whole selection, whatever the cursor (exports count what they will write before the first page).
    if (countOnly) {
      const total = await this.reading(plan, async (db) => {
        const count = selection(
          new ShapedQuery('records.count', () => sql('records as r').select(sql.raw('count(*)::int AS total')))
        )
        return (await count.run<{ total: number }>(db))[0].total
      })
      return { items: [], nextCursor: null, limit, total }
    }
    // The page, and its count when asked, on one connection: a search's plan is made there (see reading).
    const { rows, count } = await this.reading(plan, async (db) => {
      // The usual page sizes (the default, the largest, an export's page) are written into the statement, not bound:
      // with `LIMIT $n` the planner's generic plan assumes a tenth of the table, so PostgreSQL planned every page
      // afresh (a custom plan each time, ~60 µs of its CPU a page). Any other size stays bound: a shape per size a
      // client may choose would spend ShapedQuery's process-wide budget of named statements for every other query.
      const written = (n: number) =>
        n === this.o.defaultLimit + 1 || n === this.o.maxLimit + 1 || n === (params.pageLimit ?? 0) + 1
      // A page is one statement, or two where it crosses from the records with a value of the sort to those without.
      const rows: Array<repo.RecordRow & { sort_value?: string | null }> = []
      const statement = () => {
        const query = new ShapedQuery(shape, () => sql('records as r').select(sql.raw(columns)))
        if (order.rank) query.add(order.rank.shape, order.rank.values, order.rank.apply)
        return selection(query)
      }
      // An order over a window of the newest matches: where the window begins (none when fewer match). A list in
      // creation order with ranges: where the first record in them stands (rangeStart; null when none is).
      const bound = order.window
        ? (
            await selection(new ShapedQuery('records.window', () => sql('records as r').select('r.seq')))
              .add('order:seq-desc', [], (b) => b.orderBy('r.seq', 'desc'))
              .add(`window:${order.window}`, [], (b) =>
                b.offset(order.window! - 1, { skipBinding: true }).limit(1, { skipBinding: true })
              )
              .run<{ seq: number }>(db)
          )[0]?.seq
        : order.shape === seqShape && !search
          ? await this.rangeStart(filters.clauses, position, selection, db)
          : undefined
      if (bound === null) return { rows, count: q.count ? await this.count(selection, db, searched) : undefined }
      for (const segment of order.segments(position, bound)) {
        const want = limit + 1 - rows.length
        if (want <= 0) break
        const select = statement()
        select.add(segment.shape, segment.values, segment.apply)
        if (written(want)) select.add(`limit:${want}`, [], (b) => b.limit(want, { skipBinding: true }))
        else select.add('limit', [want], (b) => b.limit(want))
        rows.push(...(await select.run<repo.RecordRow & { sort_value?: string | null }>(db)))
      }
      return { rows, count: q.count ? await this.count(selection, db, searched) : undefined }
    })
    const page = rows.slice(0, limit)
    const last = page[page.length - 1]
    const after = (row: repo.RecordRow) => this.o.cursors.encode(scope, order.position(row))
    const nextCursor = rows.length > limit && last ? after(last) : null
    const items = page.map((row) => {
      if (!include.has('transitions')) return view(principal, module, row, hidden)
      const out = this.present(principal, module, row, hidden)
      if (!include.has('attachments')) delete out.attachments
      return out
    })
    return {
      items,
      nextCursor,
      limit,
      ...(count ? { count } : {}),
      ...(params.itemCursors ? { cursors: page.map(after) } : {})
    }
  }

  /**
   * Records by number (`number`, `numberPrefix`) without a module: each module the caller may read in turn, by its own
   * list (its row rules, fields and cursor), a page filled across them; the cursor says which module it stands in and
   * carries that module's cursor. Only filters every module has apply; a module-specific one needs `moduleKey`.
   */
  private async findByNumber(principal: Principal, q: RecordQuery, params: RecordParams): Promise<RecordPage> {
    const across = ['number', 'numberPrefix', 'includeDeleted', 'limit', 'cursor', ...Object.keys(dateFilterProperties)]
    const other = Object.keys(q).filter((k) => !across.includes(k))
    if (!(q.number || q.numberPrefix) || other.length)
      throw validationError([
        {
          pointer: '/moduleKey',
          field: 'moduleKey',
          code: 'required',
          detail: other.length
            ? `is required with ${other.join(', ')} (across modules, only ${across.join(', ')} apply)`
            : 'is required, except to find records by number or numberPrefix across modules'
        }
      ])
    const limit = q.limit ?? this.o.defaultLimit
    const modules = [...(this.o.tenants.get(principal.tenantId)?.modules.values() ?? [])]
      .filter((m) => can(principal, m, 'read'))
      .map((m) => m.definition.key)
      .sort()
    const { cursor, limit: _limit, ...filters } = q
    // The filters in a fixed order: the same query with its parameters written in another order opens the cursor.
    const scope = JSON.stringify([principal.tenantId, 'across-modules', Object.entries(filters).sort()])
    const [from, inner] = cursor
      ? (this.o.cursors.decode(cursor, scope) as [string, string | null])
      : [modules[0], null]
    const items: RecordOut[] = []
    let next: [string, string | null] | null = null
    for (let i = modules.indexOf(from); i >= 0 && i < modules.length; i++) {
      const page = await this.find({
        ...params,
        query: {
          ...filters,
          moduleKey: modules[i],
          limit: limit - items.length,
          ...(i === modules.indexOf(from) && inner ? { cursor: inner } : {})
        }
      })
      items.push(...page.items)
      if (page.nextCursor) next = [modules[i], page.nextCursor]
      else if (items.length >= limit && i + 1 < modules.length) next = [modules[i + 1], null]
      if (next) break
    }
    return { items, nextCursor: next ? this.o.cursors.encode(scope, next) : null, limit }
  }

  /**
   * Where a list in creation order starts when it has ranges indexed in creation order (FilterClause.range) and other
   * filters: the `seq` of the first live record in its ranges (after the cursor), found inside the ranges' index, which
   * passes over the records before them without reading one; null when no record is in them. The planner assumes a
   * range's records are spread evenly through creation order and walks the index of another filter from the start:
   * at a million records, a state with a range of occurrences in the middle of the module read 24,000 records of
   * that state (0.2-0.5 s) before the first in the range. Undefined: the list starts where it would.
   */
  private async rangeStart(
    clauses: FilterClause[],
    position: unknown[] | undefined,
    selection: (query: ShapedQuery, clauses: FilterClause[]) => ShapedQuery,
    db: Queryable
  ): Promise<number | null | undefined> {
    const ranges = clauses.filter((c) => c.range)
    // The ranges' index holds live records only (the constant clause); ranges alone walk it anyway.
    if (!ranges.length || !clauses.some((c) => c.constant) || clauses.every((c) => c.range || c.constant))
      return undefined
    const query = selection(
      new ShapedQuery('records.start', () => sql('records as r').select('r.seq')),
      clauses.filter((c) => c.range || c.constant)
    )
    if (position) query.add('after:seq', [position[0]], (b) => b.where('r.seq', '>', position[0] as number))
    query.add('order:seq.limit:1', [], (b) => b.orderBy('r.seq').limit(1, { skipBinding: true }))
    return (await query.run<{ seq: number }>(db))[0]?.seq ?? null
  }

  /**
   * Runs a list's statements: on the pool, or for a search (`q`) in a read-only transaction that sets how PostgreSQL
   * finds its records (records.search.ts, SearchPlan): a `match` only through bitmaps of index conditions (the search
   * index, with those of the other filters), a `walk` without them (in page order, along the index of the order or
   * of another filter). Left to itself it would take every word for one a record in 200 holds: at a million records it
   * then searched the text of every record in page order for a word 50 records hold (8 s).
   */
  private async reading<T>(plan: SearchPlan | undefined, fn: (db: Queryable) => Promise<T>): Promise<T> {
    if (!plan) return fn(this.o.pool)
    return transaction(this.o.pool, async (client) => {
      // work_mem: a common word's bitmap stays one of rows, not of pages whose every record would be searched again.
      await client.query(
        plan === 'match'
          ? "SET TRANSACTION READ ONLY; SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off; SET LOCAL work_mem = '64MB'"
          : 'SET TRANSACTION READ ONLY; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off'
      )
      return fn(client)
    })
  }

  /**
   * How many records the list's filters select (the whole list, not from the cursor on), as the caller may see them:
   * counted exactly up to `countBound` by PostgreSQL, reading at most one more row than that; above it, the planner's estimate of
   * the same selection (never below what was counted), and `exact: false` says so. A search for words the statistics
   * say are common (expected in more than twice `countBound` records) is estimated without counting.
   */
  private async count(
    selection: (q: ShapedQuery, clauses?: FilterClause[]) => ShapedQuery,
    db: Queryable,
    searched?: { share: number; others: FilterClause[] }
  ): Promise<{ value: number; exact: boolean }> {
    // A common word: counting 10,001 matches reads and tests tens of thousands of records (0.6 s for a word in 30 % of a
    // million), and the planner, which under row-level security takes any word for 0.5 % of the records, then
    // estimates far too few. The list without the search, estimated, times the words' share is near, and costs nothing.
    if (searched) {
      const others = await selection(
        new ShapedQuery('records.count-estimate', () => sql('records as r').select(sql.raw('1'))),
        searched.others
      ).estimate(db, 'records')
      const expected = Math.round(others * searched.share)
      if (expected > 2 * countBound) return { value: expected, exact: false }
    }
    const counted = await selection(
      new ShapedQuery('records.count-bounded', () => sql('records as r').select(sql.raw('1')))
    )
      .add(`limit:${countBound + 1}`, [], (b) => b.limit(countBound + 1, { skipBinding: true }))
      .count(db)
    if (counted <= countBound) return { value: counted, exact: true }
    const estimate = await selection(
      new ShapedQuery('records.count-estimate', () => sql('records as r').select(sql.raw('1')))
    ).estimate(db, 'records')
    return { value: Math.max(estimate, countBound + 1), exact: false }
  }

  async get(id: string, params: RecordParams): Promise<RecordOut> {
    const principal = this.principal(params)
    if (!isUuid(id)) throw this.notFound(String(id), principal.tenantId)
    const row = await repo.selectLive(this.o.pool, principal.tenantId, id)
    const module = this.moduleOf(principal, row, id, params.moduleKey)
    return this.present(principal, module, row!)
  }

  async create(data: RecordCreate, params: RecordParams): Promise<RecordOut> {
    const principal = this.principal(params)
    assertValid<RecordCreate>(recordCreateValidator, data)
    const module = this.o.tenants.module(principal.tenantId, data.moduleKey)
    const { payload, changes } = createRules(principal, module, data.payload)
    const externalRef = data.externalRef === undefined ? null : canonicalExternalRef(data.externalRef)
    await this.checkReferences(principal, module, payload, this.o.pool)
    // A single create is a batch of one through the write path bulk uses (records.write.ts).
    const writer = { tenantId: principal.tenantId, actor: principal.actor }
    const op = { payload, changes, externalRef }
    const idem = params.idempotency
    try {
      if (!idem) return this.present(principal, module, (await createRecordRows(this.o.pool, writer, module, [op]))[0])
      return await transaction(this.o.pool, async (client) => {
        const result = this.present(principal, module, (await createRecordRows(client, writer, module, [op]))[0])
        await idem.complete(client, result)
        return result
      })
    } catch (err) {
      if (repo.isExternalRefClash(err)) {
        throw problems.conflict(
          'record.external_ref_taken',
          `A live ${module.definition.key} record already has externalRef "${externalRef}". Update it, or load it through the bulk endpoint, which upserts by externalRef.`
        )
      }
      throw err
    }
  }

  /** Locks the record, checks If-Match, applies `change` and returns the record as it now is. */
  private async change(
    id: string,
    params: RecordParams,
    change: (
      row: repo.RecordRow,
      module: RegisteredModule,
      principal: Principal,
      client: pg.PoolClient
    ) => Promise<Omit<RecordChangeOp, 'id'> | null>
  ): Promise<RecordOut> {
    const principal = this.principal(params)
    if (!isUuid(id)) throw this.notFound(String(id), principal.tenantId)
    return transaction(this.o.pool, async (client) => {
      const row = await repo.lockLive(client, principal.tenantId, id)
      const module = this.moduleOf(principal, row, id, params.moduleKey)
      if (!ifMatchPasses(params.ifMatch, entityTag(row!.version))) {
        throw problems.preconditionFailed(
          `If-Match names ${params.ifMatch}, but the record's ETag is ${entityTag(row!.version)}.${hasWeakTag(params.ifMatch!) ? ' A weak tag (W/) never matches a change: send the ETag as it came.' : ''}`,
          { currentVersion: row!.version }
        )
      }
      // A record not yet under the loaded version of its module moves first (records.migrate.ts).
      const moved = await moveLocked(client, principal.tenantId, module, [row!])
      let c = await change(moved.rows[0], module, principal, client)
      const refused = moved.refused.get(id)
      if (c && refused) c = await settleRefused(client, principal.tenantId, module, refused, c, row!)
      // A single change is a batch of one through the write path bulk uses (records.write.ts).
      if (c)
        await changeRecords(client, { tenantId: principal.tenantId, actor: principal.actor }, module, [{ ...c, id }])
      const deleted = c?.action === 'deleted'
      const after = deleted
        ? await repo.selectAny(client, principal.tenantId, id)
        : await repo.selectLive(client, principal.tenantId, id)
      const result = deleted ? view(principal, module, after!) : this.present(principal, module, after!)
      await params.idempotency?.complete(client, result)
      return result
    })
  }

  async patch(id: string | null, data: RecordPatch, params: RecordParams): Promise<RecordOut> {
    if (id === null)
      throw problems.badRequest('record.id_required', 'PATCH needs a record id: PATCH /api/v1/records/{id}.')
    // The most natural wrong guess at changing a state gets the way to do it, not just "not an accepted field".
    if (data && typeof data === 'object' && Object.hasOwn(data, 'state')) {
      const at = isUuid(id) ? id : '{id}'
      const detail = `cannot be changed by PATCH: a record changes state through a workflow transition, POST /api/v1/records/${at}:transition with {"transition": "<key>"}; GET /api/v1/records/${at} lists the availableTransitions`
      throw validationError([{ pointer: '/state', field: 'state', code: 'additionalProperties', detail }])
    }
    assertValid<RecordPatch>(recordPatchValidator, data)
    return this.change(String(id), params, async (row, module, principal, client) => {
      const { payload, changes } = patchRules(principal, module, row, data.payload)
      if (!changes.length) return null
      await this.checkReferences(principal, module, payload, client, new Set(changes.map((c) => c.field)))
      return { payload, state: row.state, action: 'updated', changes }
    })
  }

  async transition(data: RecordTransition, params: RecordParams): Promise<RecordOut> {
    const id = params.id ?? ''
    assertValid<RecordTransition>(recordTransitionValidator, data)
    return this.change(id, params, async (row, module, principal, client) => {
      // Separation of duties from earlier transitions reads who fired them (records.duties.ts): only when asked.
      const t = module.transitions.get(data.transition)
      const compared = t && separationOf(t).transitions
      const transitions = compared?.length ? await repo.firedTransitions(client, principal.tenantId, id, compared) : []
      const plan = transitionRules(
        principal,
        module,
        { state: row.state, payload: row.payload, createdBy: row.created_by, transitions },
        data.transition,
        data.payload ?? {}
      )
      if (plan.changes.length)
        await this.checkReferences(principal, module, plan.payload, client, new Set(plan.changes.map((c) => c.field)))
      return {
        payload: plan.payload,
        state: plan.transition.to,
        action: 'transitioned',
        changes: plan.changes,
        transition: plan.transition,
        comment: data.comment
      }
    })
  }

  async remove(id: string | null, params: RecordParams): Promise<RecordOut> {
    if (id === null)
      throw problems.badRequest('record.id_required', 'DELETE needs a record id: DELETE /api/v1/records/{id}.')
    return this.change(String(id), params, async (row, module, principal) => {
      deleteRules(principal, module)
      return { payload: row.payload, state: row.state, action: 'deleted', changes: [] }
    })
  }
}

/**
 * A record as the principal may see it: under the loaded version of its module (one not yet moved by its migration is
 * moved in memory, records.migrate.ts), hidden fields absent from the payload and from the activity.
 */
export function view(
  principal: Principal,
  module: RegisteredModule,
  row: repo.RecordRow,
  hidden = hiddenFields(principal, module)
): RecordOut {
  return viewCurrent(principal, module, asCurrent(module, row), hidden)
}

/** `view` of a row `asCurrent` has made already (applying a migration twice would move a refused record twice). */
function viewCurrent(
  principal: Principal,
  module: RegisteredModule,
  row: repo.RecordRow,
  hidden = hiddenFields(principal, module)
): RecordOut {
  const out = repo.toRecord(row)
  if (!hidden.size) return out
  out.payload = redactPayload(out.payload, hidden)
  if (out.activity) out.activity = redactActivity(out.activity, hidden)
  return out
}

/** REST's short form of a list operator's value (`in`, `contains`, `containsAny`), values joined by commas (`payload[site][in]=A,B`), as the list the service takes. */
function inListsOf(query: Record<string, unknown>): Record<string, unknown> {
  const payload = query.payload
  if (!payload || typeof payload !== 'object' || Array.isArray(payload)) return query
  const out: Record<string, unknown> = Object.create(null)
  for (const [key, condition] of Object.entries(payload)) {
    if (!condition || typeof condition !== 'object') {
      out[key] = condition
      continue
    }
    const ops = { ...(condition as Record<string, unknown>) }
    for (const op of listOperators) if (typeof ops[op] === 'string') ops[op] = ops[op].split(',')
    out[key] = ops
  }
  return { ...query, payload: out }
}
