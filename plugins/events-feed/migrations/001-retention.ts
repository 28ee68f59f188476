import type { Knex } from 'knex'

/**
 * Per tenant, the last event (in feed order) the events.purge job removed. A feed cursor
 * before it has lost events, and is answered 410 instead of skipping them. (Part of core's
 * 009-events-feed before; the index the feed reads stayed in core, beside `events`.)
 */
export async function up(knex: Knex) {
  await knex.raw(`CREATE TABLE event_retention (
    tenant_id text PRIMARY KEY,
    purged_txid xid8 NOT NULL,
    purged_position bigint NOT NULL,
    purged_at timestamptz NOT NULL DEFAULT now()
  )`)
}

export async function down(knex: Knex) {
  await knex.schema.dropTableIfExists('event_retention')
}
