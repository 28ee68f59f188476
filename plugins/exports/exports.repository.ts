import { promisify } from 'node:util'
import zlib from 'node:zlib'
import type pg from 'pg'
import type { Principal } from '../../core/auth/principal.ts'
import { asyncCommitCte, isoUtc as iso } from '../../core/db/index.ts'
import { eventType, insertEvents, type EventType } from '../../core/events/events.ts'
import type { ExportFormat } from './exports.shared.ts'

export interface ExportRow {
  tenant_id: string
  id: string
  module_key: string
  format: ExportFormat
  filters: Record<string, unknown>
  columns: string[] | null
  /** `values` is absent on exports asked for before it existed: they wrote keys. */
  options: { csvBom?: boolean; values?: 'keys' | 'labels' }
  status: 'queued' | 'running' | 'succeeded' | 'failed' | 'expired'
  principal: Principal
  attempts: number
  /** The last run gave the export back on shutdown: the next run is not another attempt. */
  handed_back: boolean
  /** Rows earlier runs had committed when the current (or last) run began. */
  resumed_from: number
  rows_done: number
  rows_total: number | null
  file_key: string | null
  file_size: number | null
  problem: Record<string, unknown> | null
  created_at: string
  started_at: string | null
  finished_at: string | null
  expires_at: string | null
  /** Queued jobs of the tenant ahead of this one, plus one (queued rows only). */
  queue_position?: number | null
}

const columns = `e.tenant_id, e.id, e.module_key, e.format, e.filters, e.columns, e.options, e.status, e.principal, e.attempts, e.handed_back, e.resumed_from, e.rows_done, e.rows_total,
  e.file_key, e.file_size, e.problem, ${iso('e.created_at')} AS created_at, ${iso('e.started_at')} AS started_at, ${iso('e.finished_at')} AS finished_at,
  ${iso('e.expires_at')} AS expires_at,
  CASE WHEN e.status = 'queued' THEN (SELECT count(*)::int + 1 FROM export_jobs q WHERE q.tenant_id = e.tenant_id AND q.status = 'queued' AND (q.created_at, q.id) < (e.created_at, e.id)) END AS queue_position`

export async function insertExport(
  db: pg.Pool | pg.PoolClient,
  e: {
    tenantId: string
    moduleKey: string
    format: ExportFormat
    filters: unknown
    columns: string[] | null
    options: unknown
    principal: Principal
  }
): Promise<ExportRow> {
  const { rows } = await db.query(
    `INSERT INTO export_jobs AS e (tenant_id, module_key, format, filters, columns, options, status, principal) VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7) RETURNING ${columns}`,
    [
      e.tenantId,
      e.moduleKey,
      e.format,
      JSON.stringify(e.filters),
      e.columns,
      JSON.stringify(e.options),
      JSON.stringify(e.principal)
    ]
  )
  return rows[0]
}

export async function selectExport(db: pg.Pool, tenantId: string, id: string): Promise<ExportRow | undefined> {
  const { rows } = await db.query(`SELECT ${columns} FROM export_jobs e WHERE e.tenant_id = $1 AND e.id = $2`, [
    tenantId,
    id
  ])
  return rows[0]
}

/**
 * Takes the export for one run (`runId`, its fencing token) unless another run holds an unexpired
 * lease on it. A run after a crash counts as an attempt; one after a hand-back does not. Progress
 * is kept: `resumed_from` is what earlier runs already committed.
 */
export async function claimRun(
  db: pg.Pool,
  tenantId: string,
  id: string,
  runId: string,
  leaseSeconds: number
): Promise<ExportRow | undefined> {
  const { rows } = await db.query(
    `UPDATE export_jobs AS e SET status = 'running', run_id = $3, lease_until = now() + make_interval(secs => $4),
            attempts = attempts + CASE WHEN handed_back THEN 0 ELSE 1 END, handed_back = false,
            started_at = coalesce(started_at, now()), resumed_from = rows_done, problem = NULL
      WHERE e.tenant_id = $1 AND e.id = $2 AND e.status IN ('queued', 'running') AND (e.run_id IS NULL OR e.lease_until < now()) RETURNING ${columns}`,
    [tenantId, id, runId, leaseSeconds]
  )
  return rows[0]
}

/** How long the lease of the run holding an unfinished export still lasts; undefined once the export is finished. */
export async function leaseLeftMs(db: pg.Pool, tenantId: string, id: string): Promise<number | undefined> {
  const { rows } = await db.query(
    `SELECT greatest(0, coalesce(extract(epoch FROM lease_until - now()) * 1000, 0))::int AS ms FROM export_jobs WHERE tenant_id = $1 AND id = $2 AND status IN ('queued', 'running')`,
    [tenantId, id]
  )
  return rows[0]?.ms
}

/** The row count found when the first run began. */
export async function setTotal(db: pg.Pool, tenantId: string, id: string, runId: string, total: number) {
  await db.query(`UPDATE export_jobs SET rows_total = $4 WHERE tenant_id = $1 AND id = $2 AND run_id = $3`, [
    tenantId,
    id,
    runId,
    total
  ])
}

export interface ChunkHead {
  seq: number
  cursor_after: string | null
  /** Rows in the chunks up to and including this one: the next chunk's first row. */
  rows_through: number
}

/** The last committed chunk: where a run goes on from (none yet: from the start). */
export async function lastChunk(db: pg.Pool, tenantId: string, id: string): Promise<ChunkHead | undefined> {
  const { rows } = await db.query(
    `SELECT seq, cursor_after, (SELECT sum(rows)::int FROM export_chunks WHERE tenant_id = $1 AND export_id = $2) AS rows_through
       FROM export_chunks WHERE tenant_id = $1 AND export_id = $2 ORDER BY seq DESC LIMIT 1`,
    [tenantId, id]
  )
  return rows[0]
}

const deflateRaw = promisify(zlib.deflateRaw)
const inflate = promisify(zlib.inflateRaw)

/**
 * A chunk's encoded rows (UTF-8) as `commitChunk` stores them: raw DEFLATE at level 1, on zlib's thread. The text of
 * a CSV chunk shrinks ~6 times, and with it the bytes the service writes to PostgreSQL's socket on its main thread.
 */
export function deflateChunk(bytes: Buffer): Promise<Buffer> {
  return deflateRaw(bytes, { level: 1 })
}

/**
 * Commits one chunk with the cursor after it, the progress it adds and a renewed lease, in one
 * statement; only while `runId` still holds the export. Returns rows done, or undefined when the
 * run lost the export (its lease lapsed and another run took it over).
 */
export async function commitChunk(
  db: pg.Pool | pg.PoolClient,
  c: {
    tenantId: string
    id: string
    runId: string
    seq: number
    cursorAfter: string | null
    rows: number
    /**
     * The rows as the export's format encodes them (exports.render.ts, ChunkFormat): raw DEFLATE of their UTF-8
     * (`deflateChunk`), or their UTF-8 itself for a format whose text is compressed already.
     */
    stored: { deflated: Buffer } | { text: Buffer }
    names: Record<string, string>
    leaseSeconds: number
  }
): Promise<number | undefined> {
  // One statement, one round trip, its own transaction: committed without waiting for the WAL flush (set_config's
  // local setting holds until that implicit transaction's commit). A crash may lose the last moment's chunks, whose
  // pages the next run reads again; a chunk and its cursor go together. It was BEGIN; SET LOCAL, the statement and
  // COMMIT: three round trips a chunk, each a wake-up of the backend on a busy machine.
  const { rows } = await db.query(
    `WITH a AS (${asyncCommitCte}),
     e AS (
       UPDATE export_jobs SET rows_done = rows_done + $6, lease_until = now() + make_interval(secs => $9)
        WHERE tenant_id = $1 AND id = $2 AND run_id = $3 AND status = 'running' RETURNING tenant_id, id, rows_done)
     INSERT INTO export_chunks (tenant_id, export_id, seq, cursor_after, rows, data, deflated, names, run_id, encoded)
     SELECT e.tenant_id, e.id, $4, $5, $6, $7, $10, $8, $3, true FROM e, a RETURNING (SELECT rows_done FROM e) AS done`,
    [
      c.tenantId,
      c.id,
      c.runId,
      c.seq,
      c.cursorAfter,
      c.rows,
      'text' in c.stored ? c.stored.text : null,
      JSON.stringify(c.names),
      c.leaseSeconds,
      'deflated' in c.stored ? c.stored.deflated : null
    ]
  )
  return rows[0]?.done
}

/** Renews the run's lease while it renders (no chunk commits then). */
/** Extends the run's lease; false once another run holds the export (this run is fenced out and must stop). */
export async function renewLease(
  db: pg.Pool,
  tenantId: string,
  id: string,
  runId: string,
  leaseSeconds: number
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE export_jobs SET lease_until = now() + make_interval(secs => $4) WHERE tenant_id = $1 AND id = $2 AND run_id = $3 AND status = 'running'`,
    [tenantId, id, runId, leaseSeconds]
  )
  return rowCount === 1
}

/** The user names every chunk looked up, merged. */
export async function chunkNames(db: pg.Pool, tenantId: string, id: string): Promise<Map<string, string>> {
  const { rows } = await db.query(
    `SELECT names FROM export_chunks WHERE tenant_id = $1 AND export_id = $2 AND names <> '{}'::jsonb`,
    [tenantId, id]
  )
  const out = new Map<string, string>()
  for (const r of rows) for (const [k, v] of Object.entries(r.names as Record<string, string>)) out.set(k, v)
  return out
}

export interface StoredChunk {
  data: string
  rows: number
  /** False for a chunk written before chunks held encoded rows (migration 003): its data is the records as JSON. */
  encoded: boolean
}

/** Whether every chunk of the export holds encoded rows (none was committed before migration 003). */
export async function allEncoded(db: pg.Pool, tenantId: string, id: string): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT NOT EXISTS (SELECT 1 FROM export_chunks WHERE tenant_id = $1 AND export_id = $2 AND NOT encoded) AS ok`,
    [tenantId, id]
  )
  return rows[0].ok
}

/** The stored chunks in order, `batch` per query (memory holds one batch). */
export async function* chunks(db: pg.Pool, tenantId: string, id: string, batch = 4): AsyncGenerator<StoredChunk> {
  let after = -1
  for (;;) {
    const { rows } = await db.query(
      `SELECT seq, data, deflated, rows, encoded FROM export_chunks WHERE tenant_id = $1 AND export_id = $2 AND seq > $3 ORDER BY seq LIMIT $4`,
      [tenantId, id, after, batch]
    )
    // Chunks from before migration 004, and XLSX chunks (compressed already), hold their text in `data` (records as JSON
    // when not `encoded`).
    for (const r of rows)
      yield {
        data: r.encoded && r.deflated ? (await inflate(r.deflated)).toString('utf8') : r.data,
        rows: r.rows,
        encoded: r.encoded
      }
    if (rows.length < batch) return
    after = rows[rows.length - 1].seq
  }
}

/** Gives the export back (shutdown): another run takes it at once and goes on from its last chunk; not an attempt. */
export async function handBack(db: pg.Pool, tenantId: string, id: string, runId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE export_jobs SET run_id = NULL, lease_until = NULL, handed_back = true WHERE tenant_id = $1 AND id = $2 AND run_id = $3 AND status = 'running'`,
    [tenantId, id, runId]
  )
  return rowCount === 1
}

/** The event of a finished export, for each row of a CTE `e` of export jobs just changed: by whom the export was asked. */
const finishedEvent = (type: EventType, data: string) => ({
  tenantId: 'e.tenant_id',
  type: eventType(type),
  actor: "e.principal -> 'actor'",
  moduleKey: 'e.module_key',
  subjectId: 'e.id',
  data
})

/**
 * Marks a running export succeeded, writes export.succeeded and deletes its chunks, in one
 * statement (once: only the run holding the export changes it). False when it no longer held it.
 */
export async function markSucceeded(
  db: pg.Pool,
  tenantId: string,
  id: string,
  runId: string,
  r: { rows: number; key: string; size: number; fileHours: number }
): Promise<boolean> {
  const { rows } = await db.query(
    `WITH e AS (
       UPDATE export_jobs SET status = 'succeeded', rows_done = $3, rows_total = $3, file_key = $4, file_size = $5, finished_at = now(), expires_at = now() + $6 * interval '1 hour',
              run_id = NULL, lease_until = NULL
        WHERE tenant_id = $1 AND id = $2 AND status = 'running' AND run_id = $7 RETURNING *),
     gone AS (DELETE FROM export_chunks c USING e WHERE c.tenant_id = e.tenant_id AND c.export_id = e.id),
     logged AS (${insertEvents(finishedEvent('export.succeeded', "jsonb_build_object('format', e.format, 'rows', e.rows_done, 'size', e.file_size)"), 'e')})
     SELECT count(*)::int AS n FROM e`,
    [tenantId, id, r.rows, r.key, r.size, r.fileHours, runId]
  )
  return rows[0].n === 1
}

/**
 * Marks an unfinished export failed, writes export.failed and deletes its chunks, in one statement;
 * with `runId`, only while that run holds it.
 */
export async function markFailed(db: pg.Pool, tenantId: string, id: string, problem: unknown, runId?: string) {
  await db.query(
    `WITH e AS (
       UPDATE export_jobs SET status = 'failed', problem = $3, finished_at = now(), run_id = NULL, lease_until = NULL
        WHERE tenant_id = $1 AND id = $2 AND status IN ('queued', 'running') AND ($4::uuid IS NULL OR run_id = $4) RETURNING *),
     gone AS (DELETE FROM export_chunks c USING e WHERE c.tenant_id = e.tenant_id AND c.export_id = e.id)
     ${insertEvents(finishedEvent('export.failed', "jsonb_build_object('format', e.format, 'code', e.problem ->> 'code')"), 'e')}`,
    [tenantId, id, JSON.stringify(problem), runId ?? null]
  )
}

/** Queued exports of the tenant created before this one. */
export async function olderQueued(db: pg.Pool, tenantId: string, id: string): Promise<number> {
  const { rows } = await db.query(
    `SELECT count(*)::int AS n FROM export_jobs q, export_jobs e WHERE e.tenant_id = $1 AND e.id = $2 AND q.tenant_id = e.tenant_id AND q.status = 'queued' AND (q.created_at, q.id) < (e.created_at, e.id)`,
    [tenantId, id]
  )
  return rows[0].n
}

/** Finished exports whose files are past their expiry, across tenants (the purge job). */
export async function expiredFiles(
  db: pg.Pool,
  limit = 1000
): Promise<Array<{ tenant_id: string; id: string; file_key: string }>> {
  const { rows } = await db.query(
    `SELECT x.tenant_id, x.id, x.file_key FROM tenants t JOIN LATERAL (
       SELECT tenant_id, id, file_key FROM export_jobs WHERE tenant_id = t.id AND status = 'succeeded' AND expires_at <= now() LIMIT $1) x ON true`,
    [limit]
  )
  return rows
}

export async function markExpired(db: pg.Pool, tenantId: string, id: string) {
  await db.query(
    `UPDATE export_jobs SET status = 'expired' WHERE tenant_id = $1 AND id = $2 AND status = 'succeeded'`,
    [tenantId, id]
  )
}
