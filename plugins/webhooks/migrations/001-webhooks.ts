import type { Knex } from 'knex'

/**
 * Webhooks (plugins/webhooks): subscriptions, the outbox position each tenant's dispatch has
 * reached in `events`, one delivery per (subscription, event) and the log of its attempts.
 *
 * - webhook_subscriptions.secret / previous_secret: the signing secrets sealed with AES-256-GCM
 *   under the platform secret `webhook-secrets` (they must be readable to sign, so not hashed);
 *   the previous one signs alongside until previous_secret_until (rotation grace).
 * - webhook_cursors: per tenant, the last event fanned out into deliveries, as (txid, position):
 *   events are read in that order under pg_snapshot_xmin (as the events feed pages, core's
 *   009-event-order-index), where every transaction has ended, so an event committed late is never skipped.
 * - webhook_deliveries: primary key (tenant, subscription, event), so an event is queued once per
 *   subscription whichever instance fans it out; `lease_until` is the claim of the instance sending it.
 * - events_notify: a statement-level trigger that NOTIFYs `records_events` when events are
 *   written; PostgreSQL delivers it at commit (never for a rollback), waking dispatchers at once.
 */
export async function up(knex: Knex) {
  await knex.raw(`CREATE TABLE webhook_subscriptions (
    tenant_id text NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    url text NOT NULL,
    kinds text[] NOT NULL,
    modules text[],
    description text,
    enabled boolean NOT NULL DEFAULT true,
    disabled_reason text,
    disabled_at timestamptz,
    secret bytea NOT NULL,
    previous_secret bytea,
    previous_secret_until timestamptz,
    failing_since timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    created_by jsonb,
    PRIMARY KEY (tenant_id, id)
  )`)
  await knex.raw(`CREATE TABLE webhook_cursors (
    tenant_id text PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    txid xid8 NOT NULL,
    position bigint NOT NULL
  )`)
  await knex.raw(`CREATE TABLE webhook_deliveries (
    tenant_id text NOT NULL,
    subscription_id uuid NOT NULL,
    event_id uuid NOT NULL,
    event_position bigint NOT NULL,
    event_type text NOT NULL,
    subject_id uuid,
    envelope jsonb,
    status text NOT NULL DEFAULT 'pending',
    attempts integer NOT NULL DEFAULT 0,
    first_attempt_at timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    lease_until timestamptz,
    leased_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subscription_id, event_id),
    FOREIGN KEY (tenant_id, subscription_id) REFERENCES webhook_subscriptions (tenant_id, id) ON DELETE CASCADE
  )`)
  // What the dispatcher scans: only pending deliveries, few at any time.
  await knex.raw(
    `CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (tenant_id, subscription_id, event_position) WHERE status = 'pending'`
  )
  await knex.raw(`CREATE TABLE webhook_attempts (
    tenant_id text NOT NULL,
    subscription_id uuid NOT NULL,
    id bigint GENERATED ALWAYS AS IDENTITY,
    event_id uuid NOT NULL,
    event_type text NOT NULL,
    attempt integer NOT NULL,
    at timestamptz NOT NULL,
    status_code integer,
    latency_ms integer NOT NULL,
    response_excerpt text,
    error text,
    outcome text NOT NULL,
    PRIMARY KEY (tenant_id, subscription_id, id),
    FOREIGN KEY (tenant_id, subscription_id) REFERENCES webhook_subscriptions (tenant_id, id) ON DELETE CASCADE
  )`)
  await knex.raw(`CREATE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_notify('records_events', ''); RETURN NULL; END $$`)
  await knex.raw(
    'CREATE TRIGGER events_notify AFTER INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION events_notify()'
  )
}

export async function down(knex: Knex) {
  await knex.raw('DROP TRIGGER IF EXISTS events_notify ON events')
  await knex.raw('DROP FUNCTION IF EXISTS events_notify()')
  for (const t of ['webhook_attempts', 'webhook_deliveries', 'webhook_cursors', 'webhook_subscriptions'])
    await knex.schema.dropTableIfExists(t)
}
