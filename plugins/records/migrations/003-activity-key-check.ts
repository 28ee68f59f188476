import type { Knex } from 'knex'

/**
 * A record's activity no longer has a foreign key to `records`: PostgreSQL checked it once
 * per activity row (an SPI probe of the records key and a FOR KEY SHARE lock on the record,
 * WAL-logged), about 6 µs of PostgreSQL CPU of the ~45 a bulk-created record costs
 * (bench/bulk-sql.ts; bench/README.md "Issue 27: the activity's key check"), the largest
 * part of the write that is neither the record, its activity row nor its event.
 *
 * What the key guaranteed holds by construction instead, as for `events` (core 006): the
 * only writer of activity is the write path (plugins/records/records.write.ts), whose
 * statements insert each activity row with its record (a create: the same statement
 * inserts the record from the same input row, and fails whole if that insert does) or for
 * the rows their own UPDATE of `records` returned (a change: of a record the caller holds
 * locked). What the key also did, removing a record's activity with the record
 * (ON DELETE CASCADE, reached when a tenant is deleted), is a statement-level trigger:
 * one set-based DELETE per statement that deletes records, nothing per inserted row.
 */
export async function up(knex: Knex) {
  // Runs again without harm (a database the single list of core/db/migrations left runs it, test/db/migrate-plugins.test.ts).
  // The function sees every tenant's rows (records.tenant = '*' while it runs, as the system scope does): a foreign
  // key's cascade ignored row-level security, and a tenant's removal by a role the policy binds, with no scope set,
  // would otherwise leave its activity behind. It deletes only the activity of the rows the statement deleted.
  await knex.raw(`CREATE OR REPLACE FUNCTION record_activity_cascade() RETURNS trigger LANGUAGE plpgsql
    SET records.tenant = '*' AS $$
    BEGIN
      DELETE FROM record_activity a USING gone g WHERE a.tenant_id = g.tenant_id AND a.record_id = g.id;
      RETURN NULL;
    END $$`)
  await knex.raw('DROP TRIGGER IF EXISTS record_activity_cascade ON records')
  await knex.raw(`CREATE TRIGGER record_activity_cascade AFTER DELETE ON records
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION record_activity_cascade()`)
  // By what it is, not its name: databases that ran core's 001-initial before the records plugin had its own.
  const { rows } = await knex.raw(
    `SELECT conname FROM pg_constraint WHERE conrelid = 'record_activity'::regclass AND confrelid = 'records'::regclass AND contype = 'f'`
  )
  for (const { conname } of rows as Array<{ conname: string }>)
    await knex.raw('ALTER TABLE record_activity DROP CONSTRAINT ??', [conname])
}

export async function down(knex: Knex) {
  // Activity whose record is gone would refuse the key.
  await knex.raw(`DELETE FROM record_activity a
    WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.tenant_id = a.tenant_id AND r.id = a.record_id)`)
  await knex.raw(`ALTER TABLE record_activity ADD CONSTRAINT record_activity_tenant_id_record_id_foreign
    FOREIGN KEY (tenant_id, record_id) REFERENCES records (tenant_id, id) ON DELETE CASCADE`)
  await knex.raw('DROP TRIGGER IF EXISTS record_activity_cascade ON records')
  await knex.raw('DROP FUNCTION IF EXISTS record_activity_cascade()')
}
