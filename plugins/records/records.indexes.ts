import { creatorId } from '../../core/auth/access.ts'
import { createHash } from 'node:crypto'
import pg from 'pg'
import { poolConnection } from '../../core/db/index.ts'
import { logger } from '../../core/logger.ts'
import { fieldFinding, fieldToFilter, rangeIndexed } from '../../core/modules/derive/filters.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import { slugPattern } from '../../core/modules/definition-schema.ts'
import type { BackgroundTask, CliCommand } from '../../core/plugin.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'
import { searchDocument, type WordFrequencies } from './records.search.ts'
import { leakproofStatements } from './migrations/005-query-functions.ts'

/**
 * The indexes lists need at scale, declared by the modules (their indexed fields and search text) and by the platform
 * (sorts by creation and number, number lookup), built by the service itself without blocking writes.
 *
 * Expression indexes, not generated columns: adding a stored generated column rewrites the whole table under an
 * exclusive lock (every write waits for the rewrite of a million rows), while `CREATE INDEX CONCURRENTLY` reads the
 * table beside the writes and holds nothing that blocks them. The expressions are those the filters write
 * (core/modules/derive/filters.ts, records.search.ts), over functions that never fail (records migration 005): a value
 * of another type is only NULL. A module's indexes hold only its records (`module_key = '<key>'` in their predicate):
 * an index shared by every module that declares the same key would be maintained by every record of every module,
 * whatever its fields, and each module's search text computed over every other module's records.
 *
 * Every btree index leads with the tenant (the module is in the predicate, not a column: see declaredIndexes) and,
 * but for the number lookup, ends with `seq`, the order of a page: a filter on a rare
 * value reads only its rows, in page order, and a sort pages by (value, seq) from where the cursor stands. Every
 * index is partial (live records, or records with a number): an index on the tenant alone would be as good as the
 * primary key to the generic plan a connection keeps for a foreign key's probe by id while the tenant has no
 * records, and would then walk the tenant's records per probe (core migration 007). The planner reads an
 * expression's statistics from an index only when it is not partial, so each payload expression also gets a
 * statistics object (CREATE STATISTICS, filled by ANALYZE): without them it takes a rare value for a common one.
 */
export interface DeclaredIndex {
  /** `records_q_` and a hash of the definition: a changed definition is another index (built, then the old one dropped). */
  name: string
  /** What follows `ON records`. */
  definition: string
  /** What it serves, e.g. `incident.site filter and sort`, `incident search`, `sort by createdAt`. */
  serves: string[]
  /** An expression it holds (a payload's, the creator's), whose statistics the planner needs (a statistics object, statisticsName). */
  expression?: string
}

const prefix = 'records_q_'
const live = 'WHERE deleted_at IS NULL'

/**
 * The platform's own: sorts by creation and by number (updatedAt's is records_live_updated), number lookup, and the
 * records of one creator. All but the number lookup (which finds a record of any module) are made for each module, as
 * a module's own are (below): one of them shared by every module would lose, in the planner's choice, to a module's
 * smaller index of another field that walks the same order (a creation range read 166,000 records to skip them).
 */
const platformIndexes: Array<{
  columns: string
  serves: string
  expression?: string
  perModule?: true
  where?: string
}> = [
  { columns: `created_at, seq`, serves: 'sort by createdAt', perModule: true },
  // A creation range in creation order: see the ranges of payload fields in declaredIndexes.
  { columns: `seq, created_at`, serves: 'createdAt range', perModule: true },
  { columns: `number, seq`, serves: 'sort by number', perModule: true },
  // Deleted records too (a lookup may include them); text_pattern_ops serves a prefix (LIKE 'inc-2026-%').
  // Partial on number IS NOT NULL (which a condition on lower(number) implies): a probe by id, such as a foreign key's,
  // must not take it for the tenant's whole list while the tenant has no records to give the planner statistics.
  { columns: `lower(number) text_pattern_ops`, serves: 'number lookup', where: 'WHERE number IS NOT NULL' },
  // The createdBy filter and the row rule `createdBy: self` (a reporter's list) compare this one expression. Its
  // statistics tell a reporter's few records from an integration's many, as a payload expression's do.
  {
    columns: `(${creatorId('')}), seq`,
    serves: 'createdBy filter and row rule',
    expression: creatorId(''),
    perModule: true
  }
]

/** The indexes the installed modules and the platform need, one per definition. */
export function declaredIndexes(modules: Iterable<RegisteredModule>): DeclaredIndex[] {
  const byDefinition = new Map<string, { serves: Set<string>; expression?: string }>()
  const want = (definition: string, serves: string, expression?: string) => {
    const entry = byDefinition.get(definition) ?? { serves: new Set<string>(), expression }
    entry.serves.add(serves)
    byDefinition.set(definition, entry)
  }
  for (const p of platformIndexes)
    if (!p.perModule) want(`(tenant_id, ${p.columns}) ${p.where ?? live}`, p.serves, p.expression)
  for (const m of modules) {
    const key = m.definition.key
    // A module's indexes hold its own live records only: every record written maintains its module's indexes and no
    // other's (an incident's insert maintained the corrective action's and the inspection's too, their search texts
    // included, computed over the incident's fields: 165 against 102 µs of PostgreSQL a row with three modules). The
    // module is written into the list statements as a literal for the planner to match (records.class.ts, selection).
    // The module is not a column of these: PostgreSQL takes a condition its predicate implies out of the index's
    // conditions, so `(tenant_id, module_key, value, seq)` would be bounded by the tenant alone and read all of its
    // entries for a rare value; `(tenant_id, value, seq)` goes straight to it.
    const only = `${live} AND module_key = ${moduleLiteral(key)}`
    for (const p of platformIndexes) if (p.perModule) want(`(tenant_id, ${p.columns}) ${only}`, p.serves, p.expression)
    // The due date and the dates transitions fire after are read by the overdue filter and the date jobs: indexed even when not filterable.
    const dated = new Set([m.definition.due?.field, ...m.definition.workflow.transitions.map((t) => t.auto?.after)])
    for (const f of m.definition.fields) {
      const finding = fieldFinding(f)
      const spec = fieldToFilter[f.type]
      if (!(finding.indexed || dated.has(f.key)) || !spec) continue
      const serves = `${key}.${f.key} ${finding.sortable ? 'filter and sort' : finding.indexed ? 'filter' : 'dates'}`
      // A list's containment (multiple choice) is GIN's, with the tenant as its first column (btree_gin).
      const expression = spec.expr(f.key)
      if (spec.index === 'gin') want(`USING gin (tenant_id, (${expression})) ${only}`, serves, expression)
      else {
        want(`(tenant_id, (${expression}), seq) ${only}`, serves, expression)
        // A range in creation order (a list's default): the walk by seq, with the value as a trailing key, so the
        // records before and between the range's are passed over inside the index, none read. Ranges are where
        // values follow the creation order (an occurrence, a due date); the index above would read the whole range
        // and sort it, a walk by seq without the value read every record it passes (0.6-0.9 s at a million).
        if (rangeIndexed(f)) want(`(tenant_id, seq, (${expression})) ${only}`, `${key}.${f.key} range`)
      }
    }
    const document = searchDocument(m)
    if (document) want(`USING gin (tenant_id, (${document})) ${only}`, `${key} search`, document)
  }
  return [...byDefinition].map(([definition, { serves, expression }]) => ({
    name: hashedName(definition),
    definition,
    serves: [...serves].sort(),
    ...(expression ? { expression } : {})
  }))
}

const moduleKey = new RegExp(slugPattern)

/**
 * A module key as an SQL literal. Keys are slugs (slugPattern, the definition schema's), so nothing needs escaping;
 * anything else is refused rather than written into a statement.
 */
export function moduleLiteral(key: string): string {
  if (!moduleKey.test(key)) throw new Error(`not a module key: ${JSON.stringify(key)}`)
  return `'${key}'`
}

/**
 * The statistics object of an expression (`records_q_<hash>_s`): one per expression, whichever modules' indexes hold
 * it (statistics objects cover the whole table; they cannot be partial).
 */
export function statisticsName(expression: string): string {
  return `${hashedName(expression)}_s`
}

/** `records_q_` and 16 hex digits of the text's SHA-1: a changed text is another name. */
function hashedName(text: string): string {
  return `${prefix}${createHash('sha1').update(text).digest('hex').slice(0, 16)}`
}

/** Every module any tenant has installed, at the version it is on. */
export function installedModules(tenants: TenantDirectory): RegisteredModule[] {
  return tenants.list().flatMap((t) => [...t.modules.values()])
}

export interface IndexState {
  name: string
  serves: string[]
  /** ready: valid and used; building: being built now; invalid: a build that did not finish (rebuilt); missing: not begun; unused: no longer declared (dropped). */
  state: 'ready' | 'building' | 'invalid' | 'missing' | 'unused'
  /** While building: PostgreSQL's phase and how far it is (pg_stat_progress_create_index). */
  progress?: { phase: string; percent: number | null }
}

/** The declared indexes against the catalogue, with the progress of those being built. */
export async function indexStates(db: pg.Pool | pg.ClientBase, declared: DeclaredIndex[]): Promise<IndexState[]> {
  const { rows } = await db.query<{
    name: string
    valid: boolean
    phase: string | null
    done: string | null
    total: string | null
  }>(
    `SELECT c.relname AS name, i.indisvalid AS valid, p.phase,
            coalesce(nullif(p.blocks_total, 0), nullif(p.tuples_total, 0)) AS total,
            CASE WHEN p.blocks_total > 0 THEN p.blocks_done ELSE p.tuples_done END AS done
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       LEFT JOIN pg_stat_progress_create_index p ON p.index_relid = i.indexrelid
      WHERE i.indrelid = 'records'::regclass AND starts_with(c.relname, $1)`,
    [prefix]
  )
  const found = new Map(rows.map((r) => [r.name, r]))
  const states: IndexState[] = declared.map((d) => {
    const row = found.get(d.name)
    if (!row) return { name: d.name, serves: d.serves, state: 'missing' }
    if (row.phase)
      return {
        name: d.name,
        serves: d.serves,
        state: 'building',
        progress: {
          phase: row.phase,
          percent: row.total ? Math.min(100, Math.floor((Number(row.done) / Number(row.total)) * 100)) : null
        }
      }
    return { name: d.name, serves: d.serves, state: row.valid ? 'ready' : 'invalid' }
  })
  const declaredNames = new Set(declared.map((d) => d.name))
  for (const r of rows) if (!declaredNames.has(r.name)) states.push({ name: r.name, serves: [], state: 'unused' })
  return states
}

/** The builder's own connections (not the pool's): a test counting a request's statements leaves them out. */
export class IndexClient extends pg.Client {}

/** The records a table holds before the builder analyzes it after a build. */
const analyzeFrom = 10_000

/** One instance at a time builds (a session lock on this key); the others find the work done or under way. */
const lockKey = 'records.indexes'

/**
 * Brings the catalogue to the declared indexes: a build that did not finish (a crash, a cancel: PostgreSQL leaves the
 * index invalid) is dropped and built again, a missing index is built, an index no longer declared is dropped; each
 * CONCURRENTLY, so writes go on throughout. Stops between statements when `stopping()` says so; a statement under way
 * is cancelled by the caller (IndexBuilder.stop), which leaves an invalid index that the next pass rebuilds.
 */
export async function reconcileIndexes(
  client: pg.ClientBase,
  declared: DeclaredIndex[],
  stopping: () => boolean = () => false
): Promise<{ locked: boolean; built: string[]; dropped: string[]; failed: string[] }> {
  const out = { locked: false, built: [] as string[], dropped: [] as string[], failed: [] as string[] }
  const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS locked', [
    lockKey
  ])
  if (!rows[0].locked) return out
  out.locked = true
  try {
    const states = await indexStates(client, declared)
    const definitions = new Map(declared.map((d) => [d.name, d]))
    const run = async (name: string, statement: string, into: string[]) => {
      if (stopping()) return
      const started = Date.now()
      try {
        await client.query(statement)
        into.push(name)
        logger.info(into === out.built ? 'records index built' : 'records index dropped', {
          index: name,
          serves: definitions.get(name)?.serves,
          ms: Date.now() - started
        })
      } catch (err) {
        if (stopping()) return
        out.failed.push(name)
        logger.error('records index statement failed; the next pass tries again', {
          index: name,
          error: (err as Error).message
        })
      }
    }
    for (const s of states)
      if (s.state === 'invalid') await run(s.name, `DROP INDEX CONCURRENTLY IF EXISTS ${s.name}`, out.dropped)
    for (const s of states)
      if (s.state === 'missing' || s.state === 'invalid')
        await run(
          s.name,
          `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${s.name} ON records ${definitions.get(s.name)!.definition}`,
          out.built
        )
    for (const s of states)
      if (s.state === 'unused') await run(s.name, `DROP INDEX CONCURRENTLY IF EXISTS ${s.name}`, out.dropped)
    // The statistics objects of the payload expressions: made (a catalogue entry, filled by the ANALYZE below) and
    // dropped with the declarations.
    const { rows: stats } = await client.query<{ name: string }>(
      `SELECT stxname AS name FROM pg_statistic_ext WHERE stxrelid = 'records'::regclass AND starts_with(stxname, $1)`,
      [prefix]
    )
    const existing = new Set(stats.map((r) => r.name))
    const wanted = new Map(
      declared.filter((d) => d.expression).map((d) => [statisticsName(d.expression!), d.expression!])
    )
    let madeStatistics = false
    for (const [name, expression] of wanted)
      if (!existing.has(name) && !stopping()) {
        await client.query(`CREATE STATISTICS IF NOT EXISTS ${name} ON (${expression}) FROM records`)
        madeStatistics = true
      }
    for (const name of existing) if (!wanted.has(name)) await client.query(`DROP STATISTICS IF EXISTS ${name}`)
    // The planner knows an expression's values only from statistics ANALYZE gathers for an index that exists: until
    // then it guesses a rare value common and reads the module in page order to find it. ANALYZE samples the table
    // (30,000 rows whatever its size) and blocks no write. Not on a table of a few records: statistics that say it is
    // empty make a connection's generic plans (the foreign-key probe's) scan it for good (core migration 007);
    // autovacuum analyzes it once it grows.
    const sizable = async () =>
      (
        await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM (SELECT 1 FROM records LIMIT ${analyzeFrom}) AS sample`
        )
      ).rows[0].n >= analyzeFrom
    // A statistics object with no data (an ANALYZE after its build that was stopped: a restart, a deploy) is filled by
    // the next pass; nothing else would analyze it until autovacuum sees a tenth of the table change. The catalogue of
    // the data is a superuser's to read: a builder that may not read it analyzes only after its own builds.
    const unfilled = async () =>
      (
        await client
          .query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_statistic_ext s
              WHERE s.stxrelid = 'records'::regclass AND starts_with(s.stxname, $1)
                AND NOT EXISTS (SELECT 1 FROM pg_statistic_ext_data d WHERE d.stxoid = s.oid)`,
            [prefix]
          )
          .catch(() => ({ rows: [{ n: 0 }] }))
      ).rows[0].n > 0
    if ((out.built.length || madeStatistics || (await unfilled())) && !stopping() && (await sizable())) {
      const started = Date.now()
      await client.query('ANALYZE records')
      logger.info('records analyzed for the new indexes', { ms: Date.now() - started })
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', [lockKey]).catch(() => undefined)
  }
  return out
}

/**
 * Runs reconcileIndexes at start and then every `everyMs` (a pass finds nothing to do in one catalogue query), so a
 * build another instance left unfinished when it died is taken up. It connects as the database user the migrations
 * run as, not the pool's role: an index is its table owner's to build, and a build may take longer than any statement
 * timeout the URL sets. `stop` cancels a statement under way.
 */
export class IndexBuilder implements BackgroundTask {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<undefined> | undefined
  private client: pg.Client | undefined
  /** The backend of the pass under way, to cancel its statement at stop. */
  private pid: number | undefined
  private stopped = false
  /** What the last look at the catalogue found not ready (readiness reports it). */
  pending: IndexState[] = []
  /** The payload functions are not leakproof: no index serves a payload filter under row-level security. */
  private unindexed = false

  constructor(
    private readonly url: string,
    private readonly declared: () => DeclaredIndex[],
    /** Filled with the most common words of each search text, from the statistics ANALYZE keeps (a pass reads them). */
    private readonly words?: WordFrequencies,
    private readonly everyMs = 60_000
  ) {}

  private async connect(): Promise<pg.Client> {
    const client = new IndexClient(poolConnection(this.url, null))
    client.on('error', () => undefined)
    await client.connect()
    await client.query('SET statement_timeout = 0')
    return client
  }

  start(): void {
    const tick = () => {
      this.running ??= this.pass()
        .then(
          () => undefined,
          () => undefined
        )
        .finally(() => (this.running = undefined))
    }
    tick()
    this.timer = setInterval(tick, this.everyMs)
    this.timer.unref()
  }

  /** One pass now (what a tick does): tests and `records indexes build`. */
  async pass(): Promise<Awaited<ReturnType<typeof reconcileIndexes>> | undefined> {
    if (this.stopped) return undefined
    const declared = this.declared()
    let client: pg.Client | undefined
    try {
      client = await this.connect()
      this.client = client
      this.pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid
      // Records migration 005 declares the payload functions leakproof only when a superuser ran it: otherwise no
      // index serves a payload filter under row-level security, and readiness says so.
      const { rows } = await client.query<{ leakproof: boolean }>(
        `SELECT proleakproof AS leakproof FROM pg_proc WHERE oid = 'pg_catalog.jsonb_object_field_text(jsonb, text)'::regprocedure`
      )
      if (!rows[0]?.leakproof && !this.unindexed)
        logger.warn(
          'payload filters cannot use their indexes under row-level security: the database user that ran the migrations is not a superuser, so it could not declare the payload functions leakproof (docs/operations.md)'
        )
      this.unindexed = !rows[0]?.leakproof
      const notReady = (states: IndexState[]) => states.filter((s) => s.state !== 'ready')
      this.pending = notReady(await indexStates(client, declared))
      // While the builds run (minutes at a million records), readiness follows them from another connection.
      const follow = setInterval(() => {
        void this.connect()
          .then(async (look) => {
            try {
              if (!this.stopped) this.pending = notReady(await indexStates(look, declared))
            } finally {
              await look.end()
            }
          })
          .catch(() => undefined)
      }, 5_000)
      follow.unref()
      try {
        await this.readWords(client, declared)
        const done = await reconcileIndexes(client, declared, () => this.stopped)
        if (!this.stopped) this.pending = notReady(await indexStates(client, declared))
        await this.readWords(client, declared)
        return done
      } finally {
        clearInterval(follow)
      }
    } catch (err) {
      if (!this.stopped) logger.error('records index pass failed', { error: (err as Error).message })
      return undefined
    } finally {
      this.client = undefined
      await client?.end().catch(() => undefined)
    }
  }

  /**
   * The most common words of each search text and the share of records holding each, as ANALYZE (ours after a build,
   * or autovacuum's) left them in the statistics object of the text's index; only the table's owner may read them.
   */
  private async readWords(client: pg.Client, declared: DeclaredIndex[]): Promise<void> {
    if (!this.words || this.stopped) return
    const documents = new Map(
      declared
        .filter((d) => d.expression && d.serves.some((s) => s.endsWith(' search')))
        .map((d) => [statisticsName(d.expression!), d])
    )
    if (!documents.size) return
    const { rows } = await client.query<{ name: string; words: string[] | null; shares: number[] | null }>(
      `SELECT statistics_name AS name, most_common_elems::text::text[] AS words, most_common_elem_freqs AS shares
         FROM pg_stats_ext_exprs WHERE tablename = 'records' AND statistics_name = ANY($1)`,
      [[...documents.keys()]]
    )
    for (const r of rows) this.words.set(documents.get(r.name)!.expression!, r.words ?? [], r.shares ?? [])
  }

  async idle(): Promise<void> {
    await this.running
  }

  /** Readiness: the declared indexes not ready yet, by state (lists work meanwhile, only slower at scale). */
  degraded(): Record<string, unknown> | undefined {
    const unindexed = this.unindexed
      ? {
          recordFilters:
            'unindexed: the payload functions are not leakproof, so row-level security keeps indexes from serving payload filters, sorts and search (run `records indexes leakproof` as a superuser; docs/operations.md)'
        }
      : {}
    if (!this.pending.length) return this.unindexed ? unindexed : undefined
    return {
      ...unindexed,
      recordIndexes: this.pending.map((s) => ({
        index: s.name,
        state: s.state,
        serves: s.serves,
        ...(s.progress ? { progress: s.progress } : {})
      }))
    }
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.timer)
    const pid = this.client ? this.pid : undefined
    if (pid && this.running) {
      const canceller = await this.connect().catch(() => undefined)
      await canceller?.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => undefined)
      await canceller?.end().catch(() => undefined)
    }
    await this.running
  }
}

/** `records indexes`: each declared index, its state and a build's progress; declaring the payload functions leakproof. */
export const indexesCli: CliCommand[] = [
  {
    area: 'indexes',
    action: 'leakproof',
    async run(c) {
      const client = new pg.Client(poolConnection(c.platform.db.url, null))
      await client.connect()
      try {
        const { rows } = await client.query<{ s: boolean }>(
          'SELECT rolsuper AS s FROM pg_roles WHERE rolname = current_user'
        )
        if (!rows[0]?.s) c.fail("records indexes leakproof needs a superuser: run it with a superuser's DATABASE_URL.")
        for (const statement of leakproofStatements) await client.query(statement)
        c.out(
          `${leakproofStatements.length} functions declared leakproof: indexes serve payload filters under row-level security.`
        )
      } finally {
        await client.end()
      }
    }
  },
  {
    area: 'indexes',
    action: 'list',
    async run(c) {
      const states = await indexStates(c.platform.db.pool, declaredIndexes(installedModules(c.platform.tenants)))
      for (const s of states)
        c.out(
          `${s.name}\t${s.state}${s.progress ? ` (${s.progress.phase}${s.progress.percent === null ? '' : `, ${s.progress.percent}%`})` : ''}\t${s.serves.join(', ') || '-'}`
        )
    }
  }
]
