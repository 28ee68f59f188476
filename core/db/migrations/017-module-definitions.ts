import type { Knex } from 'knex'

/**
 * Every version of every module definition this database has served, as loaded: what a new version is compared
 * with (core/modules/diff.ts) before a tenant that installed the old one moves to it. Deployment-wide, like the
 * packages themselves (no tenant_id: a reference table in Citus, docs/citus.md).
 */
export async function up(knex: Knex) {
  await knex.raw(`CREATE TABLE IF NOT EXISTS module_definitions (
    module_key text NOT NULL,
    version text NOT NULL,
    definition jsonb NOT NULL,
    first_loaded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (module_key, version)
  )`)
}

export async function down(knex: Knex) {
  await knex.raw('DROP TABLE IF EXISTS module_definitions')
}
