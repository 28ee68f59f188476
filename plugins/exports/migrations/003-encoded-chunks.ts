import type { Knex } from 'knex'

/**
 * export_chunks.encoded: the chunk's data holds its rows as the export's format writes them (CSV
 * lines, SpreadsheetML rows; a PDF's records as JSON), so the file is assembled from the chunks
 * rather than rendered from their records (plugins/exports/exports.render.ts, ChunkFormat). Chunks
 * committed before hold their records as JSON (false): the run that assembles the file encodes
 * them then, so an export under way during the upgrade still goes on from where it was.
 */
export async function up(knex: Knex) {
  // IF NOT EXISTS: a database whose log the single list of migrations wrote runs it once more (test/db/migrate-plugins).
  await knex.raw('ALTER TABLE export_chunks ADD COLUMN IF NOT EXISTS encoded boolean NOT NULL DEFAULT false')
}

export async function down(knex: Knex) {
  await knex.schema.alterTable('export_chunks', (t) => {
    t.dropColumn('encoded')
  })
}
