import type { Knex } from 'knex'

/**
 * A tenant may have a module installed whose package has never loaded on this deployment (a broken
 * or incompatible package listed in config from the start): its row is kept so that the tenant's
 * calls on that module answer 503 module.unavailable, and its version is unknown (NULL) until the
 * package loads, when the sync records it.
 */
export async function up(knex: Knex) {
  await knex.raw('ALTER TABLE tenant_modules ALTER COLUMN module_version DROP NOT NULL')
}

export async function down(knex: Knex) {
  await knex.raw(`DELETE FROM tenant_modules WHERE module_version IS NULL`)
  await knex.raw('ALTER TABLE tenant_modules ALTER COLUMN module_version SET NOT NULL')
}
