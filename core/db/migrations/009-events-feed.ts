import type { Knex } from 'knex'

/**
 * The events feed (plugins/events-feed) and its retention.
 *
 * `events_feed`: the feed pages a tenant's events in (txid, position) order. Positions are
 * taken when a change is written, not when it commits, so paging by position alone would
 * step past a position still in flight (a transaction that took a lower position and
 * commits after a higher one is read). Every transaction with a txid below
 * pg_snapshot_xmin has ended, so the events of those transactions are final: paged in
 * (txid, position) order under that bound, a page never has a gap that fills in later.
 * One btree insert more per event; the feed reads one index range per page.
 *
 * `event_retention`: per tenant, the last event (in feed order) the events.purge job removed.
 * A feed cursor before it has lost events, and is answered 410 instead of skipping them.
 */
export async function up(knex: Knex) {
  await knex.raw('CREATE INDEX events_feed ON events (tenant_id, txid, position)')
  await knex.raw(`CREATE TABLE event_retention (
    tenant_id text PRIMARY KEY,
    purged_txid xid8 NOT NULL,
    purged_position bigint NOT NULL,
    purged_at timestamptz NOT NULL DEFAULT now()
  )`)
}

export async function down(knex: Knex) {
  await knex.schema.dropTableIfExists('event_retention')
  await knex.raw('DROP INDEX IF EXISTS events_feed')
}
