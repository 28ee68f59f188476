import type { Knex } from 'knex'

/**
 * Every tenant-owned table has tenant_id leading its primary key and indexes, so a
 * tenant-sharded PostgreSQL (e.g. Citus) can distribute it. The one exception is the
 * credential hash index: a bearer token is the only thing that names its tenant.
 *
 * Core's tables: tenants and their modules, identity, platform secrets, and the records
 * themselves (core's row rules compile to SQL over them: core/auth/access.ts,
 * core/events/rights.ts). Record numbering and activity moved into plugins/records, the
 * idempotency keys into plugins/idempotency; a database migrated before has this name
 * recorded, and their migrations replace it (core/db/migrate.ts).
 */
export async function up(knex: Knex) {
  await knex.schema.createTable('tenants', (t) => {
    t.text('id').primary()
    t.text('name').notNullable()
    t.jsonb('settings').notNullable().defaultTo('{}')
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
  })

  await knex.schema.createTable('tenant_modules', (t) => {
    t.text('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE')
    t.text('module_key').notNullable()
    t.text('module_version').notNullable()
    t.boolean('installed').notNullable().defaultTo(true)
    t.timestamp('installed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('uninstalled_at', { useTz: true })
    t.primary(['tenant_id', 'module_key'])
  })

  await knex.schema.createTable('users', (t) => {
    t.text('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE')
    t.uuid('id').notNullable().defaultTo(knex.raw('gen_random_uuid()'))
    t.text('user_name').notNullable()
    t.text('display_name')
    t.text('email')
    t.text('external_id')
    t.boolean('active').notNullable().defaultTo(true)
    t.specificType('roles', 'text[]').notNullable().defaultTo('{}')
    t.text('password_hash')
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.primary(['tenant_id', 'id'])
    t.unique(['tenant_id', 'user_name'])
  })

  await knex.schema.createTable('credentials', (t) => {
    t.text('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE')
    t.uuid('id').notNullable().defaultTo(knex.raw('gen_random_uuid()'))
    t.text('kind').notNullable().checkIn(['api_key', 'personal', 'service_account'])
    t.text('name').notNullable()
    t.text('prefix').notNullable()
    t.binary('secret_hash').notNullable()
    t.uuid('user_id')
    t.specificType('scopes', 'text[]')
    t.jsonb('created_by')
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('last_used_at', { useTz: true })
    t.timestamp('expires_at', { useTz: true })
    t.timestamp('revoked_at', { useTz: true })
    t.primary(['tenant_id', 'id'])
    t.unique(['secret_hash'])
    t.index(['tenant_id', 'user_id'])
  })

  await knex.schema.createTable('records', (t) => {
    t.text('tenant_id').notNullable().references('tenants.id').onDelete('CASCADE')
    t.uuid('id').notNullable().defaultTo(knex.raw('gen_random_uuid()'))
    t.specificType('seq', 'bigint generated always as identity').notNullable()
    t.text('module_key').notNullable()
    t.text('module_version').notNullable()
    t.text('number').notNullable()
    t.text('state').notNullable()
    t.jsonb('payload').notNullable()
    t.integer('version').notNullable().defaultTo(1)
    t.jsonb('created_by').notNullable()
    t.jsonb('updated_by').notNullable()
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('deleted_at', { useTz: true })
    t.jsonb('deleted_by')
    t.primary(['tenant_id', 'id'])
    t.unique(['tenant_id', 'number'])
  })
  await knex.raw('CREATE INDEX records_live_seq ON records (tenant_id, module_key, seq) WHERE deleted_at IS NULL')
  await knex.raw(
    'CREATE INDEX records_live_state ON records (tenant_id, module_key, state, seq) WHERE deleted_at IS NULL'
  )
  await knex.raw(
    'CREATE INDEX records_live_updated ON records (tenant_id, module_key, updated_at, seq) WHERE deleted_at IS NULL'
  )
  await knex.raw(
    'CREATE INDEX records_deleted ON records (tenant_id, module_key, deleted_at) WHERE deleted_at IS NOT NULL'
  )

  await knex.schema.createTable('platform_secrets', (t) => {
    t.text('name').primary()
    t.binary('value').notNullable()
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
  })
}

export async function down(knex: Knex) {
  for (const table of ['platform_secrets', 'records', 'credentials', 'users', 'tenant_modules', 'tenants']) {
    await knex.schema.dropTableIfExists(table)
  }
}
