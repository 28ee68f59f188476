import type { Knex } from 'knex'

/**
 * Record numbers stay unique per tenant, but through a partial unique index instead of a
 * unique constraint, so that the foreign-key probes of records can only use the primary key.
 *
 * Why: every row inserted into record_activity (and attachments) runs PostgreSQL's
 * foreign-key check `SELECT 1 FROM ONLY records x WHERE tenant_id = $1 AND id = $2 FOR KEY
 * SHARE OF x`. A backend plans it once and keeps the generic plan for its whole life. Planned
 * while `records` is empty or small (a new database, the first bulk batch of a few dozen
 * rows), both (tenant_id, id) and (tenant_id, number) look like one-row lookups, and the
 * planner picked the number index with `tenant_id = $1` as the only index condition and
 * `id = $2` as a filter: a walk over every record of the tenant for each activity row, kept
 * as the table grew (npm run bench:bulk: 1-5 ms of PostgreSQL CPU per row, 0.02 of COPY,
 * while a fresh connection planned the primary key and loaded at full speed).
 *
 * A partial index is considered only for queries whose conditions imply its predicate;
 * `number = …` implies `number IS NOT NULL` (every lookup by number still uses it), the
 * foreign-key probe names no number and cannot. The predicate excludes nothing: the column
 * is NOT NULL.
 */
export async function up(knex: Knex) {
  await knex.raw('CREATE UNIQUE INDEX records_number ON records (tenant_id, number) WHERE number IS NOT NULL')
  await knex.raw('ALTER TABLE records DROP CONSTRAINT records_tenant_id_number_unique')
}

export async function down(knex: Knex) {
  await knex.raw('ALTER TABLE records ADD CONSTRAINT records_tenant_id_number_unique UNIQUE (tenant_id, number)')
  await knex.raw('DROP INDEX records_number')
}
