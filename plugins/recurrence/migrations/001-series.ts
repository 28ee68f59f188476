import type { Knex } from 'knex'

/**
 * Recurring records (plugins/recurrence): a module's series (one, one per option of its `per` choice field, or one per
 * record its `per` reference names), each active, paused or ended, and the periods each has made a record for. A
 * period's row is written in the transaction that creates its record, under the key (series, period): a second
 * writer (another instance, a run after a crash) cannot make the period twice.
 */
export async function up(knex: Knex) {
  await knex.raw(`CREATE TABLE IF NOT EXISTS record_series (
    tenant_id text NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    module_key text NOT NULL,
    per_value text NOT NULL DEFAULT '',
    state text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'paused', 'ended')),
    starts_at timestamptz NOT NULL,
    next_period integer NOT NULL DEFAULT 1,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    updated_by jsonb,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, module_key, per_value)
  )`)
  await knex.raw(`CREATE TABLE IF NOT EXISTS record_series_periods (
    tenant_id text NOT NULL,
    series_id uuid NOT NULL,
    period integer NOT NULL,
    record_id uuid NOT NULL,
    at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, series_id, period),
    FOREIGN KEY (tenant_id, series_id) REFERENCES record_series ON DELETE CASCADE
  )`)
}

export async function down(knex: Knex) {
  await knex.raw('DROP TABLE IF EXISTS record_series_periods')
  await knex.raw('DROP TABLE IF EXISTS record_series')
}
