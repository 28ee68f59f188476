import type { Knex } from 'knex'

/** Export jobs: the request (module, format, filters, columns, who asked), progress and the file. */
export async function up(knex: Knex) {
  await knex.schema.createTable('export_jobs', (t) => {
    t.text('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE')
    t.uuid('id').notNullable().defaultTo(knex.raw('gen_random_uuid()'))
    t.text('module_key').notNullable()
    t.text('format').notNullable().checkIn(['csv', 'xlsx', 'pdf'])
    t.jsonb('filters').notNullable()
    t.specificType('columns', 'text[]')
    t.jsonb('options').notNullable().defaultTo('{}')
    t.text('status').notNullable().checkIn(['queued', 'running', 'succeeded', 'failed', 'expired'])
    // Who asked, as the rights they had then: the job renders with them, never more.
    t.jsonb('principal').notNullable()
    t.integer('attempts').notNullable().defaultTo(0)
    t.integer('rows_done').notNullable().defaultTo(0)
    t.integer('rows_total')
    t.text('file_key')
    t.bigInteger('file_size')
    t.jsonb('problem')
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('started_at', { useTz: true })
    t.timestamp('finished_at', { useTz: true })
    t.timestamp('expires_at', { useTz: true })
    t.primary(['tenant_id', 'id'])
  })
  await knex.raw(`CREATE INDEX export_jobs_queue ON export_jobs (tenant_id, created_at) WHERE status = 'queued'`)
  await knex.raw(`CREATE INDEX export_jobs_expiry ON export_jobs (tenant_id, expires_at) WHERE status = 'succeeded'`)
}

export async function down(knex: Knex) {
  await knex.schema.dropTableIfExists('export_jobs')
}
