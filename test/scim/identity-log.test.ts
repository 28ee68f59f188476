import pg from 'pg'
import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'
import { scimToken } from './helpers.ts'
import { eventsSettled } from '../helpers/events.ts'
import { eventually } from '../helpers/identity.ts'

const server = await startTestServer()
t.teardown(() => server.close())
const token = await scimToken(server, 'acme')
const databaseUrl = server.platform.config.database.url!

/** An identity event written by hand in a transaction of the caller's (as the directory writes them, with its change). */
const insertEvent = (c: pg.Client) =>
  c.query(
    `INSERT INTO events (tenant_id, type, actor, subject_id, data) VALUES ('acme', 'user.updated', '{"type":"system"}', gen_random_uuid(), '{}') RETURNING id::text`
  )

const log = async (query: string) => {
  const res = await server.request('GET', `/api/v1/identity-log?type=user.updated&${query}`, { token })
  if (res.status !== 200) throw new Error(`identity log: ${res.status} ${res.text}`)
  return res.body as { items: Array<{ id: string }>; nextCursor: string | null }
}

/** Every user.updated event of the log, paging one at a time from the start. */
async function all(): Promise<string[]> {
  const ids: string[] = []
  let cursor: string | null = null
  do {
    const page = await log(`limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
    ids.push(...page.items.map((e) => e.id))
    cursor = page.nextCursor
  } while (cursor)
  return ids
}

t.test('a change that took a lower position and commits after a page read past it is not skipped', async (t) => {
  const [w, y, x] = [0, 1, 2].map(() => new pg.Client({ connectionString: databaseUrl }))
  for (const c of [w, y, x]) await c.connect()
  t.teardown(() => Promise.all([w, y, x].map((c) => c.end())))
  // W and Y take their transaction ids first; X writes the lowest position and stays open; then Y and W write theirs and commit.
  await w.query('BEGIN')
  await w.query('SELECT pg_current_xact_id()')
  await y.query('BEGIN')
  await y.query('SELECT pg_current_xact_id()')
  await x.query('BEGIN')
  const xId = (await insertEvent(x)).rows[0].id
  const yId = (await insertEvent(y)).rows[0].id
  await y.query('COMMIT')
  const wId = (await insertEvent(w)).rows[0].id
  await w.query('COMMIT')
  // The first page, read while X is still open: W (the oldest transaction), with a cursor to go on. The log shows
  // an event once every older transaction has ended, and that horizon is the cluster's: read until W shows.
  let first = await log('limit=1')
  await eventually(async () => (first = await log('limit=1')).items.length > 0, 10_000)
  t.same(
    first.items.map((e) => e.id),
    [wId]
  )
  t.ok(first.nextCursor, 'more to come')
  await x.query('COMMIT')
  await eventsSettled(server.platform.db.system)
  const rest: string[] = []
  for (let cursor = first.nextCursor; cursor;) {
    const page = await log(`limit=1&cursor=${encodeURIComponent(cursor)}`)
    rest.push(...page.items.map((e) => e.id))
    cursor = page.nextCursor
  }
  t.same(rest, [yId, xId], 'Y and then X, which has the lowest position but committed last')
  t.same(await all(), [wId, yId, xId], 'and a reading from the start gives the same')
})

t.test('a cursor issued before pages followed transaction order still goes on after its event', async (t) => {
  const ids = await all()
  t.ok(ids.length >= 3)
  const { rows } = await server.platform.db.system.query('SELECT position FROM events WHERE id = $1', [ids[0]])
  const legacy = server.platform.cursors.encode(JSON.stringify(['identity-log', 'acme', null, 'user.updated']), [
    Number(rows[0].position)
  ])
  const page = await log(`limit=50&cursor=${encodeURIComponent(legacy)}`)
  t.same(
    page.items.map((e) => e.id),
    ids.slice(1)
  )
  const bad = server.platform.cursors.encode(
    JSON.stringify(['identity-log', 'acme', null, 'user.updated']),
    [987654321]
  )
  const refused = await server.request(
    'GET',
    `/api/v1/identity-log?type=user.updated&cursor=${encodeURIComponent(bad)}`,
    { token }
  )
  t.equal(refused.status, 400)
  t.equal(refused.body.code, 'cursor.invalid')
})
