import type pg from 'pg'
import { recordColumns, type RecordRow } from '../records/records.shared.ts'
import type { Outcome } from './bulk.schema.ts'

/**
 * SQL of bulk loading beside the records it writes (those go through the records write
 * path, records.write.ts): upsert locks and the outcomes kept with an Idempotency-Key.
 * Whole batches per statement, never a statement per row.
 */

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

/** What a batch stores: a dry run stores nothing, so never a `valid` outcome. */
type Kept = Exclude<Outcome, { status: 'valid' }>

export async function storedOutcomes(
  db: pg.Pool | pg.PoolClient,
  key: { tenantId: string; credentialId: string; key: string },
  lines: number[]
): Promise<Map<number, { hash: Buffer; outcome: Kept }>> {
  const { rows } = await db.query<{ line: number; line_hash: Buffer; outcome: Kept }>({
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
