import type { Knex } from 'knex'

/**
 * The periods by the record each made: the recurrence job asks, of every record a series per record would start on,
 * whether a series made it (records a series made start no series of their own, docs/modules.md "Recurrence").
 */
export async function up(knex: Knex) {
  await knex.raw(
    'CREATE INDEX IF NOT EXISTS record_series_periods_record ON record_series_periods (tenant_id, record_id)'
  )
}

export async function down(knex: Knex) {
  await knex.raw('DROP INDEX IF EXISTS record_series_periods_record')
}
