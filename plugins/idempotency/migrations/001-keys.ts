import type { Knex } from 'knex'

/**
 * Idempotency-Key claims, scoped to tenant + credential: the claim, then the response kept
 * with it for replays (as it was part of core's 001-initial).
 */
export async function up(knex: Knex) {
  await knex.schema.createTable('idempotency_keys', (t) => {
    t.text('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE')
    t.uuid('credential_id').notNullable()
    t.text('key').notNullable()
    t.text('fingerprint').notNullable()
    t.text('state').notNullable().checkIn(['in_flight', 'done'])
    t.integer('status')
    // json, not jsonb: a replay must send the body with its keys in their first order.
    t.json('body')
    t.jsonb('headers')
    t.timestamp('locked_until', { useTz: true })
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('expires_at', { useTz: true }).notNullable()
    t.primary(['tenant_id', 'credential_id', 'key'])
    t.index(['tenant_id', 'expires_at'])
  })
}

export async function down(knex: Knex) {
  await knex.schema.dropTableIfExists('idempotency_keys')
}
