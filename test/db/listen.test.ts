import pg from 'pg'
import t from '../helpers/tap.ts'
import { freshDatabase } from '../helpers/database.ts'
import { listenWithReconnect } from '../../core/db/listen.ts'
import { CredentialStore } from '../../core/auth/credentials.ts'

const db = await freshDatabase()
const admin = new pg.Pool({ connectionString: db.url, max: 2, application_name: 'listen-test-admin' })
t.teardown(async () => {
  await admin.end()
  await db.drop()
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A pool for one listener, its connections named so the test finds them; `sabotage(n)` drops each of the next n connections just as it sends LISTEN. */
function listenerPool(name: string) {
  const pool = new pg.Pool({ connectionString: db.url, max: 4, application_name: name })
  const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>
  let sabotaged = 0
  ;(pool as any).connect = async () => {
    const client = await connect()
    if (sabotaged > 0) {
      sabotaged--
      const query = client.query
      ;(client as any).query = function (this: pg.PoolClient, ...args: any[]) {
        if (typeof args[0] !== 'string' || !args[0].startsWith('LISTEN')) return (query as any).apply(this, args)
        ;(client as any).query = query
        // The backend ends while LISTEN is in flight: the query rejects and the client emits 'end' (and 'error').
        return (async () => {
          await admin.query('SELECT pg_terminate_backend($1)', [(client as any).processID])
          return (query as any).apply(this, args)
        })()
      }
    }
    return client
  }
  return { pool, sabotage: (n: number) => void (sabotaged = n) }
}

async function listeningPids(name: string): Promise<number[]> {
  const { rows } = await admin.query(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND query LIKE 'LISTEN%'`,
    [name]
  )
  return rows.map((r) => r.pid)
}

/** Waits until the listener is back on a connection other than `not` (and no sabotage is pending). */
async function relistened(name: string, not: number[]): Promise<number> {
  const deadline = Date.now() + 15_000
  while (Date.now() < deadline) {
    const pids = (await listeningPids(name)).filter((p) => !not.includes(p))
    if (pids.length) return pids[0]
    await sleep(50)
  }
  throw new Error(`${name} did not listen again`)
}

async function terminate(pid: number) {
  await admin.query('SELECT pg_terminate_backend($1)', [pid])
}

async function notifyAndCollect(channel: string, received: string[], payloads: string[]) {
  received.length = 0
  for (const p of payloads) await admin.query('SELECT pg_notify($1, $2)', [channel, p])
  const deadline = Date.now() + 5000
  while (received.length < payloads.length && Date.now() < deadline) await sleep(20)
  await sleep(200) // a second delivery would arrive by now
  return [...received]
}

t.test(
  'a listener whose connection is terminated again and again, also while LISTEN is in flight, ends with one connection that hears each NOTIFY once',
  async (t) => {
    const name = 'listen-test-a'
    const { pool, sabotage } = listenerPool(name)
    t.teardown(() => pool.end())
    const received: string[] = []
    let resubscribed = 0
    const listening = await listenWithReconnect(pool, 'listen_test_a', {
      logName: 'test listener',
      onNotify: (p) => received.push(p!),
      onResubscribed: () => void resubscribed++,
      retryDelayMs: (n) => Math.min(400, 20 * 2 ** n)
    })
    t.same(await notifyAndCollect('listen_test_a', received, ['first']), ['first'])

    const seen: number[] = []
    for (let round = 0; round < 6; round++) {
      const [pid] = await listeningPids(name)
      t.ok(pid, `round ${round}: listening`)
      seen.push(pid)
      // Every other round, the first reconnects lose their connection while LISTEN is in flight.
      sabotage(round % 2 ? 2 : 0)
      await terminate(pid)
      await relistened(name, seen)
    }
    await sleep(1000) // past every backoff: a second, stray attempt would be listening by now
    t.equal((await listeningPids(name)).length, 1, 'one listening connection')
    t.equal(pool.totalCount, 1, 'the pool holds that connection only')
    t.equal(resubscribed, 6, 'told of each resubscription once')
    t.same(
      await notifyAndCollect('listen_test_a', received, ['x', 'y', 'z']),
      ['x', 'y', 'z'],
      'each NOTIFY handled exactly once'
    )

    await listening.close()
    t.equal((await listeningPids(name)).length, 0, 'close() stops listening')
    t.equal(pool.idleCount, pool.totalCount, 'and hands its connection back')
    t.same(await notifyAndCollect('listen_test_a', received, ['after']), [], 'nothing heard after close()')
  }
)

t.test('close() while a reconnect is pending or in flight leaves no connection behind', async (t) => {
  const name = 'listen-test-b'
  const { pool, sabotage } = listenerPool(name)
  t.teardown(() => pool.end())
  for (const [what, delay] of [
    ['pending', 60_000],
    ['in flight', 0]
  ] as const) {
    const listening = await listenWithReconnect(pool, 'listen_test_b', {
      logName: 'test listener',
      onNotify: () => undefined,
      retryDelayMs: () => delay
    })
    const [pid] = await listeningPids(name)
    if (what === 'in flight') sabotage(1)
    await terminate(pid)
    await sleep(what === 'pending' ? 200 : 5)
    await listening.close()
    await sleep(300)
    t.equal((await listeningPids(name)).length, 0, `${what}: nothing listens`)
    t.equal(pool.idleCount, pool.totalCount, `${what}: every connection is back in the pool`)
    sabotage(0)
  }
})

t.test('a first LISTEN that fails rejects and releases its connection', async (t) => {
  const { pool } = listenerPool('listen-test-c')
  t.teardown(() => pool.end())
  await t.rejects(
    listenWithReconnect(pool, 'not a channel', { logName: 'test listener', onNotify: () => undefined }),
    /syntax/
  )
  t.equal(pool.totalCount - pool.idleCount, 0, 'no connection stays checked out')
})

t.test('the credential store: a drop while LISTEN is in flight does not leave two listeners', async (t) => {
  const name = 'listen-test-credentials'
  const { pool, sabotage } = listenerPool(name)
  t.teardown(() => pool.end())
  const store = new CredentialStore(pool)
  await store.listen()
  const [pid] = await listeningPids(name)
  sabotage(1)
  await terminate(pid)
  await relistened(name, [pid])
  await sleep(1500) // past the 250 and 500 ms backoffs
  t.equal((await listeningPids(name)).length, 1, 'one listening connection')
  t.equal(pool.totalCount, 1, 'the pool holds that connection only')
  await store.close()
  t.equal((await listeningPids(name)).length, 0, 'close() stops listening')
  t.equal(pool.idleCount, pool.totalCount, 'and hands every connection back')
})
