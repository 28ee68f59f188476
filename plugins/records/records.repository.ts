import type pg from 'pg'
import type { Actor } from '../../core/auth/principal.ts'
import { isoUtc as iso, type Queryable } from '../../core/db/index.ts'
import { eventType, insertEvents, type EventType } from '../../core/events/events.ts'
import type { FieldChange } from './records.payload.ts'
import type { RecordOut } from './records.schema.ts'

/** SQL of the records service. Hot statements are named so PostgreSQL keeps their plans. */

export const recordColumns = `r.id, r.module_key, r.module_version, r.number, r.state, r.version, r.payload,
  ${iso('r.created_at')} AS created_at, ${iso('r.updated_at')} AS updated_at, r.created_by, r.updated_by,
  ${iso('r.deleted_at')} AS deleted_at, r.deleted_by, r.seq, r.external_ref`
/**
 * updated_at at full (microsecond) precision, for the position of an updatedSince cursor:
 * the ISO columns stop at milliseconds, and a cursor at a truncated instant sorts before
 * the row it ended on, so that row (and any later one in the same millisecond) came back.
 */
export const updatedAtExact = `to_char(r.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS updated_at_exact`
/**
 * An entry's `id` is its position in its record's activity (1 is the created entry): the
 * table's own identity is numbered across tenants, so showing it would let a tenant count
 * the others' changes between two of its own.
 */
export const activityJson = `coalesce((SELECT json_agg(json_build_object('id', a.n, 'at', ${iso('a.at')}, 'actor', a.actor, 'action', a.action,
  'changes', a.changes, 'transition', a.transition, 'comment', a.comment) ORDER BY a.n)
  FROM (SELECT row_number() OVER (ORDER BY x.id) AS n, x.* FROM record_activity x WHERE x.tenant_id = r.tenant_id AND x.record_id = r.id) a), '[]'::json) AS activity`

/** Ready attachments of a record, as its metadata shows them (pending uploads are not part of the record yet). */
export const attachmentColumns = (
  x: string
) => `json_build_object('id', ${x}.id, 'fileName', ${x}.file_name, 'contentType', ${x}.content_type, 'size', ${x}.size,
  'sha256', encode(${x}.sha256, 'hex'), 'uploadedBy', ${x}.uploaded_by, 'uploadedAt', ${iso(`${x}.uploaded_at`)})`
export const attachmentsJson = `coalesce((SELECT json_agg(${attachmentColumns('x')} ORDER BY x.uploaded_at, x.id)
  FROM attachments x WHERE x.tenant_id = r.tenant_id AND x.record_id = r.id AND x.state = 'ready'), '[]'::json) AS attachments`

export interface RecordRow {
  id: string
  module_key: string
  module_version: string
  number: string
  state: string
  version: number
  payload: Record<string, unknown>
  created_at: string
  updated_at: string
  created_by: Actor
  updated_by: Actor
  deleted_at: string | null
  deleted_by: Actor | null
  seq: number
  external_ref: string | null
  /** Only in list queries that page by change (see updatedAtExact). */
  updated_at_exact?: string
  activity?: any[]
  attachments?: any[]
}

export function toRecord(row: RecordRow): RecordOut {
  const out: RecordOut = {
    id: row.id,
    moduleKey: row.module_key,
    moduleVersion: row.module_version,
    number: row.number,
    state: row.state,
    version: row.version,
    payload: row.payload,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    createdBy: row.created_by,
    updatedBy: row.updated_by
  }
  if (row.external_ref !== null && row.external_ref !== undefined) out.externalRef = row.external_ref
  if (row.deleted_at) {
    out.deletedAt = row.deleted_at
    out.deletedBy = row.deleted_by ?? undefined
  }
  if (row.activity) out.activity = row.activity
  if (row.attachments) out.attachments = row.attachments
  return out
}

/** One live record with its activity, in one round trip. */
export async function selectLive(db: Queryable, tenantId: string, id: string): Promise<RecordRow | undefined> {
  const { rows } = await db.query({
    name: 'records-get-live',
    text: `SELECT ${recordColumns}, ${activityJson}, ${attachmentsJson} FROM records r WHERE r.tenant_id = $1 AND r.id = $2 AND r.deleted_at IS NULL`,
    values: [tenantId, id]
  })
  return rows[0]
}

/** Any record, live or soft-deleted, with its activity (audit log). */
export async function selectAny(db: Queryable, tenantId: string, id: string): Promise<RecordRow | undefined> {
  const { rows } = await db.query({
    name: 'records-get-any',
    text: `SELECT ${recordColumns}, ${activityJson}, ${attachmentsJson} FROM records r WHERE r.tenant_id = $1 AND r.id = $2`,
    values: [tenantId, id]
  })
  return rows[0]
}

/** Locks a live record for a change inside a transaction. */
export async function lockLive(client: pg.PoolClient, tenantId: string, id: string): Promise<RecordRow | undefined> {
  const { rows } = await client.query({
    name: 'records-lock-live',
    text: `SELECT ${recordColumns} FROM records r WHERE r.tenant_id = $1 AND r.id = $2 AND r.deleted_at IS NULL FOR UPDATE`,
    values: [tenantId, id]
  })
  return rows[0]
}

export interface NewRecord {
  tenantId: string
  moduleKey: string
  moduleVersion: string
  numberScope: string
  numberPrefix: string
  numberSuffix: string
  numberWidth: number
  state: string
  payload: Record<string, unknown>
  externalRef?: string | null
  actor: Actor
  changes: FieldChange[]
}

/** The record.created event of each row of a CTE `r` of inserted records (single creates and bulk batches). */
export const createdEvent = (actor: string) => ({
  tenantId: 'r.tenant_id',
  type: eventType('record.created'),
  actor,
  moduleKey: 'r.module_key',
  subjectId: 'r.id',
  data: "jsonb_build_object('number', r.number, 'version', r.version)"
})

/**
 * Numbers, inserts, logs and announces a record in one statement: the counter row is locked only
 * for the duration of this statement, so concurrent creates do not queue behind
 * whole transactions.
 */
export async function insertRecord(db: Queryable, r: NewRecord): Promise<RecordRow> {
  const { rows } = await db.query({
    name: 'records-insert',
    text: `WITH seq AS (
        INSERT INTO record_sequences (tenant_id, module_key, scope, value) VALUES ($1, $2, $3, 1)
        ON CONFLICT (tenant_id, module_key, scope) DO UPDATE SET value = record_sequences.value + 1
        RETURNING value::text AS v),
      r AS (
        INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by, external_ref)
        SELECT $1, $2, $4, $5 || CASE WHEN length(seq.v) >= $6 THEN seq.v ELSE lpad(seq.v, $6, '0') END || $7, $8, $9, $10, $10, $12 FROM seq
        RETURNING *),
      a AS (
        INSERT INTO record_activity (tenant_id, record_id, actor, action, changes)
        SELECT r.tenant_id, r.id, $10, 'created', $11 FROM r
        RETURNING id, at, actor, action, changes, transition, comment),
      e AS (${insertEvents(createdEvent('$10'), 'r')})
      SELECT ${recordColumns},
        json_build_array(json_build_object('id', 1, 'at', ${iso('a.at')}, 'actor', a.actor, 'action', a.action,
          'changes', a.changes, 'transition', a.transition, 'comment', a.comment)) AS activity
      FROM r, a`,
    values: [
      r.tenantId,
      r.moduleKey,
      r.numberScope,
      r.moduleVersion,
      r.numberPrefix,
      r.numberWidth,
      r.numberSuffix,
      r.state,
      r.payload,
      r.actor,
      JSON.stringify(r.changes),
      r.externalRef ?? null
    ]
  })
  return rows[0]
}

/** Whether a database error is the clash of two live records of a module on one external reference. */
export const isExternalRefClash = (err: unknown) =>
  (err as { constraint?: string }).constraint === 'records_live_external_ref'

export interface RecordChange {
  tenantId: string
  id: string
  payload: Record<string, unknown>
  state: string
  actor: Actor
  action: 'updated' | 'transitioned' | 'deleted'
  changes: FieldChange[]
  transition?: { key: string; from: string; to: string }
  comment?: string
  delete?: boolean
}

/** Applies a change to a locked record, appends its activity entry and writes its event (record.<action>), in one statement. */
export async function updateRecord(client: pg.PoolClient, c: RecordChange): Promise<void> {
  const type: EventType = `record.${c.action}`
  const data: Record<string, unknown> = {}
  if (c.action !== 'deleted') data.changedFields = c.changes.map((x) => x.field)
  if (c.transition) data.transition = c.transition
  await client.query({
    name: 'records-update',
    text: `WITH r AS (
        UPDATE records SET payload = $3, state = $4, version = version + 1, updated_at = now(), updated_by = $5,
          deleted_at = CASE WHEN $9::boolean THEN now() ELSE deleted_at END,
          deleted_by = CASE WHEN $9::boolean THEN $5 ELSE deleted_by END
        WHERE tenant_id = $1 AND id = $2 RETURNING tenant_id, id, module_key, number, version),
      a AS (
        INSERT INTO record_activity (tenant_id, record_id, actor, action, changes, transition, comment)
        SELECT r.tenant_id, r.id, $5, $6, $7, $8, $10 FROM r)
      ${insertEvents(
        {
          tenantId: 'r.tenant_id',
          type: '$12',
          actor: '$5',
          moduleKey: 'r.module_key',
          subjectId: 'r.id',
          data: "jsonb_build_object('number', r.number, 'version', r.version) || $11::jsonb"
        },
        'r'
      )}`,
    values: [
      c.tenantId,
      c.id,
      c.payload,
      c.state,
      c.actor,
      c.action,
      JSON.stringify(c.changes),
      c.transition ?? null,
      !!c.delete,
      c.comment ?? null,
      JSON.stringify(data),
      type
    ]
  })
}

/** Ids among `ids` that are live records of `moduleKey` for the tenant. */
export async function existingRefs(
  db: Queryable,
  tenantId: string,
  moduleKey: string,
  ids: string[]
): Promise<Set<string>> {
  const { rows } = await db.query({
    name: 'records-existing-refs',
    text: 'SELECT id FROM records WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND module_key = $3 AND deleted_at IS NULL',
    values: [tenantId, ids, moduleKey]
  })
  return new Set(rows.map((r) => r.id))
}
