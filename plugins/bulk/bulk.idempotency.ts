import { createHash } from 'node:crypto'
import type pg from 'pg'
import { transaction } from '../../core/db/index.ts'
import { claimKey, storeAnswer, unlockKey, type KeyRef } from '../idempotency/idempotency.shared.ts'

/**
 * Idempotency-Key on a bulk call: the one key state machine (plugins/idempotency,
 * idempotency.keys.ts), extended with per-row outcomes. The key (scoped to tenant and
 * credential, as for every write) names the call; the key plus a line number names each
 * row. Outcomes are stored with the rows' own transaction (bulk_outcomes, which goes with
 * its key), so a retry after a cut-off call replays the rows that were written and carries
 * on with the rest: a bulk call reopens its key even when done. A line that differs from
 * the one first sent under its number is refused for that row only.
 */
export type BulkKey = KeyRef

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
  await transaction(pool, async (client) => {
    const claim = await claimKey(client, id, bulkFingerprint(call), {
      ...o,
      reopenDone: true,
      say: {
        reused:
          'This Idempotency-Key was already used with a different request (another module or firstLine). Use a new key for a new bulk call.',
        inFlight: 'A bulk call with this Idempotency-Key is still running; retry after it ends.'
      }
    })
    // An expired key starts afresh, and the outcomes kept under it go with the same commit.
    if (claim.claimed && claim.fresh)
      await client.query('DELETE FROM bulk_outcomes WHERE tenant_id = $1 AND credential_id = $2 AND key = $3', [
        id.tenantId,
        id.credentialId,
        id.key
      ])
  })
}

/** Ends the claim: `done` with the summary when the whole body was read, otherwise let go for a retry to continue. */
export async function endBulkKey(pool: pg.Pool, id: BulkKey, summary: unknown) {
  if (summary === undefined) await unlockKey(pool, id)
  else await storeAnswer(pool, id, { status: 200, body: summary, headers: null })
}

export const lineHash = (bytes: Buffer) => createHash('sha256').update(bytes).digest()
