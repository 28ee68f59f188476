import type pg from 'pg'
import type { Actor } from '../../core/auth/principal.ts'
import { insertEvents } from '../../core/events/events.ts'
import { createdEvent, recordColumns, type RecordRow } from '../records/records.shared.ts'

/** SQL of bulk loading: whole batches per statement, never a statement per row. */

/** Reserves `count` numbers of a counter; returns the first. Inside a transaction the counter row stays locked until it ends. */
export async function reserveNumbers(
  client: pg.Pool | pg.PoolClient,
  tenantId: string,
  moduleKey: string,
  scope: string,
  count: number
): Promise<number> {
  const { rows } = await client.query({
    name: 'bulk-reserve-numbers',
    text: `INSERT INTO record_sequences (tenant_id, module_key, scope, value) VALUES ($1, $2, $3, $4)
           ON CONFLICT (tenant_id, module_key, scope) DO UPDATE SET value = record_sequences.value + $4
           RETURNING value`,
    values: [tenantId, moduleKey, scope, count]
  })
  return Number(rows[0].value) - count + 1
}

/**
 * Inserts a batch of records, their `created` activity and record.created events in one statement, from one
 * JSON array of `{ number, payload, external_ref, changes }` (cheaper to send than one
 * array parameter per column). Returns id
 * and number of each, in no particular order: numbers are unique, so they map back.
 */
export async function insertMany(
  client: pg.PoolClient,
  r: { tenantId: string; moduleKey: string; moduleVersion: string; state: string; actor: Actor; rowsJson: string }
): Promise<Array<{ id: string; number: string }>> {
  const { rows } = await client.query({
    name: 'bulk-insert',
    text: `WITH input AS (
        SELECT * FROM jsonb_to_recordset($5::jsonb) AS t(number text, payload jsonb, external_ref text, changes jsonb)),
      r AS (
        INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by, external_ref)
        SELECT $1, $2, $3, input.number, $4, input.payload, $6, $6, input.external_ref FROM input
        RETURNING tenant_id, id, module_key, number, version),
      a AS (
        INSERT INTO record_activity (tenant_id, record_id, actor, action, changes)
        SELECT r.tenant_id, r.id, $6, 'created', input.changes FROM r JOIN input USING (number)),
      e AS (${insertEvents(createdEvent('$6'), 'r')})
      SELECT id, number FROM r`,
    values: [r.tenantId, r.moduleKey, r.moduleVersion, r.state, r.rowsJson, r.actor]
  })
  return rows
}

/** Serialises upserts of one module (by external reference) across calls and instances, for this transaction. */
export async function lockExternalRefs(client: pg.PoolClient, tenantId: string, moduleKey: string) {
  await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 7302))', [`${tenantId}/${moduleKey}`])
}

/** Live records of the module with these external references, locked for update. */
export async function lockByExternalRefs(
  client: pg.PoolClient,
  tenantId: string,
  moduleKey: string,
  refs: string[]
): Promise<RecordRow[]> {
  const { rows } = await client.query({
    name: 'bulk-lock-by-refs',
    text: `SELECT ${recordColumns} FROM records r
            WHERE r.tenant_id = $1 AND r.module_key = $2 AND r.external_ref = ANY($3::text[]) AND r.deleted_at IS NULL
            FOR UPDATE`,
    values: [tenantId, moduleKey, refs]
  })
  return rows
}

export interface StoredOutcome {
  line: number
  lineHash: Buffer
  outcome: unknown
}

export async function storedOutcomes(
  db: pg.Pool | pg.PoolClient,
  key: { tenantId: string; credentialId: string; key: string },
  lines: number[]
): Promise<Map<number, { hash: Buffer; outcome: any }>> {
  const { rows } = await db.query({
    name: 'bulk-stored-outcomes',
    text: 'SELECT line, line_hash, outcome FROM bulk_outcomes WHERE tenant_id = $1 AND credential_id = $2 AND key = $3 AND line = ANY($4::int[])',
    values: [key.tenantId, key.credentialId, key.key, lines]
  })
  return new Map(rows.map((r) => [r.line, { hash: r.line_hash, outcome: r.outcome }]))
}

/** Keeps a batch's outcomes with its Idempotency-Key, in the batch's own transaction. */
export async function storeOutcomes(
  client: pg.PoolClient,
  key: { tenantId: string; credentialId: string; key: string },
  outcomes: StoredOutcome[]
) {
  if (!outcomes.length) return
  await client.query({
    name: 'bulk-store-outcomes',
    text: `INSERT INTO bulk_outcomes (tenant_id, credential_id, key, line, line_hash, outcome)
           SELECT $1, $2, $3, t.line, decode(t.hash, 'hex'), t.outcome FROM json_to_recordset($4::json) AS t(line int, hash text, outcome json)`,
    values: [
      key.tenantId,
      key.credentialId,
      key.key,
      JSON.stringify(outcomes.map((o) => ({ line: o.line, hash: o.lineHash.toString('hex'), outcome: o.outcome })))
    ]
  })
}
