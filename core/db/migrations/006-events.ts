import type { Knex } from 'knex'

/**
 * The event log: one row per committed change, written by the change's own statement
 * (core/events/events.ts), so a committed change always has its event and a rolled-back
 * one never does. The webhook outbox, the events feed and later subscribers read from here.
 *
 * Like every tenant-owned table, its key leads with tenant_id (a tenant's feed is one
 * index range). `position` orders events across the table; it is internal (a tenant must not learn how
 * many events other tenants had between two of its own). `txid` is the writing
 * transaction: a reader takes only events of transactions older than every transaction
 * still running (pg_snapshot_xmin), so a position committed late is never skipped.
 */
export async function up(knex: Knex) {
  await knex.raw(`CREATE TABLE events (
    position bigint GENERATED ALWAYS AS IDENTITY,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    tenant_id text NOT NULL,
    type text NOT NULL,
    occurred_at timestamptz NOT NULL DEFAULT now(),
    actor jsonb,
    module_key text,
    subject_id uuid,
    data jsonb NOT NULL DEFAULT '{}',
    txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    PRIMARY KEY (tenant_id, position)
  )`)
  // No foreign key to tenants: every writer copies tenant_id from a row that has one
  // (records, attachments, export jobs), and a key check per row would cost bulk loads.
  // One index only: each one more is a btree insert per record a bulk load writes. Readers go by position.
}

export async function down(knex: Knex) {
  await knex.schema.dropTableIfExists('events')
}
