import type { Knex } from 'knex'

/**
 * The event log: one event per committed change, written in the change's own transaction,
 * so nothing committed lacks its event and nothing rolled back has one. The webhook outbox,
 * an events feed and later GraphQL subscriptions read from here.
 *
 * Record events come from the record's activity: a statement trigger turns the activity
 * rows any statement inserts (a single write, a bulk batch) into events, so every write
 * path produces them without writing them itself. `position` orders a tenant's events;
 * `txid` lets a reader stop short of positions whose transactions are still open (a later
 * position can commit before an earlier one).
 */
export async function up(knex: Knex) {
  await knex.raw(`
    CREATE TABLE events (
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      position bigint GENERATED ALWAYS AS IDENTITY,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      type text NOT NULL,
      occurred_at timestamptz NOT NULL DEFAULT now(),
      actor jsonb,
      module_key text,
      record_id uuid,
      data jsonb NOT NULL DEFAULT '{}',
      txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
      PRIMARY KEY (tenant_id, position)
    )`)
  await knex.raw(`
    CREATE FUNCTION record_activity_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO events (tenant_id, type, occurred_at, actor, module_key, record_id, data)
      SELECT a.tenant_id, 'record.' || a.action, a.at, a.actor, r.module_key, a.record_id,
        jsonb_build_object('number', r.number, 'state', r.state, 'version', r.version,
          'changes', a.changes, 'transition', a.transition, 'comment', a.comment)
      FROM new_activity a JOIN records r ON r.tenant_id = a.tenant_id AND r.id = a.record_id
      ORDER BY a.id;
      RETURN NULL;
    END $$`)
  await knex.raw(`
    CREATE TRIGGER record_activity_events AFTER INSERT ON record_activity
    REFERENCING NEW TABLE AS new_activity FOR EACH STATEMENT EXECUTE FUNCTION record_activity_events()`)
}

export async function down(knex: Knex) {
  await knex.raw('DROP TRIGGER IF EXISTS record_activity_events ON record_activity')
  await knex.raw('DROP FUNCTION IF EXISTS record_activity_events()')
  await knex.raw('DROP TABLE IF EXISTS events')
}
