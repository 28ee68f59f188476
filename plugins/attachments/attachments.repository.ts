import type pg from 'pg'
import type { Actor } from '../../core/auth/principal.ts'
import { isoUtc as iso } from '../../core/db/index.ts'
import { eventType, insertEvents } from '../../core/events/events.ts'
import type { AttachmentOut } from './attachments.schema.ts'

export interface AttachmentRow {
  tenant_id: string
  id: string
  record_id: string
  state: 'pending' | 'ready'
  file_name: string
  content_type: string
  size: number
  sha256: Buffer | null
  driver: string
  storage_key: string
  created_by: Actor
  created_at: string
  uploaded_by: Actor | null
  uploaded_at: string | null
}

const columns = `a.tenant_id, a.id, a.record_id, a.state, a.file_name, a.content_type, a.size, a.sha256, a.driver, a.storage_key, a.created_by,
  ${iso('a.created_at')} AS created_at, a.uploaded_by, ${iso('a.uploaded_at')} AS uploaded_at`

export function toAttachment(r: AttachmentRow): AttachmentOut {
  return {
    id: r.id,
    recordId: r.record_id,
    state: r.state,
    fileName: r.file_name,
    contentType: r.content_type,
    size: r.size,
    sha256: r.sha256 ? r.sha256.toString('hex') : null,
    createdBy: r.created_by,
    createdAt: r.created_at,
    uploadedBy: r.uploaded_by,
    uploadedAt: r.uploaded_at
  }
}

export async function insertAttachment(
  db: pg.Pool | pg.PoolClient,
  a: {
    tenantId: string
    id: string
    recordId: string
    fileName: string
    contentType: string
    size: number
    sha256: Buffer | null
    driver: string
    key: string
    actor: Actor
  }
): Promise<AttachmentRow> {
  const { rows } = await db.query(
    `INSERT INTO attachments AS a (tenant_id, id, record_id, state, file_name, content_type, size, sha256, driver, storage_key, created_by)
     VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, $9, $10) RETURNING ${columns}`,
    [a.tenantId, a.id, a.recordId, a.fileName, a.contentType, a.size, a.sha256, a.driver, a.key, a.actor]
  )
  return rows[0]
}

/** An attachment with whether its record is live. */
export async function selectAttachment(
  db: pg.Pool | pg.PoolClient,
  tenantId: string,
  id: string
): Promise<(AttachmentRow & { record_live: boolean }) | undefined> {
  const { rows } = await db.query(
    `SELECT ${columns}, r.deleted_at IS NULL AS record_live FROM attachments a JOIN records r ON r.tenant_id = a.tenant_id AND r.id = a.record_id
      WHERE a.tenant_id = $1 AND a.id = $2`,
    [tenantId, id]
  )
  return rows[0]
}

/**
 * Marks a verified upload ready and writes its attachment.added event, in one statement;
 * returns the row as now (still pending rows only, so the event is written once).
 */
export async function markReady(
  db: pg.Pool | pg.PoolClient,
  tenantId: string,
  id: string,
  by: Actor
): Promise<AttachmentRow | undefined> {
  const added = {
    tenantId: 'a.tenant_id',
    type: eventType('attachment.added'),
    actor: '$3',
    moduleKey: 'r.module_key',
    subjectId: 'a.record_id',
    data: "jsonb_build_object('attachmentId', a.id, 'fileName', a.file_name, 'contentType', a.content_type, 'size', a.size)"
  }
  const { rows } = await db.query(
    `WITH a AS (
       UPDATE attachments AS a SET state = 'ready', uploaded_by = $3, uploaded_at = now() WHERE a.tenant_id = $1 AND a.id = $2 AND a.state = 'pending' RETURNING ${columns}),
     e AS (${insertEvents(added, 'a JOIN records r ON r.tenant_id = a.tenant_id AND r.id = a.record_id')})
     SELECT * FROM a`,
    [tenantId, id, by]
  )
  return rows[0]
}

/** Pending attachments created before the cut-off, across tenants (the purge job). */
export async function stalePending(
  db: pg.Pool,
  olderThanHours: number,
  limit = 1000
): Promise<Array<{ tenant_id: string; id: string; storage_key: string }>> {
  const { rows } = await db.query(
    `SELECT a.tenant_id, a.id, a.storage_key FROM tenants t JOIN LATERAL (
       SELECT tenant_id, id, storage_key FROM attachments WHERE tenant_id = t.id AND state = 'pending' AND created_at < now() - $1 * interval '1 hour' LIMIT $2) a ON true`,
    [olderThanHours, limit]
  )
  return rows
}

export async function deleteAttachment(db: pg.Pool, tenantId: string, id: string) {
  await db.query(`DELETE FROM attachments WHERE tenant_id = $1 AND id = $2 AND state = 'pending'`, [tenantId, id])
}
