import type { Knex } from 'knex'

/**
 * Events in commit order, per tenant: (tenant_id, txid, position).
 *
 * Positions are taken when a change is written, not when it commits, so paging by position
 * alone would step past a position still in flight (a transaction that took a lower position
 * and commits after a higher one is read). Every transaction with a txid below
 * pg_snapshot_xmin has ended, so the events of those transactions are final: read in
 * (txid, position) order under that bound, a page never has a gap that fills in later.
 * One btree insert more per event; a reader reads one index range per page. The events
 * feed and the webhook outbox both read in this order, so the index is core's, beside the
 * table (the feed's retention table, also 009-events-feed before, is plugins/events-feed's).
 */
export async function up(knex: Knex) {
  await knex.raw('CREATE INDEX events_feed ON events (tenant_id, txid, position)')
}

export async function down(knex: Knex) {
  await knex.raw('DROP INDEX IF EXISTS events_feed')
}
