import type { Knex } from 'knex'

/**
 * Webhooks (plugins/webhooks), second pass:
 * - webhook_subscriptions.owner_kind / owner_id: whose rights a delivery is decided with, at
 *   delivery time (core/auth/owner.ts): the credential the subscription was made with, or the
 *   user of a browser session, or a system action. Existing subscriptions are owned by what
 *   `created_by` names (a user's by the user).
 * - previous_secrets: every secret a rotation replaced that still signs, newest first, each
 *   with its own end ([{ "secret": hex of the sealed secret, "until": timestamptz }]); it
 *   takes over from previous_secret / previous_secret_until, which kept only one.
 * - webhook_deliveries.replay_pending: a replay asked for while the delivery was in flight;
 *   the attempt's outcome then queues it again instead of ending it.
 */
export async function up(knex: Knex) {
  await knex.raw(
    `ALTER TABLE webhook_subscriptions ADD COLUMN owner_kind text, ADD COLUMN owner_id text, ADD COLUMN previous_secrets jsonb NOT NULL DEFAULT '[]'`
  )
  await knex.raw(`UPDATE webhook_subscriptions SET
      owner_kind = CASE created_by->>'type' WHEN 'api-key' THEN 'api_key' WHEN 'service-account' THEN 'service_account' WHEN 'user' THEN 'session' ELSE 'system' END,
      owner_id = coalesce(created_by->>'id', 'migration'),
      previous_secrets = CASE WHEN previous_secret_until > now()
                              THEN jsonb_build_array(jsonb_build_object('secret', encode(previous_secret, 'hex'), 'until', previous_secret_until)) ELSE '[]' END`)
  await knex.raw(`ALTER TABLE webhook_subscriptions ALTER COLUMN owner_kind SET NOT NULL, ALTER COLUMN owner_id SET NOT NULL,
      DROP COLUMN previous_secret, DROP COLUMN previous_secret_until`)
  await knex.raw(`ALTER TABLE webhook_deliveries ADD COLUMN replay_pending boolean NOT NULL DEFAULT false`)
}

export async function down(knex: Knex) {
  await knex.raw(`ALTER TABLE webhook_deliveries DROP COLUMN replay_pending`)
  await knex.raw(
    `ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret bytea, ADD COLUMN previous_secret_until timestamptz`
  )
  await knex.raw(
    `UPDATE webhook_subscriptions SET previous_secret = decode(previous_secrets->0->>'secret', 'hex'), previous_secret_until = (previous_secrets->0->>'until')::timestamptz`
  )
  await knex.raw(
    `ALTER TABLE webhook_subscriptions DROP COLUMN owner_kind, DROP COLUMN owner_id, DROP COLUMN previous_secrets`
  )
}
