import type { Knex } from 'knex'

/**
 * Record numbering (one counter per tenant, module and scope) and the activity of each
 * record, as they were part of core's 001-initial. Core owns `records`; the activity
 * belongs to it row by row (its key leads with the record's).
 */
export async function up(knex: Knex) {
  await knex.schema.createTable('record_sequences', (t) => {
    t.text('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE')
    t.text('module_key').notNullable()
    t.text('scope').notNullable()
    t.bigInteger('value').notNullable()
    t.primary(['tenant_id', 'module_key', 'scope'])
  })

  await knex.schema.createTable('record_activity', (t) => {
    t.text('tenant_id').notNullable()
    t.uuid('record_id').notNullable()
    t.specificType('id', 'bigint generated always as identity').notNullable()
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.jsonb('actor').notNullable()
    t.text('action').notNullable()
    t.jsonb('changes').notNullable().defaultTo('[]')
    t.jsonb('transition')
    t.text('comment')
    t.primary(['tenant_id', 'record_id', 'id'])
    t.foreign(['tenant_id', 'record_id']).references(['tenant_id', 'id']).inTable('records').onDelete('CASCADE')
    t.index(['tenant_id', 'id'], 'record_activity_feed')
  })
}

export async function down(knex: Knex) {
  await knex.schema.dropTableIfExists('record_activity')
  await knex.schema.dropTableIfExists('record_sequences')
}
