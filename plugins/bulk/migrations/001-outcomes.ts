import type { Knex } from 'knex'

/**
 * Each row outcome of a bulk call made with an Idempotency-Key is kept with its key, so a
 * retry replays it row by row (the key's table is plugins/idempotency's; this was part of
 * core's 003-bulk).
 */
export async function up(knex: Knex) {
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
}
