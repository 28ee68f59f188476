import type { Knex } from 'knex'

/**
 * Exports resume where they stopped (plugins/exports/exports.job.ts):
 * - export_chunks: the rows read so far, one chunk per page, each committed with the cursor
 *   after it. A later run goes on from the last chunk's cursor; the file is rendered from
 *   the chunks at the end; they are deleted when the export succeeds, fails or expires.
 * - export_jobs.run_id / lease_until: the run that holds the export (a fencing token: a chunk
 *   commits only while its run still holds it), so two runs never write the same export.
 * - export_jobs.handed_back: the last run gave the export back (shutdown), which does not
 *   count as an attempt; resumed_from: rows already read when the current run began.
 */
export async function up(knex: Knex) {
  await knex.schema.alterTable('export_jobs', (t) => {
    t.uuid('run_id')
    t.timestamp('lease_until', { useTz: true })
    t.boolean('handed_back').notNullable().defaultTo(false)
    t.integer('resumed_from').notNullable().defaultTo(0)
  })
  await knex.schema.createTable('export_chunks', (t) => {
    t.text('tenant_id').notNullable()
    t.uuid('export_id').notNullable()
    t.integer('seq').notNullable()
    /** The page cursor after this chunk's last row; null on the last page. */
    t.text('cursor_after')
    t.integer('rows').notNullable()
    /** The chunk's records as a JSON array, and the user names first looked up for them. */
    t.text('data').notNullable()
    t.jsonb('names').notNullable().defaultTo('{}')
    t.uuid('run_id').notNullable()
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.primary(['tenant_id', 'export_id', 'seq'])
    t.foreign(['tenant_id', 'export_id']).references(['tenant_id', 'id']).inTable('export_jobs').onDelete('CASCADE')
  })
}

export async function down(knex: Knex) {
  await knex.schema.dropTableIfExists('export_chunks')
  await knex.schema.alterTable('export_jobs', (t) => {
    t.dropColumns('run_id', 'lease_until', 'handed_back', 'resumed_from')
  })
}
