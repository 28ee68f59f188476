import type { Knex } from 'knex'

/**
 * One row per tenant, module and version its records move to through a migration the module's package declares
 * (records.migrate.ts): the background job's progress and outcome, for operators (`records module migrations`,
 * `GET /api/v1/modules/{key}/migrations`). The records themselves say which are moved (`records.module_version`);
 * `after_seq` is where the job's pass stands, so a restarted job goes on from there; `record_migration_refusals` lists
 * the records the new version refused (`refused` counts them).
 */
export async function up(knex: Knex) {
  await knex.raw(`CREATE TABLE IF NOT EXISTS record_migrations (
    tenant_id text NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    module_key text NOT NULL,
    to_version text NOT NULL,
    from_versions text[] NOT NULL DEFAULT '{}',
    state text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done')),
    total bigint NOT NULL DEFAULT 0,
    migrated bigint NOT NULL DEFAULT 0,
    refused bigint NOT NULL DEFAULT 0,
    after_seq bigint NOT NULL DEFAULT 0,
    passes integer NOT NULL DEFAULT 0,
    started_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    PRIMARY KEY (tenant_id, module_key, to_version)
  )`)
  // The records a run's version refused, with why: the job passes them by, operators read them.
  await knex.raw(`CREATE TABLE IF NOT EXISTS record_migration_refusals (
    tenant_id text NOT NULL,
    module_key text NOT NULL,
    to_version text NOT NULL,
    record_id uuid NOT NULL,
    number text NOT NULL,
    from_version text NOT NULL,
    reason text NOT NULL,
    at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, module_key, to_version, record_id),
    FOREIGN KEY (tenant_id, module_key, to_version) REFERENCES record_migrations ON DELETE CASCADE
  )`)
}

export async function down(knex: Knex) {
  await knex.raw('DROP TABLE IF EXISTS record_migration_refusals')
  await knex.raw('DROP TABLE IF EXISTS record_migrations')
}
