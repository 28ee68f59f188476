import { createHash } from 'node:crypto'
import type pg from 'pg'
import { transaction } from '../../core/db/index.ts'
import { problems } from '../../core/errors/index.ts'
import { assertIdempotencyKey } from '../../core/http/idempotency-key.ts'

/**
 * Idempotency-Key on a bulk call. The key (scoped to tenant and credential, as for
 * every write) names the call; the key plus a line number names each row. Outcomes
 * are stored with the rows' own transaction, so a retry after a cut-off call replays
 * the rows that were written and carries on with the rest. A line that differs from
 * the one first sent under its number is refused for that row only.
 */
export interface BulkKey {
  tenantId: string
  credentialId: string
  key: string
}

/**
 * What a key is bound to: the module, and the number of the body's first line, since
 * stored outcomes are kept under the file's line numbers (a key reused with another
 * `firstLine` would replay rows under the wrong lines). The default `firstLine` 1 keeps
 * the fingerprint of calls made before `firstLine` existed.
 */
export function bulkFingerprint(call: { moduleKey: string; firstLine: number }): string {
  return createHash('sha256')
    .update(`bulk\u0000${call.moduleKey}${call.firstLine === 1 ? '' : `\u0000${call.firstLine}`}`)
    .digest('hex')
}

export async function claimBulkKey(
  pool: pg.Pool,
  id: BulkKey,
  call: { moduleKey: string; firstLine: number },
  o: { retentionHours: number; inFlightTimeoutSeconds: number }
) {
  assertIdempotencyKey(id.key)
  const fingerprint = bulkFingerprint(call)
  const ids = [id.tenantId, id.credentialId, id.key]
  try {
    await transaction(pool, async (client) => {
      const { rows } = await client.query(
        `SELECT fingerprint, state, locked_until > now() AS locked, expires_at <= now() AS expired FROM idempotency_keys
          WHERE tenant_id = $1 AND credential_id = $2 AND key = $3 FOR UPDATE`,
        ids
      )
      const stored = rows[0]
      // An expired key starts afresh: its old outcomes go with it (ON DELETE CASCADE).
      if (stored?.expired)
        await client.query('DELETE FROM idempotency_keys WHERE tenant_id = $1 AND credential_id = $2 AND key = $3', ids)
      if (!stored || stored.expired) {
        await client.query(
          `INSERT INTO idempotency_keys (tenant_id, credential_id, key, fingerprint, state, locked_until, expires_at)
           VALUES ($1, $2, $3, $4, 'in_flight', now() + make_interval(secs => $5), now() + make_interval(hours => $6))`,
          [...ids, fingerprint, o.inFlightTimeoutSeconds, o.retentionHours]
        )
        return
      }
      if (stored.fingerprint !== fingerprint) {
        throw problems.unprocessable(
          'idempotency.key_reused',
          'This Idempotency-Key was already used with a different request (another module or firstLine). Use a new key for a new bulk call.'
        )
      }
      if (stored.state === 'in_flight' && stored.locked) {
        throw problems.conflict(
          'idempotency.in_flight',
          'A bulk call with this Idempotency-Key is still running; retry after it ends.'
        )
      }
      await client.query(
        `UPDATE idempotency_keys SET state = 'in_flight', locked_until = now() + make_interval(secs => $4) WHERE tenant_id = $1 AND credential_id = $2 AND key = $3`,
        [...ids, o.inFlightTimeoutSeconds]
      )
    })
  } catch (err) {
    // Two first calls at once: the loser sees the winner's row.
    if ((err as { code?: string }).code === '23505')
      throw problems.conflict(
        'idempotency.in_flight',
        'A bulk call with this Idempotency-Key is still running; retry after it ends.'
      )
    throw err
  }
}

/** Keeps the claim while the call runs (each batch renews it). */
export async function renewBulkKey(db: pg.PoolClient, id: BulkKey, seconds: number) {
  await db.query(
    'UPDATE idempotency_keys SET locked_until = now() + make_interval(secs => $4) WHERE tenant_id = $1 AND credential_id = $2 AND key = $3',
    [id.tenantId, id.credentialId, id.key, seconds]
  )
}

/** Ends the claim: `done` with the summary when the whole body was read, otherwise released for a retry to continue. */
export async function endBulkKey(pool: pg.Pool, id: BulkKey, summary: unknown | undefined) {
  await pool.query(
    `UPDATE idempotency_keys SET state = CASE WHEN $4::json IS NULL THEN state ELSE 'done' END, locked_until = now(),
            status = CASE WHEN $4::json IS NULL THEN status ELSE 200 END, body = coalesce($4::json, body)
      WHERE tenant_id = $1 AND credential_id = $2 AND key = $3`,
    [id.tenantId, id.credentialId, id.key, summary === undefined ? null : JSON.stringify(summary)]
  )
}

export const lineHash = (bytes: Buffer) => createHash('sha256').update(bytes).digest()
