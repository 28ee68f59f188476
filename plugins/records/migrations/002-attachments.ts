import type { Knex } from 'knex'

/**
 * Attachments: metadata only (the bytes live in the storage driver). An attachment is
 * `pending` from the signed upload URL until its upload is verified, then `ready`.
 *
 * Here and not in plugins/attachments because the records plugin reads the table: a record's
 * envelope lists its ready attachments (records.repository.ts `attachmentsJson`), and
 * attachments depends on records, not the other way round. It moves there once the envelope
 * takes its attachments from the attachments plugin. (Core's 004-attachments before.)
 */
export async function up(knex: Knex) {
  await knex.schema.createTable('attachments', (t) => {
    t.text('tenant_id').notNullable()
    t.uuid('id').notNullable().defaultTo(knex.raw('gen_random_uuid()'))
    t.uuid('record_id').notNullable()
    t.text('state').notNullable().checkIn(['pending', 'ready'])
    t.text('file_name').notNullable()
    t.text('content_type').notNullable()
    t.bigInteger('size').notNullable()
    t.binary('sha256')
    t.text('driver').notNullable()
    t.text('storage_key').notNullable()
    t.jsonb('created_by').notNullable()
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.jsonb('uploaded_by')
    t.timestamp('uploaded_at', { useTz: true })
    t.primary(['tenant_id', 'id'])
    t.foreign(['tenant_id', 'record_id']).references(['tenant_id', 'id']).inTable('records').onDelete('CASCADE')
    t.index(['tenant_id', 'record_id'])
  })
  await knex.raw(`CREATE INDEX attachments_pending ON attachments (tenant_id, created_at) WHERE state = 'pending'`)
}

export async function down(knex: Knex) {
  await knex.schema.dropTableIfExists('attachments')
}
