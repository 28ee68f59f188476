import { randomBytes } from 'node:crypto'
import pg from 'pg'
import t from '../helpers/tap.ts'
import { freshDatabase } from '../helpers/database.ts'
import { secureTenantTables } from '../../core/db/row-security.ts'

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
