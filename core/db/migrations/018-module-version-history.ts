import type { Knex } from 'knex'

/**
 * The versions of a module each tenant has been on (`tenant_modules.versions`): records keep the version they were
 * last written under, so records of any of them may still be stored, and an upgrade must take each (a migration
 * chain from it, core/tenancy/tenants.ts); the records plugin's migration job moves the records under them. Filled
 * here from what is stored: the tenant's current version and those its records are under (one scan of `records`).
 */
export async function up(knex: Knex) {
  await knex.raw(`ALTER TABLE tenant_modules ADD COLUMN IF NOT EXISTS versions text[] NOT NULL DEFAULT '{}'`)
  await knex.raw(`UPDATE tenant_modules t SET versions = ARRAY(
      SELECT v FROM (
        SELECT t.module_version AS v WHERE t.module_version IS NOT NULL
        UNION SELECT DISTINCT r.module_version FROM records r WHERE r.tenant_id = t.tenant_id AND r.module_key = t.module_key
      ) x ORDER BY v)
    WHERE versions = '{}'`)
}

export async function down(knex: Knex) {
  await knex.raw('ALTER TABLE tenant_modules DROP COLUMN IF EXISTS versions')
}
