import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { startEmbedded, type EmbeddedOptions } from '../../core/db/embedded.ts'
import { testCluster } from '../suite/cluster.ts'

/**
 * A fresh, empty database for one test file: on the server named by DATABASE_URL
 * (CI uses the machine's PostgreSQL), or else on an embedded cluster (the tests' in data/test).
 */
export async function freshDatabase(
  cluster: Omit<EmbeddedOptions, 'database'> = testCluster
): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrl = process.env.DATABASE_URL ?? (await startEmbedded({ ...cluster, database: 'postgres' })).url
  const name = `records_test_${process.pid}_${randomBytes(3).toString('hex')}`
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: serverUrl })
      await c.connect()
      // pg's pool.end() resolves once its clients are out of its list, before their sockets have
      // closed: a forced drop right then killed them mid-goodbye (57P01), and the error surfaced in
      // whichever test of the same process ran next. Sessions still closing get a moment (up to 3 s);
      // whatever is still connected after that is a leak, and FORCE ends it.
      for (const until = Date.now() + 3000; Date.now() < until;) {
        const { rows } = await c.query(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
          [name]
        )
        if (rows[0].n === 0) break
        await new Promise((r) => setTimeout(r, 50))
      }
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await c.end()
    }
  }
}

/**
 * A pool on `url` as its login user, without the service's `database.role`: for what only the
 * tables' owner may do (a test's DDL: constraints, triggers) and plans read without the
 * row-level security policy. Row-level security does not apply to it (the tests log in as a superuser).
 */
export function ownerPool(url: string): pg.Pool {
  return new pg.Pool({ connectionString: url, max: 2 })
}
