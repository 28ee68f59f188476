import type { Knex } from 'knex'

/**
 * The `record.overdue` events already written, one row per record and due date (records.due.ts): the job writes the
 * row and the event in one statement, and the key makes a second writer (another instance, a run after a crash) write
 * neither. A due date that changes and passes again is a new row, and a new event.
 */
export async function up(knex: Knex) {
  await knex.raw(`CREATE TABLE IF NOT EXISTS record_overdue (
    tenant_id text NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    record_id uuid NOT NULL,
    due text NOT NULL,
    at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, record_id, due)
  )`)
}

export async function down(knex: Knex) {
  await knex.raw('DROP TABLE IF EXISTS record_overdue')
}
