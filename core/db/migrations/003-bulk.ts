import type { Knex } from 'knex'

/**
 * Bulk loading: a record may carry the source system's reference (upserts match on it,
 * unique among a module's live records), and each row outcome of a bulk call made with
 * an Idempotency-Key is kept with its key, so a retry replays it row by row.
 */
export async function up(knex: Knex) {
  await knex.schema.alterTable('records', (t) => {
    t.text('external_ref')
  })
  await knex.raw(
    'CREATE UNIQUE INDEX records_live_external_ref ON records (tenant_id, module_key, external_ref) WHERE deleted_at IS NULL AND external_ref IS NOT NULL'
  )

  await knex.schema.createTable('bulk_outcomes', (t) => {
    t.text('tenant_id').notNullable()
    t.uuid('credential_id').notNullable()
    t.text('key').notNullable()
    t.integer('line').notNullable()
    // SHA-256 of the line as sent: a retry that changed the line is not a replay.
    t.binary('line_hash').notNullable()
    t.json('outcome').notNullable()
    t.primary(['tenant_id', 'credential_id', 'key', 'line'])
    t.foreign(['tenant_id', 'credential_id', 'key'])
      .references(['tenant_id', 'credential_id', 'key'])
      .inTable('idempotency_keys')
      .onDelete('CASCADE')
  })
}

export async function down(knex: Knex) {
  await knex.schema.dropTableIfExists('bulk_outcomes')
  await knex.raw('DROP INDEX IF EXISTS records_live_external_ref')
  await knex.schema.alterTable('records', (t) => t.dropColumn('external_ref'))
}
