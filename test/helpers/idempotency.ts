import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import type { Reply } from './server.ts'

async function until<T>(probe: () => Promise<T | undefined>, what: string, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await probe()
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what}`)
    await sleep(10)
  }
}

/**
 * Whether a session waits on a lock to store an answer. Asked as the login user, not the pool's
 * role: pg_stat_activity shows a session's statement only to its login user (or a superuser),
 * and the service's sessions log in as the URL's user before they act as `database.role`.
 */
async function waitingToStore(pool: pg.Pool): Promise<boolean> {
  const client = new pg.Client({
    connectionString: (pool as unknown as { options: pg.PoolConfig }).options.connectionString
  })
  await client.connect()
  try {
    const { rows } = await client.query(
      "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE idempotency_keys%'"
    )
    return rows.length > 0
  } finally {
    await client.end()
  }
}

/**
 * Sends a write with an Idempotency-Key and stops it at the moment its answer is being
 * stored: the write to `table` waits until the key is claimed, then the key's row is held so
 * that the stored answer cannot be written. `whileBlocked` runs then, on other connections:
 * a write whose answer is stored in its own transaction is not committed yet. Returns the
 * reply once everything is let go.
 */
export async function whileAnswerIsStored(
  pool: pg.Pool,
  o: { key: string; table: string; send(): Promise<Reply>; whileBlocked(): Promise<void> }
): Promise<Reply> {
  const gate = await pool.connect()
  const holder = await pool.connect()
  let reply: Promise<Reply> | undefined
  try {
    await gate.query('BEGIN')
    // SHARE mode lets reads through and holds back every INSERT and UPDATE of the table.
    await gate.query(`LOCK TABLE ${o.table} IN SHARE MODE`)
    reply = o.send()
    reply.catch(() => undefined)
    await until(
      async () =>
        (await pool.query("SELECT 1 FROM idempotency_keys WHERE key = $1 AND state = 'in_flight'", [o.key])).rows[0],
      'the request to claim its Idempotency-Key'
    )
    await holder.query('BEGIN')
    await holder.query('SELECT 1 FROM idempotency_keys WHERE key = $1 FOR UPDATE', [o.key])
    await gate.query('COMMIT')
    await until(async () => (await waitingToStore(pool)) || undefined, 'the request to store its answer')
    await o.whileBlocked()
    await holder.query('COMMIT')
    return await reply
  } finally {
    await gate.query('ROLLBACK').catch(() => undefined)
    await holder.query('ROLLBACK').catch(() => undefined)
    gate.release()
    holder.release()
    await reply?.catch(() => undefined)
  }
}
