import { readFileSync } from 'node:fs'
import pg from 'pg'
import t from '../helpers/tap.ts'
import { freshDatabase } from '../helpers/database.ts'
import { migrateLatest } from '../../core/db/migrate.ts'
import { plugins } from '../../plugins/index.ts'
import { startJobs } from '../../core/jobs/index.ts'
import { CredentialStore } from '../../core/auth/credentials.ts'
import { SessionStore } from '../../core/auth/sessions.ts'

/**
 * The schema stays ready to distribute tenants over Citus by tenant_id (docs/citus.md): read
 * from the catalog of a freshly migrated database, with Agenda's table made as an instance
 * makes it at start. The exceptions are the doc's own table, so the doc and this test cannot
 * disagree.
 */

type Kind = 'reference table' | 'local table'

/** The "Tables without tenant_id" table of docs/citus.md: name → what it becomes in Citus. */
export function documentedExceptions(markdown: string): Map<string, string> {
  const section = markdown.split(/^## Tables without tenant_id$/m)[1]?.split(/^## /m)[0] ?? ''
  const rows = new Map<string, string>()
  for (const line of section.split('\n')) {
    const m = /^\| `([a-z_][a-z0-9_]*)` \| ([^|]+?) \|/.exec(line)
    if (m) rows.set(m[1], m[2])
  }
  return rows
}

interface Table {
  name: string
  /** attnum of tenant_id, or undefined. */
  tenantColumn?: number
  tenantNotNull: boolean
}

const db = await freshDatabase()
t.teardown(() => db.drop())
await migrateLatest(db.url, plugins)
const pool = new pg.Pool({ connectionString: db.url, max: 2 })
const agenda = await startJobs(pool, [], { process: false })
await agenda.stop()
t.teardown(() => pool.end())

const exceptions = documentedExceptions(readFileSync(new URL('../../docs/citus.md', import.meta.url), 'utf8'))

const tables = new Map<string, Table>(
  (
    await pool.query<{ name: string; attnum: number | null; attnotnull: boolean | null }>(
      `SELECT c.relname AS name, a.attnum, a.attnotnull
         FROM pg_class c LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')`
    )
  ).rows.map((r) => [r.name, { name: r.name, tenantColumn: r.attnum ?? undefined, tenantNotNull: !!r.attnotnull }])
)
const tenantOwned = [...tables.values()].filter((x) => x.tenantColumn !== undefined)

/** Unique indexes (primary keys and unique constraints are backed by one) with their first key column (0: an expression). */
const uniqueIndexes = (
  await pool.query<{ table: string; index: string; primary: boolean; first: number; definition: string }>(
    `SELECT c.relname AS table, i.relname AS index, x.indisprimary AS primary, x.indkey[0] AS first, pg_get_indexdef(x.indexrelid) AS definition
       FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
      WHERE c.relnamespace = 'public'::regnamespace AND x.indisunique`
  )
).rows

const foreignKeys = (
  await pool.query<{
    name: string
    from: string
    to: string
    columns: number[]
    referenced: number[]
    definition: string
  }>(
    `SELECT k.conname AS name, k.conrelid::regclass::text AS from, k.confrelid::regclass::text AS to,
            k.conkey::int[] AS columns, k.confkey::int[] AS referenced, pg_get_constraintdef(k.oid) AS definition
       FROM pg_constraint k WHERE k.connamespace = 'public'::regnamespace AND k.contype = 'f'`
  )
).rows

t.test('the doc lists the exceptions, each as a reference or a local table', async (t) => {
  t.ok(exceptions.size >= 4, `found ${[...exceptions.keys()].join(', ')} in docs/citus.md`)
  for (const [name, kind] of exceptions)
    t.ok((['reference table', 'local table'] as Kind[]).includes(kind as Kind), `${name}: "${kind}"`)
})

t.test('every table without tenant_id is a documented exception', async (t) => {
  const undocumented = [...tables.values()]
    .filter((x) => x.tenantColumn === undefined && !exceptions.has(x.name))
    .map((x) => x.name)
  t.same(undocumented, [], 'tables without tenant_id that docs/citus.md does not list')
})

t.test('every documented exception exists and has no tenant_id', async (t) => {
  const wrong = [...exceptions.keys()].filter(
    (name) => !tables.has(name) || tables.get(name)!.tenantColumn !== undefined
  )
  t.same(wrong, [], 'listed in docs/citus.md but missing from the schema, or tenant-owned after all')
})

t.test('every tenant-owned table has a NOT NULL tenant_id leading its primary key', async (t) => {
  t.ok(tenantOwned.length >= 15, `${tenantOwned.length} tenant-owned tables`)
  const wrong = tenantOwned
    .filter(
      (x) =>
        !x.tenantNotNull || !uniqueIndexes.some((i) => i.table === x.name && i.primary && i.first === x.tenantColumn)
    )
    .map(
      (x) =>
        `${x.name}: ${uniqueIndexes.find((i) => i.table === x.name && i.primary)?.definition ?? 'no primary key'}${x.tenantNotNull ? '' : ' (tenant_id nullable)'}`
    )
  t.same(wrong, [])
})

t.test(
  'every unique constraint and unique index of a tenant-owned table leads with tenant_id, partial ones too',
  async (t) => {
    const column = new Map(tenantOwned.map((x) => [x.name, x.tenantColumn]))
    const wrong = uniqueIndexes
      .filter((i) => column.has(i.table) && i.first !== column.get(i.table))
      .map((i) => i.definition)
    t.same(wrong, [])
  }
)

t.test('every foreign key between tenant-owned tables matches tenant_id with tenant_id', async (t) => {
  const wrong = foreignKeys
    .filter((k) => tables.get(k.from)?.tenantColumn !== undefined && tables.get(k.to)?.tenantColumn !== undefined)
    .filter(
      (k) =>
        !k.columns.some(
          (c, n) => c === tables.get(k.from)!.tenantColumn && k.referenced[n] === tables.get(k.to)!.tenantColumn
        )
    )
    .map((k) => `${k.from}.${k.name}: ${k.definition}`)
  t.same(wrong, [])
  t.ok(
    // attachments → records: record_activity's key to records became a trigger (plugins/records/migrations/003).
    foreignKeys.some((k) => k.from === 'attachments' && k.to === 'records'),
    'the check saw the foreign keys between tenant-owned tables'
  )
})

t.test(
  'a tenant-owned table refers only to reference tables among the exceptions, and no exception refers to a tenant-owned table',
  async (t) => {
    const owned = (name: string) => tables.get(name)?.tenantColumn !== undefined
    const wrong = foreignKeys
      .filter(
        (k) =>
          (owned(k.from) && !owned(k.to) && exceptions.get(k.to) !== 'reference table') ||
          (!owned(k.from) && owned(k.to))
      )
      .map((k) => `${k.from}.${k.name}: ${k.definition}`)
    t.same(wrong, [])
    t.ok(
      foreignKeys.some((k) => owned(k.from) && k.to === 'tenants'),
      'the check saw the foreign keys to tenants'
    )
  }
)

t.test(
  'a token or a session cookie whose hash two tenants hold authenticates nobody (hashes are unique per tenant only)',
  async (t) => {
    await pool.query(`INSERT INTO tenants (id, name) VALUES ('acme', 'Acme'), ('globex', 'Globex')`)
    const { rows: users } = await pool.query<{ tenant_id: string; id: string }>(
      `INSERT INTO users (tenant_id, user_name) VALUES ('acme', 'ann'), ('globex', 'gus') RETURNING tenant_id, id`
    )
    const user = (tenant: string) => users.find((u) => u.tenant_id === tenant)!.id

    const credentials = new CredentialStore(pool)
    const { token } = await credentials.create({ tenantId: 'acme', kind: 'api_key', name: 'k' })
    t.equal((await credentials.authenticate(`Bearer ${token}`)).tenantId, 'acme', 'the token alone finds its tenant')
    await pool.query(
      `INSERT INTO credentials (tenant_id, kind, name, prefix, secret_hash) SELECT 'globex', kind, name, prefix, secret_hash FROM credentials WHERE tenant_id = 'acme'`
    )
    await t.rejects(
      new CredentialStore(pool).authenticate(`Bearer ${token}`),
      { message: /token is unknown/ },
      'the same hash in another tenant: neither is chosen'
    )

    const sessions = new SessionStore(pool, { ttlHours: 1, idleMinutes: 60 })
    const { cookieValue } = await sessions.create('acme', user('acme'))
    t.equal((await sessions.resolve(cookieValue))?.principal.tenantId, 'acme', 'the cookie alone finds its tenant')
    await pool.query(
      `INSERT INTO sessions (tenant_id, id, user_id, csrf_token, expires_at) SELECT 'globex', id, $1, csrf_token, expires_at FROM sessions WHERE tenant_id = 'acme'`,
      [user('globex')]
    )
    t.equal(await sessions.resolve(cookieValue), undefined, 'the same hash in another tenant: neither is chosen')
  }
)
