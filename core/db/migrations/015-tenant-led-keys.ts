import type { Knex } from 'knex'

/**
 * The two unique keys that named no tenant now lead with tenant_id, so every unique key of a
 * tenant-owned table can be enforced by a tenant-sharded PostgreSQL such as Citus, which
 * checks uniqueness within one shard only (docs/citus.md; test/db/citus-ready.test.ts).
 *
 * - credentials: UNIQUE (secret_hash) becomes UNIQUE (tenant_id, secret_hash).
 * - sessions: the unique index sessions_by_id (id) goes; the primary key (tenant_id, id)
 *   already holds uniqueness per tenant.
 *
 * A bearer token and a session cookie are all a request has before its tenant is known, so
 * both are still looked up by hash alone (credential-by-hash, session-by-id, sign-out): each
 * keeps a plain index on the hash, without which that lookup would read the whole table
 * (the tenant-led keys cannot serve a lookup that names no tenant). On Citus that lookup asks
 * every shard. The hashes are SHA-256 of 238 or 256 random bits, so losing uniqueness across
 * tenants loses nothing in practice; the lookups treat two matching rows as none.
 */
export async function up(knex: Knex) {
  await knex.raw(
    'ALTER TABLE credentials ADD CONSTRAINT credentials_tenant_id_secret_hash_unique UNIQUE (tenant_id, secret_hash)'
  )
  await knex.raw('CREATE INDEX credentials_by_hash ON credentials (secret_hash)')
  await knex.raw('ALTER TABLE credentials DROP CONSTRAINT credentials_secret_hash_unique')
  await knex.raw('DROP INDEX sessions_by_id')
  await knex.raw('CREATE INDEX sessions_by_id ON sessions (id)')
}

export async function down(knex: Knex) {
  await knex.raw('DROP INDEX sessions_by_id')
  await knex.raw('CREATE UNIQUE INDEX sessions_by_id ON sessions (id)')
  await knex.raw('ALTER TABLE credentials ADD CONSTRAINT credentials_secret_hash_unique UNIQUE (secret_hash)')
  await knex.raw('DROP INDEX credentials_by_hash')
  await knex.raw('ALTER TABLE credentials DROP CONSTRAINT credentials_tenant_id_secret_hash_unique')
}
