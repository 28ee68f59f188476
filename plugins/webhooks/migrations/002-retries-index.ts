import type { Knex } from 'knex'

/** The claim's per-record order check reads only the deliveries waiting for a retry: few, whatever the backlog. */
export async function up(knex: Knex) {
  await knex.raw(
    `CREATE INDEX webhook_deliveries_retrying ON webhook_deliveries (tenant_id, subscription_id, subject_id, event_position) WHERE status = 'pending' AND attempts > 0`
  )
}

export async function down(knex: Knex) {
  await knex.raw('DROP INDEX IF EXISTS webhook_deliveries_retrying')
}
