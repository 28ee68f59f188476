import knexFactory from 'knex'
import pg from 'pg'
import t, { type Test } from '../helpers/tap.ts'
import { freshDatabase } from '../helpers/database.ts'
import { migrateLatest } from '../../core/db/migrate.ts'
import * as tenantLedKeys from '../../core/db/migrations/015-tenant-led-keys.ts'
import * as exportChunks from '../../plugins/exports/migrations/002-chunks.ts'
import { plugins } from '../../plugins/index.ts'

/**
 * Core migrates its own tables and each plugin brings its own (core/db/migrate.ts). A database
 * migrated by the single list of core/db/migrations that came before has that list's names
 * recorded (below, as it left them); the new lists take them over without running anything twice.
 */

/** What the single list recorded, in its order. */
const singleList = [
  '001-initial',
  '002-identity',
  '003-bulk',
  '004-attachments',
  '005-exports',
  '006-events',
  '007-record-number-index',
  '008-scim',
  '009-events-feed',
  '010-webhooks',
  '011-webhook-retries-index',
  '012-webhook-owners',
  '013-token-persons',
  '014-export-chunks',
  '015-tenant-led-keys'
]

/** Migrations written after the single list ended: a database it left runs these, and nothing else. */
const addedSince = [
  'core/016-unavailable-modules',
  'core/017-module-definitions',
  'core/018-module-version-history',
  'core/019-platform-clock',
  'core/020-event-horizon',
  'records/003-activity-key-check',
  'records/004-record-migrations',
  'records/005-query-functions',
  'records/006-due-dates',
  'recurrence/001-series',
  'recurrence/002-made-records',
  'exports/003-encoded-chunks',
  'exports/004-deflated-chunks'
]

/** The schema as the catalogue has it: columns, constraints, indexes, triggers and functions of `public`. */
async function schemaOf(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ line: string }>(
    `SELECT format('column %s.%s %s %s %s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
                   CASE WHEN a.attnotnull THEN 'not null' ELSE '' END, pg_get_expr(d.adbin, d.adrelid)) AS line
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
       LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
     UNION ALL
     SELECT format('constraint %s.%s %s', k.conrelid::regclass, k.conname, pg_get_constraintdef(k.oid))
       FROM pg_constraint k WHERE k.connamespace = 'public'::regnamespace
     UNION ALL
     SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
     UNION ALL
     SELECT 'trigger ' || pg_get_triggerdef(g.oid) FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
      WHERE c.relnamespace = 'public'::regnamespace AND NOT g.tgisinternal
     UNION ALL
     SELECT 'function ' || pg_get_functiondef(p.oid) FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
     ORDER BY 1`
  )
  return rows.map((r) => r.line)
}

/** A database migrated by the current lists, with a pool on it. */
async function migrated(t: Test) {
  const db = await freshDatabase()
  const pool = new pg.Pool({ connectionString: db.url, max: 2 })
  t.teardown(async () => {
    await pool.end()
    await db.drop()
  })
  const ran = await migrateLatest(db.url, plugins)
  return { url: db.url, pool, ran }
}

const recorded = async (pool: pg.Pool) =>
  (await pool.query<{ name: string }>('SELECT name FROM knex_migrations ORDER BY id')).rows.map((r) => r.name)

/** Makes the log say what the single list said after its first `upTo` migrations. */
async function recordSingleList(pool: pg.Pool, upTo = singleList.length) {
  await pool.query('DELETE FROM knex_migrations')
  await pool.query(
    `INSERT INTO knex_migrations (name, batch, migration_time) SELECT unnest($1::text[]), 1, now() - interval '1 day'`,
    [singleList.slice(0, upTo)]
  )
}

t.test('core runs first, then each plugin in list order, each migration recorded as <owner>/<name>', async (t) => {
  const { pool, ran } = await migrated(t)
  t.same(await recorded(pool), ran)
  const owners = [...new Set(ran.map((id) => id.split('/')[0]))]
  t.same(
    owners,
    ['core', ...plugins.filter((p) => p.migrations?.length).map((p) => p.name)],
    'core, then the plugins with tables'
  )
  t.ok(
    ran.indexOf('idempotency/001-keys') < ran.indexOf('bulk/001-outcomes'),
    'bulk_outcomes after the keys it refers to'
  )
})

t.test(
  'a database the single list brought up to date starts on the new lists with nothing to run, every change taken over',
  async (t) => {
    const { url, pool, ran } = await migrated(t)
    const schema = await schemaOf(pool)
    await recordSingleList(pool)
    t.same(await migrateLatest(url, plugins), addedSince, 'nothing of the single list re-runs')
    t.same(
      await recorded(pool),
      [...singleList, ...ran.filter((id) => !addedSince.includes(id)), ...addedSince],
      'each migration recorded under its new name, the old ones kept'
    )
    t.same(await schemaOf(pool), schema)
    t.same(await migrateLatest(url, plugins), [], 'and the next start finds nothing either')
  }
)

t.test(
  'a database the single list migrated up to 012 gets the changes after it, core then plugins, and ends with the schema of a new one',
  async (t) => {
    const { url, pool } = await migrated(t)
    const schema = await schemaOf(pool)
    // Back to where the single list's 012 left it: 013 changed data only, 014 and 015 are undone.
    const knex = knexFactory({ client: 'pg', connection: url })
    t.teardown(() => knex.destroy())
    await exportChunks.down(knex)
    await tenantLedKeys.down(knex)
    await recordSingleList(pool, 12)
    t.same(await migrateLatest(url, plugins), [
      'core/013-token-persons',
      'core/015-tenant-led-keys',
      'core/016-unavailable-modules',
      'core/017-module-definitions',
      'core/018-module-version-history',
      'core/019-platform-clock',
      'core/020-event-horizon',
      'records/003-activity-key-check',
      'records/004-record-migrations',
      'records/005-query-functions',
      'records/006-due-dates',
      'recurrence/001-series',
      'recurrence/002-made-records',
      'exports/002-chunks',
      'exports/003-encoded-chunks',
      'exports/004-deflated-chunks'
    ])
    t.same(await schemaOf(pool), schema)
  }
)

t.test(
  "a plugin taken out of the list keeps its tables and its log, and back in it runs nothing, even where it replaced the single list's names",
  async (t) => {
    const { url, pool } = await migrated(t)
    await recordSingleList(pool)
    const withoutExports = plugins.filter((p) => p.name !== 'exports')
    t.same(
      await migrateLatest(url, withoutExports),
      addedSince.filter((id) => !id.startsWith('exports/'))
    )
    t.notOk(
      (await recorded(pool)).some((name) => name.startsWith('exports/')),
      'exports took over nothing yet'
    )
    t.same(
      await migrateLatest(url, plugins),
      addedSince.filter((id) => id.startsWith('exports/')),
      'back in the list: its tables are there, its old names recorded, what it added since runs'
    )
    t.ok((await recorded(pool)).includes('exports/002-chunks'))
  }
)

t.test('a recorded migration that its owner no longer lists stops the migration, naming it', async (t) => {
  const { url, pool } = await migrated(t)
  await pool.query(`INSERT INTO knex_migrations (name, batch, migration_time) VALUES ('exports/003-renamed', 2, now())`)
  await t.rejects(migrateLatest(url, plugins), /exports\/003-renamed/)
  await pool.query(`DELETE FROM knex_migrations WHERE name = 'exports/003-renamed'`)
  await pool.query(`INSERT INTO knex_migrations (name, batch, migration_time) VALUES ('gone/001-tables', 2, now())`)
  t.same(await migrateLatest(url, plugins), [], "a plugin's no longer in the list is history")
})
