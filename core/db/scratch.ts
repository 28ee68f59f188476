import { randomBytes } from 'node:crypto'
import pg from 'pg'

/**
 * A new, empty database on the server `serverUrl` names, called `<prefix>_<pid>_<random>`: a test file's, or
 * `records module check`'s. drop() removes it: sessions still closing get a moment (up to 3 s: pg's pool.end()
 * resolves before its sockets have closed, and a forced drop right then killed them mid-goodbye, 57P01, surfacing in
 * whatever ran next); whatever is still connected after that is a leak, and FORCE ends it.
 */
export async function scratchDatabase(
  serverUrl: string,
  prefix: string
): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${process.pid}_${randomBytes(3).toString('hex')}`
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: serverUrl })
      await c.connect()
      try {
        for (const until = Date.now() + 3000; Date.now() < until;) {
          const { rows } = await c.query(
            'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
            [name]
          )
          if (rows[0].n === 0) break
          await new Promise((r) => setTimeout(r, 50))
        }
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await c.end()
      }
    }
  }
}
