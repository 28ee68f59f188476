import { randomBytes } from 'node:crypto'
import pg from 'pg'
import t from '../helpers/tap.ts'
import { freshDatabase } from '../helpers/database.ts'
import { secureTenantTables } from '../../core/db/row-security.ts'
import { openDatabase } from '../../core/db/index.ts'
import { tenantPool } from '../../core/db/tenant-scope.ts'
import { loadConfig } from '../../core/config.ts'
import { plugins } from '../../plugins/index.ts'

// Roles belong to the cluster, not to one database: a role name of this run only, dropped at the end.
const role = `records_app_test_${randomBytes(3).toString('hex')}`
const dbs = await Promise.all([freshDatabase(), freshDatabase(), freshDatabase()])
t.teardown(async () => {
  for (const db of dbs) await db.drop()
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL ?? dbs[0].url })
  await admin.connect()
  await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined)
  await admin.query(`DROP ROLE IF EXISTS ${role}_bypass`).catch(() => undefined)
  await admin.end()
})

t.test('databases starting together all make or find the one role, and none fails', async (t) => {
  const results = await Promise.allSettled(dbs.map((db) => secureTenantTables(db.url, role)))
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'fulfilled']
  )
  const c = new pg.Client({ connectionString: dbs[0].url })
  await c.connect()
  t.teardown(() => c.end())
  const { rows } = await c.query('SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = $1', [role])
  t.same(rows, [{ rolsuper: false, rolbypassrls: false, rolcanlogin: false }], 'a plain role that cannot log in')
})

t.test('a role that would skip the policies is refused at start-up', async (t) => {
  const c = new pg.Client({ connectionString: dbs[0].url })
  await c.connect()
  t.teardown(() => c.end())
  await c.query(`CREATE ROLE ${role}_bypass NOLOGIN BYPASSRLS`)
  await t.rejects(secureTenantTables(dbs[0].url, `${role}_bypass`), /BYPASSRLS, so row-level security would not apply/)
})

t.test(
  "a DATABASE_URL with its own options keeps them and still acts as the role, seeing no other tenant's rows",
  async (t) => {
    const url = new URL(dbs[1].url)
    url.searchParams.set('options', '-c statement_timeout=5000')
    const config = loadConfig({ database: { url: url.toString(), role } })
    const db = await openDatabase(config, plugins)
    t.teardown(() => db.close())
    await db.system.query(
      "INSERT INTO tenants (id, name) VALUES ('acme', 'Acme'), ('globex', 'Globex') ON CONFLICT (id) DO NOTHING"
    )
    await db.system.query(
      "INSERT INTO tenant_modules (tenant_id, module_key, module_version) VALUES ('acme', 'incident', '1.0.0') ON CONFLICT DO NOTHING"
    )
    t.equal(
      (await tenantPool(db.pool, 'acme').query('SELECT 1 FROM tenant_modules')).rowCount,
      1,
      "acme's scope sees its row"
    )
    const { rows } = await tenantPool(db.pool, 'globex').query(
      "SELECT current_user AS role, current_setting('statement_timeout') AS timeout, (SELECT count(*)::int FROM tenant_modules WHERE tenant_id = 'acme') AS acme"
    )
    t.same(rows, [{ role, timeout: '5s', acme: 0 }])
  }
)

t.test(
  'a pool that would act as a superuser (no database.role, a superuser login) is refused at start-up, naming the role',
  async (t) => {
    // No database.role: the pool would act as the login user, a superuser here.
    const config = loadConfig({ database: { url: dbs[2].url, role: null } })
    await t.rejects(
      openDatabase(config, plugins),
      /is a superuser or has BYPASSRLS, so row-level security would not apply/
    )
  }
)
