import type pg from 'pg'
import { isoUtc } from '../../core/db/index.ts'
import { identityEventKinds, type LoggedEvent } from '../../core/events/events.ts'
import { bindCondition, type EventCondition } from '../../core/events/rights.ts'
import { tenantPool } from '../../core/db/tenant-scope.ts'

/**
 * A place in a tenant's feed: the (txid, position) of the last event read, as decimal text
 * (xid8 and bigint outgrow JavaScript numbers). Feed order is (txid, position): every
 * transaction below pg_snapshot_xmin has ended, so the events under that bound are final
 * and a page never leaves a gap that a late commit fills (migration 009 says why not by position).
 */
export interface FeedPlace {
  txid: string
  position: string
}

export const feedStart: FeedPlace = { txid: '0', position: '0' }

/** Whether place `a` comes before place `b` in feed order. */
export function before(a: FeedPlace, b: FeedPlace): boolean {
  const [at, bt] = [BigInt(a.txid), BigInt(b.txid)]
  return at < bt || (at === bt && BigInt(a.position) < BigInt(b.position))
}

export interface FeedRow extends FeedPlace, LoggedEvent {}

/**
 * The tenant's events after `after` in feed order, of transactions that ended before every
 * one still running, within the retention (identity events, kept longer for the identity
 * log, leave the feed at the same age as the others), that pass `where` (the caller's rights
 * and filters); at most `limit`.
 */
export async function readFeed(
  pool: pg.Pool,
  tenantId: string,
  after: FeedPlace,
  where: EventCondition,
  limit: number,
  retentionDays: number
): Promise<FeedRow[]> {
  const values: unknown[] = [tenantId, after.txid, after.position, limit, retentionDays]
  const condition = bindCondition(where, values)
  const { rows } = await pool.query(
    `SELECT e.txid::text AS txid, e.position::text AS position, e.id, e.type, ${isoUtc('e.occurred_at')} AS "occurredAt", e.actor,
            e.module_key AS "moduleKey", e.subject_id AS "subjectId", e.data
       FROM events e
      WHERE e.tenant_id = $1 AND (e.txid, e.position) > ($2::xid8, $3::bigint) AND e.txid < records_event_horizon()
        AND e.occurred_at >= now() - make_interval(secs => $5::float8 * 86400) AND (${condition})
      ORDER BY e.txid, e.position LIMIT $4`,
    values
  )
  return rows
}

/** The last event the retention job removed for the tenant; events before it in feed order are gone. */
export async function purgedThrough(pool: pg.Pool, tenantId: string): Promise<FeedPlace | undefined> {
  const { rows } = await pool.query(
    'SELECT purged_txid::text AS txid, purged_position::text AS position FROM event_retention WHERE tenant_id = $1',
    [tenantId]
  )
  return rows[0]
}

/**
 * Removes the tenant's events older than `days`, as a prefix of the feed order only (it
 * stops at the first event to keep, or of a transaction not yet final), `batch` at a time,
 * and records the last one removed. Identity events (users, groups) are the identity log's
 * audit trail and stay: the feed, which starts after the last removed event, no longer
 * shows those older than it. Returns how many were removed.
 */
export async function purgeTenantEvents(pool: pg.Pool, tenantId: string, days: number, batch = 1000): Promise<number> {
  let removed = 0
  for (;;) {
    const { rows } = await pool.query(
      `WITH head AS (
         SELECT txid, position, occurred_at < now() - make_interval(secs => $2 * 86400) AND txid < records_event_horizon() AS old
           FROM events WHERE tenant_id = $1 AND type <> ALL($4::text[]) ORDER BY txid, position LIMIT $3
       ), keep AS (
         SELECT txid, position FROM head WHERE NOT old ORDER BY txid, position LIMIT 1
       ), doomed AS (
         SELECT h.position FROM head h WHERE h.old AND NOT EXISTS (SELECT 1 FROM keep k WHERE (h.txid, h.position) > (k.txid, k.position))
       ), gone AS (
         DELETE FROM events e USING doomed d WHERE e.tenant_id = $1 AND e.position = d.position RETURNING e.txid, e.position
       ), mark AS (
         INSERT INTO event_retention (tenant_id, purged_txid, purged_position)
         SELECT $1, txid, position FROM gone ORDER BY txid DESC, position DESC LIMIT 1
         ON CONFLICT (tenant_id) DO UPDATE SET purged_txid = excluded.purged_txid, purged_position = excluded.purged_position, purged_at = now()
         RETURNING 1
       )
       SELECT (SELECT count(*)::int FROM gone) AS removed, (SELECT count(*)::int FROM keep) AS stopped, (SELECT count(*)::int FROM mark) AS marked`,
      [tenantId, days, batch, identityEventKinds]
    )
    removed += rows[0].removed
    if (rows[0].stopped > 0 || rows[0].removed < batch) return removed
  }
}

/** The events.purge job: every tenant's events older than the retention. */
export async function purgeOldEvents(pool: pg.Pool, days: number): Promise<number> {
  const { rows } = await pool.query('SELECT id FROM tenants')
  let removed = 0
  // Tenant by tenant, each in its own scope (row-level security, core/db/tenant-scope.ts).
  for (const { id } of rows) removed += await purgeTenantEvents(tenantPool(pool, id), id, days)
  return removed
}
