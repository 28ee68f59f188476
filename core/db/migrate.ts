import knexFactory, { type Knex } from 'knex'
import * as initial from './migrations/001-initial.ts'
import * as identity from './migrations/002-identity.ts'
import * as bulk from './migrations/003-bulk.ts'
import * as attachments from './migrations/004-attachments.ts'
import * as exportsMigration from './migrations/005-exports.ts'
import * as events from './migrations/006-events.ts'
import * as recordNumberIndex from './migrations/007-record-number-index.ts'
import * as scim from './migrations/008-scim.ts'
import * as eventsFeed from './migrations/009-events-feed.ts'
import * as webhooks from './migrations/010-webhooks.ts'
import * as webhookRetriesIndex from './migrations/011-webhook-retries-index.ts'
import * as webhookOwners from './migrations/012-webhook-owners.ts'
import * as tokenPersons from './migrations/013-token-persons.ts'
import * as exportChunks from './migrations/014-export-chunks.ts'
import * as tenantLedKeys from './migrations/015-tenant-led-keys.ts'

/** Versioned migrations, in order. Add a file and a row; never edit a released one. */
const migrations: Array<[string, { up(k: Knex): Promise<void>; down(k: Knex): Promise<void> }]> = [
  ['001-initial', initial],
  ['002-identity', identity],
  ['003-bulk', bulk],
  ['004-attachments', attachments],
  ['005-exports', exportsMigration],
  ['006-events', events],
  ['007-record-number-index', recordNumberIndex],
  ['008-scim', scim],
  ['009-events-feed', eventsFeed],
  ['010-webhooks', webhooks],
  ['011-webhook-retries-index', webhookRetriesIndex],
  ['012-webhook-owners', webhookOwners],
  ['013-token-persons', tokenPersons],
  ['014-export-chunks', exportChunks],
  ['015-tenant-led-keys', tenantLedKeys]
]

const source: Knex.MigrationSource<string> = {
  getMigrations: async () => migrations.map(([name]) => name),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations.find(([n]) => n === name)![1]
}

/** Held while one instance migrates: others starting at the same time wait, then find nothing left to run. */
const migrationLock = 7302

/**
 * Brings the database to the latest schema; returns the names of the migrations it ran. Several
 * instances starting together on a new version migrate one after another: knex's own lock table
 * made all but one fail (a new database: a duplicate knex_migrations table; later: "Migration
 * table is already locked"). The advisory lock is the session's, and the pool's one connection
 * carries it through the migration.
 */
export async function migrateLatest(url: string): Promise<string[]> {
  const knex = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } })
  try {
    await knex.raw('SELECT pg_advisory_lock(?)', [migrationLock])
    const [, ran] = await knex.migrate.latest({ migrationSource: source, tableName: 'knex_migrations' })
    await knex.raw('SELECT pg_advisory_unlock(?)', [migrationLock])
    return ran as string[]
  } finally {
    // Ending the connection releases the lock too, when the migration failed.
    await knex.destroy()
  }
}
