import type { Knex } from 'knex'

/**
 * SCIM 2.0 provisioning (plugins/scim) on the existing identity model: users and groups
 * gain what an identity provider sends and reads back, not a parallel table.
 *
 * - users: the SCIM `name` object, `emails` and `phoneNumbers` (arrays as sent), the
 *   Enterprise User extension, and every other core attribute (addresses, title, locale…)
 *   in `attributes`, so a PUT followed by a GET gives back what was sent. `email` stays the
 *   primary address (sign-in and notifications read it).
 * - users.version and groups.version: `meta.version` and the ETag, +1 per change.
 * - users.deleted_at: a deleted user stays as a row (records and the audit trail keep its
 *   name) but is gone from SCIM and frees its userName. userName is unique per tenant
 *   without regard to case among users not deleted, as SCIM compares it (RFC 7643 §4.1.1).
 * - groups.named_roles: the roles a group names itself (the records extension or the CLI);
 *   null when the group grants the role its displayName names. `roles` stays what the
 *   group grants, which every reader of effective roles uses.
 * - group_members.display: the member label a client sent when it added the member
 *   (immutable in SCIM); null shows the user's own name.
 */
export async function up(knex: Knex) {
  await knex.schema.alterTable('users', (t) => {
    t.jsonb('name')
    t.jsonb('emails').notNullable().defaultTo('[]')
    t.jsonb('phone_numbers').notNullable().defaultTo('[]')
    t.jsonb('enterprise')
    t.jsonb('attributes').notNullable().defaultTo('{}')
    t.integer('version').notNullable().defaultTo(1)
    t.timestamp('deleted_at', { useTz: true })
  })
  // Existing e-mail addresses become the user's one (primary) SCIM email.
  await knex.raw(
    `UPDATE users SET emails = jsonb_build_array(jsonb_build_object('value', email, 'primary', true)) WHERE email IS NOT NULL`
  )
  await knex.schema.alterTable('users', (t) => t.dropUnique(['tenant_id', 'user_name']))
  await knex.raw(
    'CREATE UNIQUE INDEX users_user_name_live ON users (tenant_id, lower(user_name)) WHERE deleted_at IS NULL'
  )
  await knex.raw('CREATE INDEX users_external_id ON users (tenant_id, external_id) WHERE external_id IS NOT NULL')
  // SCIM lists page in creation order.
  await knex.raw('CREATE INDEX users_created ON users (tenant_id, created_at, id)')

  await knex.schema.alterTable('groups', (t) => {
    t.integer('version').notNullable().defaultTo(1)
    t.specificType('named_roles', 'text[]')
  })
  // Groups made so far (by the CLI) named their roles.
  await knex.raw('UPDATE groups SET named_roles = roles')
  await knex.schema.alterTable('group_members', (t) => {
    t.text('display')
    t.timestamp('added_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
  })
}

export async function down(knex: Knex) {
  await knex.schema.alterTable('group_members', (t) => {
    t.dropColumn('display')
    t.dropColumn('added_at')
  })
  await knex.schema.alterTable('groups', (t) => {
    t.dropColumn('version')
    t.dropColumn('named_roles')
  })
  await knex.raw('DROP INDEX IF EXISTS users_created')
  await knex.raw('DROP INDEX IF EXISTS users_external_id')
  await knex.raw('DROP INDEX IF EXISTS users_user_name_live')
  await knex.raw('DELETE FROM users WHERE deleted_at IS NOT NULL')
  await knex.schema.alterTable('users', (t) => t.unique(['tenant_id', 'user_name']))
  await knex.schema.alterTable('users', (t) => {
    for (const c of ['name', 'emails', 'phone_numbers', 'enterprise', 'attributes', 'version', 'deleted_at'])
      t.dropColumn(c)
  })
}
