import type pg from 'pg'
import type { Principal } from '../../core/auth/principal.ts'
import { isoUtc as iso } from '../../core/db/index.ts'
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

const columns = `e.tenant_id, e.id, e.module_key, e.format, e.filters, e.columns, e.options, e.status, e.principal, e.attempts, e.rows_done, e.rows_total,
  e.file_key, e.file_size, e.problem, ${iso('e.created_at')} AS created_at, ${iso('e.started_at')} AS started_at, ${iso('e.finished_at')} AS finished_at,
  ${iso('e.expires_at')} AS expires_at,
  CASE WHEN e.status = 'queued' THEN (SELECT count(*)::int + 1 FROM export_jobs q WHERE q.tenant_id = e.tenant_id AND q.status = 'queued' AND (q.created_at, q.id) < (e.created_at, e.id)) END AS queue_position`

export async function insertExport(db: pg.Pool | pg.PoolClient, e: { tenantId: string; moduleKey: string; format: ExportFormat; filters: unknown; columns: string[] | null; options: unknown; principal: Principal }): Promise<ExportRow> {
  const { rows } = await db.query(
    `INSERT INTO export_jobs AS e (tenant_id, module_key, format, filters, columns, options, status, principal) VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7) RETURNING ${columns}`,
    [e.tenantId, e.moduleKey, e.format, JSON.stringify(e.filters), e.columns, JSON.stringify(e.options), JSON.stringify(e.principal)]
  )
  return rows[0]
}

export async function selectExport(db: pg.Pool, tenantId: string, id: string): Promise<ExportRow | undefined> {
  const { rows } = await db.query(`SELECT ${columns} FROM export_jobs e WHERE e.tenant_id = $1 AND e.id = $2`, [tenantId, id])
  return rows[0]
}

/** Starts (or, after a crash, restarts) a run: counts the attempt. */
export async function markRunning(db: pg.Pool, tenantId: string, id: string, total: number): Promise<ExportRow | undefined> {
  const { rows } = await db.query(
    `UPDATE export_jobs AS e SET status = 'running', attempts = attempts + 1, started_at = now(), rows_done = 0, rows_total = $3, problem = NULL
      WHERE e.tenant_id = $1 AND e.id = $2 AND e.status IN ('queued', 'running') RETURNING ${columns}`,
    [tenantId, id, total]
  )
  return rows[0]
}

export async function setProgress(db: pg.Pool, tenantId: string, id: string, done: number) {
  await db.query(`UPDATE export_jobs SET rows_done = $3 WHERE tenant_id = $1 AND id = $2 AND status = 'running'`, [tenantId, id, done])
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

/** Marks a running export succeeded and writes export.succeeded, in one statement (once: only a running job changes). */
export async function markSucceeded(db: pg.Pool, tenantId: string, id: string, r: { rows: number; key: string; size: number; fileHours: number }) {
  await db.query(
    `WITH e AS (
       UPDATE export_jobs SET status = 'succeeded', rows_done = $3, rows_total = $3, file_key = $4, file_size = $5, finished_at = now(), expires_at = now() + $6 * interval '1 hour'
        WHERE tenant_id = $1 AND id = $2 AND status = 'running' RETURNING *)
     ${insertEvents(finishedEvent('export.succeeded', "jsonb_build_object('format', e.format, 'rows', e.rows_done, 'size', e.file_size)"), 'e')}`,
    [tenantId, id, r.rows, r.key, r.size, r.fileHours]
  )
}

/** Marks an unfinished export failed and writes export.failed, in one statement. */
export async function markFailed(db: pg.Pool, tenantId: string, id: string, problem: unknown) {
  await db.query(
    `WITH e AS (
       UPDATE export_jobs SET status = 'failed', problem = $3, finished_at = now() WHERE tenant_id = $1 AND id = $2 AND status IN ('queued', 'running') RETURNING *)
     ${insertEvents(finishedEvent('export.failed', "jsonb_build_object('format', e.format, 'code', e.problem ->> 'code')"), 'e')}`,
    [tenantId, id, JSON.stringify(problem)]
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
export async function expiredFiles(db: pg.Pool, limit = 1000): Promise<Array<{ tenant_id: string; id: string; file_key: string }>> {
  const { rows } = await db.query(
    `SELECT x.tenant_id, x.id, x.file_key FROM tenants t JOIN LATERAL (
       SELECT tenant_id, id, file_key FROM export_jobs WHERE tenant_id = t.id AND status = 'succeeded' AND expires_at <= now() LIMIT $1) x ON true`,
    [limit]
  )
  return rows
}

export async function markExpired(db: pg.Pool, tenantId: string, id: string) {
  await db.query(`UPDATE export_jobs SET status = 'expired' WHERE tenant_id = $1 AND id = $2 AND status = 'succeeded'`, [tenantId, id])
}
