import type { Knex } from 'knex'

/**
 * export_chunks.deflated: a chunk's encoded rows as raw DEFLATE of their UTF-8, compressed by the
 * service on zlib's thread before they are sent. Sending a 1,000,000-row CSV's 455 MB of chunk text
 * to PostgreSQL cost the service's main thread ~3.7 µs a row in socket writes (bench/README.md,
 * issue 27), more than encoding the rows; deflated it is a sixth of that. Stored as it is
 * (`STORAGE EXTERNAL`: PostgreSQL does not try to compress it again). `data` stays for chunks
 * committed before (text, or records as JSON when not `encoded`) and for a format whose text is
 * compressed already (XLSX's deflated segments), and is null beside `deflated`.
 */
export async function up(knex: Knex) {
  await knex.raw('ALTER TABLE export_chunks ADD COLUMN IF NOT EXISTS deflated bytea')
  await knex.raw('ALTER TABLE export_chunks ALTER COLUMN deflated SET STORAGE EXTERNAL')
  await knex.raw('ALTER TABLE export_chunks ALTER COLUMN data DROP NOT NULL')
  // What `data` holds now is compressed already (XLSX's segments, in base64): pglz spent ~2.5 µs of PostgreSQL's CPU a
  // row of an XLSX export for next to nothing. (It had been lz4 per transaction, a round trip a chunk.)
  await knex.raw('ALTER TABLE export_chunks ALTER COLUMN data SET STORAGE EXTERNAL')
}

export async function down(knex: Knex) {
  // The version before reads only `data`: an export with deflated chunks starts again from its first row.
  await knex.raw(
    `UPDATE export_jobs SET rows_done = 0, resumed_from = 0 WHERE (tenant_id, id) IN (SELECT tenant_id, export_id FROM export_chunks WHERE deflated IS NOT NULL)`
  )
  await knex.raw(
    'DELETE FROM export_chunks WHERE (tenant_id, export_id) IN (SELECT tenant_id, export_id FROM export_chunks WHERE deflated IS NOT NULL)'
  )
  await knex.raw('ALTER TABLE export_chunks ALTER COLUMN data SET NOT NULL')
  await knex.raw('ALTER TABLE export_chunks ALTER COLUMN data SET STORAGE EXTENDED')
  await knex.raw('ALTER TABLE export_chunks DROP COLUMN deflated')
}
