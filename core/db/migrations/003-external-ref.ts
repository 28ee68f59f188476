import type { Knex } from 'knex'

/**
 * A record may carry the source system's reference (upserts match on it, unique among a
 * module's live records). The records table is core's, so is this column; the outcomes
 * bulk keeps per row moved into plugins/bulk (both were 003-bulk).
 */
export async function up(knex: Knex) {
  await knex.schema.alterTable('records', (t) => {
    t.text('external_ref')
  })
  await knex.raw(
    'CREATE UNIQUE INDEX records_live_external_ref ON records (tenant_id, module_key, external_ref) WHERE deleted_at IS NULL AND external_ref IS NOT NULL'
  )
}

export async function down(knex: Knex) {
  await knex.raw('DROP INDEX IF EXISTS records_live_external_ref')
  await knex.schema.alterTable('records', (t) => t.dropColumn('external_ref'))
}
