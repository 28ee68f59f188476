import type { Queryable } from '../../core/db/index.ts'
import { isoUtc } from '../../core/db/index.ts'
import type { EventType } from '../../core/events/events.ts'

export interface StoredEvent {
  position: number
  id: string
  type: EventType
  occurredAt: string
  actor: unknown
  moduleKey: string | null
  subjectId: string | null
  data: Record<string, unknown>
}

/**
 * The tenant's events after a position, by position, of transactions that ended before every
 * one still running: for tests that read what one write left. Not a pager: a transaction that
 * took a lower position and commits after a higher one was read is stepped over by position
 * (the events feed and the identity log page by (txid, position) for that reason).
 */
export async function eventsAfter(db: Queryable, tenantId: string, after = 0, limit = 100): Promise<StoredEvent[]> {
  const { rows } = await db.query({
    text: `SELECT position, id, type, ${isoUtc('occurred_at')} AS "occurredAt", actor, module_key AS "moduleKey", subject_id AS "subjectId", data
             FROM events WHERE tenant_id = $1 AND position > $2 AND txid < pg_snapshot_xmin(pg_current_snapshot())
             ORDER BY position LIMIT $3`,
    values: [tenantId, after, limit]
  })
  return rows
}

/**
 * Waits (up to 20 s) until every event written so far is under the visibility horizon that the
 * events feed, the identity log and the webhook dispatcher read by (pg_snapshot_xmin). That
 * horizon is the whole cluster's: an open transaction in another test file's database holds the
 * last events back for a moment, so two readings taken a moment apart (a subscription's start
 * and the feed's cursor; a replay window) can differ for that reason alone.
 */
export async function eventsSettled(db: Queryable): Promise<void> {
  for (const until = Date.now() + 20_000; Date.now() < until;) {
    const { rows } = await db.query(
      'SELECT NOT EXISTS (SELECT 1 FROM events WHERE txid >= pg_snapshot_xmin(pg_current_snapshot())) AS settled'
    )
    if (rows[0].settled) return
    await new Promise((r) => setTimeout(r, 100))
  }
}
