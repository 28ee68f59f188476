import knexFactory, { type Knex } from 'knex'
import * as initial from './migrations/001-initial.ts'
import * as identity from './migrations/002-identity.ts'
import * as externalRef from './migrations/003-external-ref.ts'
import * as events from './migrations/006-events.ts'
import * as recordNumberIndex from './migrations/007-record-number-index.ts'
import * as scim from './migrations/008-scim.ts'
import * as eventOrderIndex from './migrations/009-event-order-index.ts'
import * as tokenPersons from './migrations/013-token-persons.ts'
import * as tenantLedKeys from './migrations/015-tenant-led-keys.ts'
import * as unavailableModules from './migrations/016-unavailable-modules.ts'
import * as moduleDefinitions from './migrations/017-module-definitions.ts'
import * as moduleVersionHistory from './migrations/018-module-version-history.ts'
import * as platformClock from './migrations/019-platform-clock.ts'
import * as eventHorizon from './migrations/020-event-horizon.ts'

/** One schema change: run once per database in its own transaction, recorded as `<owner>/<name>`. */
export interface Migration {
  /** Its place in its owner's list (`001-jobs`). Never rename or edit one that was released: add one. */
  name: string
  up(knex: Knex): Promise<void>
  down(knex: Knex): Promise<void>
  /**
   * The name the single list of core/db/migrations recorded this change under, before each
   * plugin brought its own (a change of that list that moved here, or a part of one). A
   * database with that name recorded has the change: it is recorded under its new name, not run.
   */
  replaces?: string
}

/** Whose migrations they are: core, or a plugin (Plugin.name, Plugin.migrations). */
export interface MigrationOwner {
  name: string
  migrations?: readonly Migration[]
}

/**
 * Core's tables: tenants, identity, platform secrets, records and events (what core/ reads).
 * The numbers are those of the single list they come from; the ones missing moved into the
 * plugin whose tables they make. Add a file and a row; never edit a released one.
 */
const coreMigrations: readonly Migration[] = [
  { name: '001-initial', replaces: '001-initial', ...initial },
  { name: '002-identity', replaces: '002-identity', ...identity },
  { name: '003-external-ref', replaces: '003-bulk', ...externalRef },
  { name: '006-events', replaces: '006-events', ...events },
  { name: '007-record-number-index', replaces: '007-record-number-index', ...recordNumberIndex },
  { name: '008-scim', replaces: '008-scim', ...scim },
  { name: '009-event-order-index', replaces: '009-events-feed', ...eventOrderIndex },
  { name: '013-token-persons', replaces: '013-token-persons', ...tokenPersons },
  { name: '015-tenant-led-keys', replaces: '015-tenant-led-keys', ...tenantLedKeys },
  { name: '016-unavailable-modules', ...unavailableModules },
  { name: '017-module-definitions', ...moduleDefinitions },
  { name: '018-module-version-history', ...moduleVersionHistory },
  { name: '019-platform-clock', ...platformClock },
  { name: '020-event-horizon', ...eventHorizon }
]

/** The log of what ran (docs/citus.md lists it as a local table). */
const tableName = 'knex_migrations'

/**
 * Every migration in the order it runs: core's, then each plugin's in plugin order (a plugin
 * comes after those it depends on, core/plugin.ts checkDependencies), each list in its order.
 */
function migrationsOf(plugins: readonly MigrationOwner[]): Map<string, Migration> {
  const all = new Map<string, Migration>()
  for (const owner of [{ name: 'core', migrations: coreMigrations }, ...plugins])
    for (const m of owner.migrations ?? []) {
      const id = `${owner.name}/${m.name}`
      if (all.has(id)) throw new Error(`Migration ${id} is listed twice`)
      all.set(id, m)
    }
  return all
}

/**
 * Brings the log up to date with the list before anything runs. A database migrated before has
 * the old names recorded: what replaces them is recorded as done, with the old entry's batch
 * and time (the old rows stay, as history). This runs at every start, so a plugin added later
 * whose migration replaces an old name does not run it either. A recorded migration of an owner
 * in the list that the owner no longer lists was renamed or removed: start-up stops rather than
 * run it again under its new name. Those of an owner not in the list (a plugin taken out: its
 * tables stay) and the old names, which have no owner, are history.
 */
async function reconcile(knex: Knex, all: Map<string, Migration>, owners: Set<string>): Promise<void> {
  if (!(await knex.schema.hasTable(tableName))) return
  const rows: Array<{ name: string; batch: number; migration_time: Date }> = await knex(tableName).select(
    'name',
    'batch',
    'migration_time'
  )
  const unknown = rows.filter((r) => r.name.includes('/') && owners.has(r.name.split('/')[0]) && !all.has(r.name))
  if (unknown.length)
    throw new Error(
      `The database has migrations recorded that their owner no longer lists: ${unknown.map((r) => r.name).join(', ')}`
    )
  const recorded = new Map(rows.map((r) => [r.name, r]))
  const done = [...all].flatMap(([id, m]) => {
    const old = m.replaces === undefined ? undefined : recorded.get(m.replaces)
    return old && !recorded.has(id) ? [{ name: id, batch: old.batch, migration_time: old.migration_time }] : []
  })
  if (done.length) await knex(tableName).insert(done)
}

/**
 * Held while one instance migrates and then secures the tables (row-security.ts): others starting
 * at the same time wait, then find nothing left to run.
 */
export const migrationLock = 7302

/**
 * Brings the database to the latest schema of core and `plugins`; returns the names of the
 * migrations it ran. Several instances starting together on a new version migrate one after
 * another: knex's own lock table made all but one fail (a new database: a duplicate
 * knex_migrations table; later: "Migration table is already locked"). The advisory lock is the
 * session's, and the pool's one connection carries it through the migration.
 */
export async function migrateLatest(url: string, plugins: readonly MigrationOwner[]): Promise<string[]> {
  const all = migrationsOf(plugins)
  const source: Knex.MigrationSource<string> = {
    getMigrations: async () => [...all.keys()],
    getMigrationName: (id) => id,
    getMigration: async (id) => all.get(id)!
  }
  const knex = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } })
  try {
    await knex.raw('SELECT pg_advisory_lock(?)', [migrationLock])
    await reconcile(knex, all, new Set(['core', ...plugins.map((p) => p.name)]))
    // knex's own check refuses every recorded name it is not given, history too; reconcile checks what holds.
    const [, ran] = await knex.migrate.latest({
      migrationSource: source,
      tableName,
      disableMigrationsListValidation: true
    })
    await knex.raw('SELECT pg_advisory_unlock(?)', [migrationLock])
    return ran as string[]
  } finally {
    // Ending the connection releases the lock too, when the migration failed.
    await knex.destroy()
  }
}
