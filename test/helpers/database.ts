import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { startEmbedded } from '../../core/db/embedded.ts'

/**
 * A fresh, empty database for one test file: on the server named by DATABASE_URL
 * (CI uses the machine's PostgreSQL), or else on an embedded cluster in data/test.
 */
export async function freshDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrl = process.env.DATABASE_URL ?? (await startEmbedded({ dataDir: 'data/test', port: Number(process.env.EMBEDDED_TEST_PG_PORT ?? 54339), database: 'postgres' })).url
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
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await c.end()
    }
  }
}
