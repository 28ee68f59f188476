import { randomBytes } from 'node:crypto'
import knexFactory from 'knex'
import pg from 'pg'
import type { AppConfig } from '../config.ts'
import { logger } from '../logger.ts'
import { startEmbedded, type EmbeddedServer } from './embedded.ts'
import { migrateLatest, type MigrationOwner } from './migrate.ts'
import { secureTenantTables } from './row-security.ts'
import { ScopedPool, systemPool } from './tenant-scope.ts'

// Bigint counters (sequence values, activity ids) as numbers; they stay far below 2^53.
// Timestamps are left as Date: Agenda shares this pool and expects them; API SQL formats its own.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => (v === null ? null : Number(v)))

/** SQL rendering a timestamptz column as the API's ISO 8601 UTC text with milliseconds and `Z`. */
export const isoUtc = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/** The query builder: knex compiles, the app's one pg pool runs (shared with Agenda). */
export const sql = knexFactory({ client: 'pg' })

export interface Database {
  /** Every checkout carries the caller's tenant scope (core/db/tenant-scope.ts); row-level security does the rest. */
  pool: pg.Pool
  /** The same pool as a named system action that sees every tenant: for tests and tools that inspect the database. */
  system: pg.Pool
  url: string
  /** Migrations this start-up ran; empty when the schema was already current. */
  migrated: string[]
  embedded?: EmbeddedServer
  close(): Promise<void>
}

export type Queryable = pg.Pool | pg.PoolClient

/**
 * `asyncCommit` for a single statement run on its own (its implicit transaction): a CTE that turns the WAL flush wait
 * off until that statement commits, so one round trip does what `transaction(…, { asyncCommit: true })` does in three
 * (`WITH a AS (${asyncCommitCte}) … FROM …, a`; the exports' chunk commit).
 */
export const asyncCommitCte = `SELECT set_config('synchronous_commit', 'off', true)`

/**
 * Runs fn inside a transaction on one client; rolls back on any error, and instead of
 * committing when `rollback` is set (a bulk dry run: every write checked, none kept).
 * `asyncCommit`: the commit returns before its WAL is flushed (`synchronous_commit off`),
 * for writes a crash may lose because they are redone (the webhook dispatcher's bookkeeping).
 */
export async function transaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
  options: { rollback?: boolean; asyncCommit?: boolean } = {}
): Promise<T> {
  const client = await pool.connect()
  try {
    // Bookkeeping that may be lost in a crash without harm (it is redone): COMMIT does not wait for the WAL flush.
    await client.query(options.asyncCommit ? 'BEGIN; SET LOCAL synchronous_commit TO off' : 'BEGIN')
    const result = await fn(client)
    await client.query(options.rollback ? 'ROLLBACK' : 'COMMIT')
    return result
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw err
  } finally {
    client.release()
  }
}

/**
 * The schema's latest migrations (core's, then each plugin's), then row-level security on every
 * tenant-owned table they left (core/db/row-security.ts), so a plugin's new table is covered
 * without its migration saying so. Returns the migrations it ran.
 */
export async function migrate(url: string, role: string | null, plugins: readonly MigrationOwner[]): Promise<string[]> {
  const ran = await migrateLatest(url, plugins)
  await secureTenantTables(url, role)
  return ran
}

/**
 * What the pool connects with: the URL's own `options` (a statement timeout, a provider's
 * endpoint name) kept, and the time zone, JIT off and the role appended. pg lets a connection string's
 * `options` replace the config's whole, which dropped the role and with it row-level security.
 */
export function poolConnection(url: string, role: string | null): { connectionString: string; options: string } {
  let connectionString = url
  let given = ''
  if (/^postgres(ql)?:/.test(url)) {
    const u = new URL(url)
    given = u.searchParams.get('options') ?? ''
    if (u.searchParams.has('options')) {
      u.searchParams.delete('options')
      connectionString = u.toString()
    }
  }
  // JIT off: it compiled a plan whose estimate crossed jit_above_cost (a list over a million records) for 100-300 ms,
  // more than the statement then took; an answer of one page never repays it.
  const options = [given, '-c TimeZone=UTC', '-c jit=off', role ? `-c role=${role}` : ''].filter(Boolean).join(' ')
  return { connectionString, options }
}

/**
 * Refuses a pool whose role would never see a policy (a superuser or BYPASSRLS role: the login
 * user when `database.role` is unset, or whatever the connection ended up as): tenancy would
 * then rest on each statement's own condition again, silently.
 */
async function assertPoliciesApply(pool: pg.Pool): Promise<void> {
  const { rows } = await systemPool(pool, 'role check').query<{ role: string; bypasses: boolean }>(
    'SELECT current_user AS role, rolsuper OR rolbypassrls AS bypasses FROM pg_roles WHERE rolname = current_user'
  )
  if (rows[0]?.bypasses)
    throw new Error(
      `The database role "${rows[0].role}" is a superuser or has BYPASSRLS, so row-level security would not apply: ` +
        'set database.role (DATABASE_ROLE) to a role without either (docs/tenancy.md)'
    )
}

/** Connects to DATABASE_URL, or starts the embedded cluster, then migrates core and the plugins' tables. */
export async function openDatabase(
  config: AppConfig,
  plugins: readonly MigrationOwner[],
  options: { migrate?: boolean } = {}
): Promise<Database> {
  let embedded: EmbeddedServer | undefined
  let url = config.database.url
  if (!url) {
    embedded = await startEmbedded({ dataDir: config.database.embedded.dataDir, port: config.database.embedded.port })
    url = embedded.url
  }
  const { role } = config.database
  const migrated = options.migrate === false ? [] : await migrate(url, role, plugins)
  if (migrated.length) logger.info('database migrated', { migrations: migrated })
  // The role as a startup option, not a SET after connecting: a missing role fails the connection instead of leaving it a superuser's.
  const pool = new ScopedPool({ ...poolConnection(url, role), max: config.database.poolSize })
  pool.on('error', (err) => logger.error('idle database client failed', { error: err.message }))
  try {
    await assertPoliciesApply(pool)
  } catch (err) {
    await pool.end()
    await embedded?.stop()
    throw err
  }
  return {
    pool,
    system: systemPool(pool, 'direct database access'),
    url,
    migrated,
    embedded,
    async close() {
      await pool.end()
      await embedded?.stop()
    }
  }
}

/**
 * A platform-wide secret by name (cursor sealing, storage URL signing, OIDC flow cookies,
 * webhook signing secrets at rest): 32 random bytes in `platform_secrets`, made on first use
 * by whichever instance gets there first, the same for every instance afterwards.
 */
export async function platformSecret(pool: pg.Pool, name: string): Promise<Buffer> {
  await pool.query('INSERT INTO platform_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
    name,
    randomBytes(32)
  ])
  const { rows } = await pool.query('SELECT value FROM platform_secrets WHERE name = $1', [name])
  return rows[0].value
}
