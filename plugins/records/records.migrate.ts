import type pg from 'pg'
import { systemPrincipal } from '../../core/auth/principal.ts'
import { transaction, type Queryable } from '../../core/db/index.ts'
import type { Platform } from '../../core/declarations.ts'
import { handBack, type JobContext, type JobDefinition } from '../../core/jobs/index.ts'
import { logger } from '../../core/logger.ts'
import { forgetVersions } from '../../core/tenancy/tenants.ts'
import { migrationChain, moveRecord, refusalOf } from '../../core/modules/migrate.ts'
import { problems } from '../../core/errors/index.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import { diffPayload } from './records.payload.ts'
import { recordColumns, type RecordRow } from './records.repository.ts'
import { changeRecords, type RecordChangeOp, type Writer } from './records.write.ts'

/**
 * Records of a module that moved to a new version with a migration its package declares (core/modules/migrate.ts):
 * - a read presents a record not yet moved as it is under the loaded version (`asCurrent`), on every transport, since
 *   every one presents records through the records service's `view`;
 * - a write first moves the record it locked (`moveLocked`), so the change applies to, and is checked against, the
 *   loaded version;
 * - the background job `records.migrate` moves the rest in batches through the write path: each record in one
 *   statement with its `migrated` activity entry and `record.migrated` event, `module_version` set. Its progress is a
 *   row of `record_migrations`; records the new version refuses stay where they are, listed in
 *   `record_migration_refusals` (a client's write that makes them valid moves them).
 * docs/modules.md, "Upgrading a module", is the operator's and author's account.
 */

/** The actor of a move: the system, named, so activity and events say a migration did it. */
export const migrationActorName = 'module-migration'

const writerFor = (tenantId: string): Writer => ({
  tenantId,
  actor: systemPrincipal(tenantId, migrationActorName).actor
})

/** What the loaded version makes of a stored record: moved, refused (with why), or nothing to do. */
interface Move {
  /** The record as the loaded version sees it (moved in memory when a migration applies, even a refused one), at its stored version. */
  row: RecordRow
  /** The move to write when a migration applies (for a refused record, only once a writer's change makes it valid). */
  op?: RecordChangeOp
  refusal?: string
}

/** The move of one stored record to the loaded version (pure: nothing is written); the rule is core's `moveRecord`. */
export function planMove(module: RegisteredModule, row: RecordRow): Move {
  const to = module.definition.version
  if (row.module_version === to) return { row }
  const {
    record: moved,
    migrated,
    refusal
  } = moveRecord(module, row.module_version, {
    payload: row.payload,
    state: row.state
  })
  // No migration between the versions: they differ only compatibly, and the record's next write stores it under this one.
  if (!migrated) return { row }
  const stateNote = moved.state !== row.state ? `; state ${row.state} → ${moved.state}` : ''
  return {
    row: { ...row, payload: moved.payload, state: moved.state, ...(refusal ? {} : { module_version: to }) },
    refusal,
    op: {
      id: row.id,
      payload: moved.payload,
      state: moved.state,
      action: 'migrated',
      changes: diffPayload(row.payload, moved.payload),
      comment: refusal
        ? `Moved from module version ${row.module_version} to ${to} with the change that follows, which makes it valid.`
        : `Moved from module version ${row.module_version} to ${to}${stateNote}.`,
      migration: { from: row.module_version, to }
    }
  }
}

/**
 * A record as the loaded version of its module presents it: a record not yet moved is moved in memory (a read writes
 * nothing). One the new version refuses is shown as far as its migration took it (fields and states renamed), under
 * its stored `moduleVersion`, and says so (`migrationRefused`, which the OpenAPI document describes): a read never
 * fails for it.
 */
export function asCurrent(module: RegisteredModule, row: RecordRow): RecordRow {
  if (row.module_version === module.definition.version) return row
  const m = planMove(module, row)
  return m.refusal ? { ...m.row, migration_refused: { fromVersion: row.module_version, reason: m.refusal } } : m.row
}

/** A locked record the loaded version refuses as its migration leaves it: the move a valid write comes after. */
export interface RefusedMove {
  /** The move, written (before the writer's own change) once the writer's change makes the record valid. */
  op: RecordChangeOp
  reason: string
}

/**
 * Moves records a writer holds locked (SELECT … FOR UPDATE) to the loaded version before it changes them: one
 * statement through the write path for those a migration moves (their `migrated` entry and event come before the
 * writer's own). Returns the rows as the writer's rules must see them, in order (moved, version + 1; or, for one the
 * new version refuses, as the migration left it in memory), how many it moved, and the refused ones by id: a writer
 * changes such a record only when the result is valid (`settleRefused`). The migration job moves its batches with it.
 */
export async function moveLocked(
  client: pg.PoolClient,
  tenantId: string,
  module: RegisteredModule,
  rows: readonly RecordRow[]
): Promise<{ rows: RecordRow[]; moved: number; refused: ReadonlyMap<string, RefusedMove> }> {
  const refused = new Map<string, RefusedMove>()
  if (rows.every((r) => r.module_version === module.definition.version)) return { rows: [...rows], moved: 0, refused }
  const moves = rows.map((r) => planMove(module, r))
  const ops: RecordChangeOp[] = []
  for (const m of moves)
    if (m.op && m.refusal) refused.set(m.row.id, { op: m.op, reason: m.refusal })
    else if (m.op) ops.push(m.op)
  if (ops.length) await changeRecords(client, writerFor(tenantId), module, ops)
  return {
    rows: moves.map((m) => (m.op && !m.refusal ? { ...m.row, version: m.row.version + 1 } : m.row)),
    moved: ops.length,
    refused
  }
}

/**
 * Before a writer's change of a record the loaded version refused (`moveLocked`), returns the change to write. A
 * delete needs no valid record: the record is deleted as it is stored, under its own version. Any other change is
 * refused (409 `record.migration_refused`) unless the record it leaves is valid under the loaded version; when it is,
 * the move is written first (its `migrated` entry, as the job would have). Either way the record leaves the refusals.
 */
export async function settleRefused<C extends { payload: Record<string, unknown>; state: string; action: string }>(
  client: pg.PoolClient,
  tenantId: string,
  module: RegisteredModule,
  refused: RefusedMove,
  change: C,
  stored: RecordRow
): Promise<C & { moduleVersion?: string }> {
  const deleted = change.action === 'deleted'
  const still = deleted ? undefined : refusalOf(module, change)
  if (still)
    throw problems.conflict(
      'record.migration_refused',
      `This record is stored under an older version of module "${module.definition.key}", and version ${module.definition.version} refuses it as its migration leaves it: ${still}. A PATCH that makes it valid moves it to ${module.definition.version} (GET shows it as the migration leaves it), and a DELETE removes it; other changes are refused until then.`,
      { reason: still }
    )
  if (!deleted) await changeRecords(client, writerFor(tenantId), module, [refused.op])
  // Off every run's list (an earlier version's run listed it too).
  await client.query(
    'DELETE FROM record_migration_refusals WHERE tenant_id = $1 AND module_key = $2 AND record_id = $3',
    [tenantId, module.definition.key, refused.op.id]
  )
  return deleted
    ? { ...change, payload: stored.payload, state: stored.state, moduleVersion: stored.module_version }
    : change
}

// ---- The background job.

/** Records a batch of the job moves in one transaction. */
export const migrationBatch = 500

export interface MigrationRun {
  tenantId: string
  moduleKey: string
  toVersion: string
  state: 'running' | 'done'
  total: number
  migrated: number
  refused: number
  /** While running: live records still under a version the run moves (refused ones included); done: refused ones still refused. */
  remaining?: number
  startedAt: string
  updatedAt: string
  finishedAt: string | null
}

const runColumns = `tenant_id AS "tenantId", module_key AS "moduleKey", to_version AS "toVersion", state,
  total::int, migrated::int, refused::int, after_seq::text AS "afterSeq", to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "startedAt",
  to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "updatedAt",
  to_char(finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "finishedAt"`

/**
 * Live records of the module that the run to `$3` moves (stored under one of the versions `$4` a migration chain takes
 * to it) and that it has not refused.
 */
const behind = `r.tenant_id = $1 AND r.module_key = $2 AND r.deleted_at IS NULL AND r.module_version = ANY($4::text[])
  AND NOT EXISTS (SELECT 1 FROM record_migration_refusals x
                   WHERE x.tenant_id = r.tenant_id AND x.module_key = r.module_key AND x.to_version = $3 AND x.record_id = r.id)`

/**
 * The versions the tenant was on (core's `tenant_modules.versions`) from which a migration chain leads to the loaded
 * one: records stored under any other version are at it already, or differ only compatibly (stored under the loaded
 * version at their next write), and the job leaves them.
 */
function versionsToMove(history: readonly string[], m: RegisteredModule): string[] {
  const to = m.definition.version
  return history.filter((v) => v !== to && migrationChain(m.migrations, v, to).length > 0)
}

/** The run of a tenant's module to its loaded version, made when first asked for (its versions, the records to move). */
async function runOf(
  db: Queryable,
  tenantId: string,
  m: RegisteredModule,
  history: readonly string[]
): Promise<MigrationRun & { afterSeq: string; fromVersions: string[] }> {
  const key = [tenantId, m.definition.key, m.definition.version]
  const select = `SELECT ${runColumns}, from_versions AS "fromVersions" FROM record_migrations WHERE tenant_id = $1 AND module_key = $2 AND to_version = $3`
  const { rows } = await db.query(select, key)
  if (rows[0]) return rows[0]
  await db.query(
    `INSERT INTO record_migrations (tenant_id, module_key, to_version, from_versions, total)
     SELECT $1, $2, $3, $4, count(*) FROM records r WHERE ${behind}
     ON CONFLICT DO NOTHING`,
    [...key, versionsToMove(history, m)]
  )
  return (await db.query(select, key)).rows[0]
}

/**
 * One batch: the next records of the pass (after `afterSeq`, in list order) not locked by a writer, moved in one
 * transaction with the run's progress; those the new version refuses are listed instead. Returns how many it read
 * and the position it reached.
 */
async function moveBatch(
  pool: pg.Pool,
  tenantId: string,
  m: RegisteredModule,
  versions: readonly string[],
  afterSeq: string
) {
  return transaction(pool, async (client) => {
    const { rows } = await client.query<RecordRow>({
      name: 'records-migrate-batch',
      text: `SELECT ${recordColumns} FROM records r WHERE ${behind} AND r.seq > $5 ORDER BY r.seq LIMIT $6 FOR UPDATE SKIP LOCKED`,
      values: [tenantId, m.definition.key, m.definition.version, versions, afterSeq, migrationBatch]
    })
    if (!rows.length) return { read: 0, last: afterSeq }
    const { moved, refused } = await moveLocked(client, tenantId, m, rows)
    const refusals = rows.flatMap((r) => {
      const x = refused.get(r.id)
      return x ? [{ id: r.id, number: r.number, from: r.module_version, reason: x.reason }] : []
    })
    if (refusals.length)
      await client.query(
        `INSERT INTO record_migration_refusals (tenant_id, module_key, to_version, record_id, number, from_version, reason)
         SELECT $1, $2, $3, t.id, t.number, t.from, t.reason FROM json_to_recordset($4::json) AS t(id uuid, number text, "from" text, reason text)
         ON CONFLICT DO NOTHING`,
        [tenantId, m.definition.key, m.definition.version, JSON.stringify(refusals)]
      )
    const last = String(rows[rows.length - 1].seq)
    await client.query(
      `UPDATE record_migrations SET migrated = migrated + $4, refused = refused + $5, after_seq = $6, updated_at = now()
        WHERE tenant_id = $1 AND module_key = $2 AND to_version = $3`,
      [tenantId, m.definition.key, m.definition.version, moved, refusals.length, last]
    )
    return { read: rows.length, last }
  })
}

/**
 * Moves a tenant's records of one module until none is left behind (those refused aside), a pass at a time: a pass
 * reads in list order from where the last stopped (so a restarted job goes on), skipping records a writer holds
 * (they move on that write, or on the next pass). Returns false when the instance is draining (handed back).
 */
async function moveModule(
  pool: pg.Pool,
  tenantId: string,
  m: RegisteredModule,
  history: readonly string[],
  job: JobContext
): Promise<boolean> {
  const run = await runOf(pool, tenantId, m, history)
  if (run.state === 'done') return true
  let after = run.afterSeq
  for (;;) {
    if (job.signal.aborted) return false
    const { read, last } = await moveBatch(pool, tenantId, m, run.fromVersions, after)
    await job.touch()
    if (read) {
      after = last
      continue
    }
    const key = [tenantId, m.definition.key, m.definition.version]
    const { rows } = await pool.query(`SELECT EXISTS (SELECT 1 FROM records r WHERE ${behind}) AS left`, [
      ...key,
      run.fromVersions
    ])
    if (!rows[0].left) {
      await pool.query(
        `UPDATE record_migrations SET state = 'done', finished_at = now(), updated_at = now(), passes = passes + 1
          WHERE tenant_id = $1 AND module_key = $2 AND to_version = $3`,
        key
      )
      // Every record under those versions moved: an upgrade is no longer held to them (refused ones keep them).
      const { rows: refused } = await pool.query(
        'SELECT EXISTS (SELECT 1 FROM record_migration_refusals WHERE tenant_id = $1 AND module_key = $2 AND to_version = $3) AS any',
        key
      )
      if (!refused[0].any) await forgetVersions(pool, tenantId, m.definition.key, run.fromVersions)
      logger.info('module migration done', { tenantId, module: m.definition.key, version: m.definition.version })
      return true
    }
    // Records a writer held: another pass from the start, after a moment.
    after = '0'
    await pool.query(
      `UPDATE record_migrations SET after_seq = 0, passes = passes + 1, updated_at = now()
        WHERE tenant_id = $1 AND module_key = $2 AND to_version = $3`,
      key
    )
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

/**
 * `records.migrate`, every few seconds on one instance at a time: for each tenant and installed module whose package
 * declares migrations, the run to the loaded version (made the first time, with the count of records to move), moved
 * to the end. Crash-safe by construction: the records say which are moved, each batch commits with its progress.
 */
export function migrationJob(platform: Platform): JobDefinition {
  return {
    name: 'records.migrate',
    every: '10 seconds',
    lockLifetimeMs: 30_000,
    concurrency: 1,
    async run(_data, job) {
      for (const tenant of platform.tenants.list())
        for (const m of tenant.modules.values()) {
          if (!m.migrations.length) continue
          const history = tenant.history.get(m.definition.key) ?? []
          if (!(await moveModule(platform.db.pool, tenant.id, m, history, job))) return handBack()
        }
      return undefined
    }
  }
}

/** The runs of a tenant's modules (one module's with `moduleKey`, one version's with `toVersion`), newest first, with the records still behind each. */
export async function migrationRuns(
  db: Queryable,
  tenantId: string,
  moduleKey?: string,
  toVersion?: string
): Promise<MigrationRun[]> {
  const { rows } = await db.query(
    // Remaining: while a run goes on, the live records still under a version it moves (read only then: a scan of the
    // module's records); once it is done, the refused records no write has made valid since.
    `SELECT ${runColumns},
        CASE WHEN m.state = 'running'
          THEN (SELECT count(*)::int FROM records r WHERE r.tenant_id = m.tenant_id AND r.module_key = m.module_key
                  AND r.deleted_at IS NULL AND r.module_version = ANY(m.from_versions))
          ELSE (SELECT count(*)::int FROM record_migration_refusals x
                 WHERE x.tenant_id = m.tenant_id AND x.module_key = m.module_key AND x.to_version = m.to_version) END AS remaining
       FROM record_migrations m WHERE tenant_id = $1 AND ($2::text IS NULL OR module_key = $2) AND ($3::text IS NULL OR to_version = $3)
      ORDER BY started_at DESC, module_key`,
    [tenantId, moduleKey ?? null, toVersion ?? null]
  )
  return rows.map(({ afterSeq: _after, ...run }) => run)
}

/**
 * Every record the run to `toVersion` refused, in list order (when refused, then number, as the job meets them), read
 * a page at a time by keyset, so that listing them all (`records module migrations`) holds one page in memory.
 */
export async function* everyMigrationRefusal(
  db: Queryable,
  tenantId: string,
  moduleKey: string,
  toVersion: string,
  pageSize = 500
): AsyncGenerator<{ recordId: string; number: string; fromVersion: string; reason: string }> {
  let after: { at: string; number: string; recordId: string } | undefined
  for (;;) {
    const { rows } = await db.query(
      // By the table's columns: \`at\` alone would sort the text the query returns.
      `SELECT x.record_id AS "recordId", x.number, x.from_version AS "fromVersion", x.reason, x.at::text AS at
         FROM record_migration_refusals x
        WHERE x.tenant_id = $1 AND x.module_key = $2 AND x.to_version = $3
          AND ($4::timestamptz IS NULL OR (x.at, x.number, x.record_id) > ($4::timestamptz, $5::text, $6::uuid))
        ORDER BY x.at, x.number, x.record_id LIMIT $7`,
      [tenantId, moduleKey, toVersion, after?.at ?? null, after?.number ?? null, after?.recordId ?? null, pageSize]
    )
    for (const { at: _at, ...refusal } of rows) yield refusal
    if (rows.length < pageSize) return
    const last = rows[rows.length - 1]
    after = { at: last.at, number: last.number, recordId: last.recordId }
  }
}

/** The first `limit` records the run to `toVersion` refused, in the order everyMigrationRefusal gives them all. */
export async function migrationRefusals(
  db: Queryable,
  tenantId: string,
  moduleKey: string,
  toVersion: string,
  limit: number
) {
  const out: Array<{ recordId: string; number: string; fromVersion: string; reason: string }> = []
  for await (const r of everyMigrationRefusal(db, tenantId, moduleKey, toVersion, limit)) {
    out.push(r)
    if (out.length === limit) break
  }
  return out
}
