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
