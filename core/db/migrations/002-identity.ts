import type { Knex } from 'knex'

/**
 * Identity and access: groups that grant roles, browser sessions, and the roles a
 * service-account token acts with. Users already exist (001) with their direct roles.
 */
export async function up(knex: Knex) {
  await knex.schema.alterTable('users', (t) => {
    t.timestamp('last_sign_in_at', { useTz: true })
  })

  await knex.schema.createTable('groups', (t) => {
    t.text('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE')
    t.uuid('id').notNullable().defaultTo(knex.raw('gen_random_uuid()'))
    t.text('display_name').notNullable()
    t.text('external_id')
    // A group maps to roles (SCIM groups map to one role each).
    t.specificType('roles', 'text[]').notNullable().defaultTo('{}')
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.primary(['tenant_id', 'id'])
    t.unique(['tenant_id', 'display_name'])
  })

  await knex.schema.createTable('group_members', (t) => {
    t.text('tenant_id').notNullable()
    t.uuid('group_id').notNullable()
    t.uuid('user_id').notNullable()
    t.primary(['tenant_id', 'group_id', 'user_id'])
    t.foreign(['tenant_id', 'group_id']).references(['tenant_id', 'id']).inTable('groups').onDelete('CASCADE')
    t.foreign(['tenant_id', 'user_id']).references(['tenant_id', 'id']).inTable('users').onDelete('CASCADE')
    t.index(['tenant_id', 'user_id'])
  })

  await knex.schema.alterTable('credentials', (t) => {
    // Service-account tokens may be narrowed to roles; null means the tenant's rights within the scopes.
    t.specificType('roles', 'text[]')
  })

  await knex.schema.createTable('sessions', (t) => {
    t.text('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE')
    // SHA-256 of the cookie value: a database leak does not hand out live sessions.
    t.binary('id').notNullable()
    t.uuid('user_id').notNullable()
    t.text('csrf_token').notNullable()
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('expires_at', { useTz: true }).notNullable()
    t.primary(['tenant_id', 'id'])
    t.foreign(['tenant_id', 'user_id']).references(['tenant_id', 'id']).inTable('users').onDelete('CASCADE')
    t.index(['tenant_id', 'user_id'])
  })
  // Sessions are found by cookie alone (the cookie names the tenant), like credentials.
  await knex.raw('CREATE UNIQUE INDEX sessions_by_id ON sessions (id)')
}

export async function down(knex: Knex) {
  await knex.schema.dropTableIfExists('sessions')
  await knex.schema.alterTable('credentials', (t) => t.dropColumn('roles'))
  await knex.schema.dropTableIfExists('group_members')
  await knex.schema.dropTableIfExists('groups')
  await knex.schema.alterTable('users', (t) => t.dropColumn('last_sign_in_at'))
}
