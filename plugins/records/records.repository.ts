import type pg from 'pg'
import type { Actor } from '../../core/auth/principal.ts'
import { isoUtc as iso, type Queryable } from '../../core/db/index.ts'
import type { RecordOut } from './records.schema.ts'

/** SQL of the records service's reads and locks (writes: records.write.ts). Hot statements are named so PostgreSQL keeps their plans. */

export const recordColumns = `r.id, r.module_key, r.module_version, r.number, r.state, r.version, r.payload,
  ${iso('r.created_at')} AS created_at, ${iso('r.updated_at')} AS updated_at, r.created_by, r.updated_by,
  ${iso('r.deleted_at')} AS deleted_at, r.deleted_by, r.seq, r.external_ref`
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
  /** Set by asCurrent (records.migrate.ts) on a record the loaded module version refuses as its migration leaves it. */
  migration_refused?: { fromVersion: string; reason: string }
  /** The JSON activityJson and attachmentsJson build, in the answer's shape. */
  activity?: NonNullable<RecordOut['activity']>
  attachments?: NonNullable<RecordOut['attachments']>
  /** firedJson: who fired the transitions a separation rule names. */
  fired?: Array<{ key: string; actor: Actor }>
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
  if (row.migration_refused) out.migrationRefused = row.migration_refused
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

/** The activity entries of `r` that fired a transition of `keys` (a bound array): who, oldest first. */
const firedWhere = (keys: string) =>
  `a.tenant_id = r.tenant_id AND a.record_id = r.id AND a.action = 'transitioned' AND a.transition->>'key' = ANY(${keys})`

/**
 * The select column of who fired a record's earlier transitions that a separation rule names (`keys`, a SQL array
 * literal of validated transition keys): a list's records carry it for their `availableTransitions[].refusal`, without
 * the whole activity.
 */
export const firedJson = (keys: readonly string[]) =>
  `(SELECT coalesce(json_agg(json_build_object('key', a.transition->>'key', 'actor', a.actor) ORDER BY a.id), '[]'::json)
      FROM record_activity a WHERE ${firedWhere(`ARRAY[${keys.map((k) => `'${k}'`).join(', ')}]::text[]`)}) AS fired`

/** Who fired the record's earlier transitions of `keys` (separation of duties, records.duties.ts), oldest first. */
export async function firedTransitions(
  client: pg.PoolClient,
  tenantId: string,
  id: string,
  keys: readonly string[]
): Promise<Array<{ key: string; actor: Actor }>> {
  const { rows } = await client.query({
    name: 'records-fired-transitions',
    text: `SELECT a.transition->>'key' AS key, a.actor FROM records r JOIN record_activity a ON ${firedWhere('$3::text[]')}
      WHERE r.tenant_id = $1 AND r.id = $2 ORDER BY a.id`,
    values: [tenantId, id, keys]
  })
  return rows
}

/** Whether a database error is the clash of two live records of a module on one external reference. */
export const isExternalRefClash = (err: unknown) =>
  (err as { constraint?: string }).constraint === 'records_live_external_ref'

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
