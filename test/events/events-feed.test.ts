import pg from 'pg'
import t from '../helpers/tap.ts'
import { userWithToken } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { eventsSettled } from '../helpers/events.ts'
import { eventsFeedPlugin } from '../../plugins/events-feed/events-feed.ts'

const server = await startTestServer()
t.teardown(() => server.close())
const pool = server.platform.db.system
const databaseUrl = server.platform.config.database.url!
const enc = encodeURIComponent

type Page = { items: any[]; nextCursor: string; hasMore: boolean; limit: number }
async function feed(query = '', token?: string): Promise<Page> {
  const r = await server.request('GET', `/api/v1/events${query ? `?${query}` : ''}`, { token })
  if (r.status !== 200) throw new Error(`feed answered ${r.status} ${r.text}`)
  return r.body
}
/** Every event after `cursor` (to the end), a page of `limit` at a time; and the cursor to poll with. */
async function readAll(cursor: string | undefined, limit = 100, extra = '', token?: string) {
  const items: any[] = []
  for (;;) {
    const page = await feed(
      [cursor ? `after=${enc(cursor)}` : '', `limit=${limit}`, extra].filter(Boolean).join('&'),
      token
    )
    items.push(...page.items)
    cursor = page.nextCursor
    if (!page.hasMore) return { items, cursor }
  }
}
/**
 * Waits until every committed event of the tenant is readable: the feed holds back events
 * while any transaction that began before they committed still runs, on the whole cluster
 * (other databases' tests included).
 */
async function settled(tenant = 'acme') {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 25))) {
    const { rows } = await pool.query(
      'SELECT coalesce(max(txid) < pg_snapshot_xmin(pg_current_snapshot()), true) AS ok FROM events WHERE tenant_id = $1',
      [tenant]
    )
    if (rows[0].ok) return
  }
  throw new Error('events stayed held back for 20 s')
}
/** Every event after `cursor`, once all committed ones are readable. */
async function readSettled(cursor: string | undefined, limit = 100, extra = '', token?: string, tenant = 'acme') {
  await settled(tenant)
  return readAll(cursor, limit, extra, token)
}
const tail = async (token?: string, tenant = 'acme') => (await readSettled(undefined, 200, '', token, tenant)).cursor
const create = async (overrides: Record<string, unknown> = {}, token?: string) => {
  const r = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload(overrides) },
    token
  })
  if (r.status !== 201) throw new Error(`create answered ${r.status} ${r.text}`)
  return r.body
}
/** An event written straight into the table, as a change's statement writes it, on a connection of its own. */
const insertEvent = (c: pg.Client, tenant = 'acme') =>
  c.query(
    `INSERT INTO events (tenant_id, type, actor, module_key, subject_id, data) VALUES ($1, 'record.created', '{"type":"system","id":"test","name":"test"}', 'incident', gen_random_uuid(), '{"number":"INC-0","version":1}') RETURNING id`,
    [tenant]
  )

t.test('the events of REST writes appear in order, each with its envelope and no position', async (t) => {
  const since = await tail()
  const created = await create({ title: 'feed envelope' })
  const id = created.id
  t.equal((await server.request('PATCH', `/api/v1/records/${id}`, { body: { payload: { site: 'Hull' } } })).status, 200)
  t.equal(
    (
      await server.request('POST', `/api/v1/records/${id}:transition`, {
        body: {
          transition: 'start-investigation',
          payload: { investigationLead: '2c9d6f1e-7b3a-4e58-9f0d-1a2b3c4d5e6f' }
        }
      })
    ).status,
    200
  )
  t.equal((await server.request('DELETE', `/api/v1/records/${id}`)).status, 200)
  await settled()
  const page = await feed(`after=${enc(since)}`)
  t.same(
    page.items.map((e) => e.type),
    ['record.created', 'record.updated', 'record.transitioned', 'record.deleted']
  )
  t.equal(page.hasMore, false)
  t.equal(page.limit, 100, 'the default page size')
  const [first, updated] = page.items
  t.same(
    Object.keys(first).sort(),
    ['actor', 'data', 'id', 'moduleKey', 'occurredAt', 'subject', 'tenantId', 'type'],
    'the envelope, with no position'
  )
  t.match(first, {
    tenantId: 'acme',
    moduleKey: 'incident',
    subject: { type: 'record', id },
    actor: created.createdBy,
    data: { number: created.number, version: 1 }
  })
  t.match(first.occurredAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
  t.same(updated.data.changedFields, ['site'])
  const stored = await pool.query(
    "SELECT id::text FROM events WHERE tenant_id = 'acme' AND subject_id = $1 ORDER BY position",
    [id]
  )
  t.same(
    page.items.map((e) => e.id),
    stored.rows.map((r) => r.id),
    'exactly the stored events, in their order'
  )
})

t.test('paging with limit 2 returns each event exactly once, and an empty page a cursor to poll with', async (t) => {
  const since = await tail()
  const made = []
  for (let i = 0; i < 5; i++) made.push(await create({ title: `paged ${i}` }))
  const { items, cursor } = await readSettled(since, 2)
  t.same(
    items.map((e) => e.subject.id),
    made.map((r) => r.id),
    'five events, once each, in order'
  )
  t.equal(new Set(items.map((e) => e.id)).size, 5)
  const empty = await feed(`after=${enc(cursor)}&limit=2`)
  t.same(empty.items, [])
  t.equal(empty.hasMore, false)
  t.equal(empty.nextCursor, cursor, 'an empty page hands back the cursor it was given')
  const later = await create({ title: 'after the poll' })
  await settled()
  const polled = await feed(`after=${enc(empty.nextCursor)}`)
  t.same(
    polled.items.map((e) => e.subject.id),
    [later.id],
    'polling with it brings the next event'
  )
})

t.test('a transaction that took an earlier position and commits after a later one is not skipped', async (t) => {
  const a = new pg.Client({ connectionString: databaseUrl })
  const b = new pg.Client({ connectionString: databaseUrl })
  await a.connect()
  await b.connect()
  t.teardown(async () => {
    await a.end()
    await b.end()
  })
  let cursor = await tail()
  await a.query('BEGIN')
  const held = (await insertEvent(a)).rows[0].id
  await b.query('BEGIN')
  const quick = (await insertEvent(b)).rows[0].id
  await b.query('COMMIT')
  const positions = await pool.query('SELECT id::text, position FROM events WHERE id = ANY($1)', [[quick]])
  t.equal(positions.rowCount, 1, 'the later position is committed')
  let page = await feed(`after=${enc(cursor)}`)
  t.same(page.items, [], 'while the earlier transaction runs, the later event waits too')
  cursor = page.nextCursor
  await a.query('COMMIT')
  await settled()
  page = await feed(`after=${enc(cursor)}`)
  t.same(
    page.items.map((e) => e.id),
    [held, quick],
    'then both come, the held one first'
  )

  // The other order of events: B's transaction has its id first, A writes the earlier position, B the later one and commits.
  cursor = page.nextCursor
  await b.query('BEGIN')
  await b.query('SELECT pg_current_xact_id()')
  await a.query('BEGIN')
  const early = (await insertEvent(a)).rows[0].id
  const late = (await insertEvent(b)).rows[0].id
  await b.query('COMMIT')
  const order = await a.query('SELECT id::text FROM events WHERE id = ANY($1) ORDER BY position', [[early, late]])
  t.same(
    order.rows.map((r) => r.id),
    [early, late],
    "A's event has the lower position"
  )
  // Readable once every transaction that began before B's ended, but A's, which began after B took its id.
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 25))) {
    page = await feed(`after=${enc(cursor)}`)
    if (page.items.length) break
  }
  t.same(
    page.items.map((e) => e.id),
    [late],
    "B's committed event is read while A's is in flight"
  )
  cursor = page.nextCursor
  await a.query('COMMIT')
  await settled()
  page = await feed(`after=${enc(cursor)}`)
  t.same(
    page.items.map((e) => e.id),
    [early],
    "and A's, with its lower position, is not skipped once it commits"
  )
})

t.test('paging stays exact while events arrive concurrently', async (t) => {
  const since = await tail()
  const writers = Array.from({ length: 4 }, async (_, w) => {
    const ids: string[] = []
    for (let i = 0; i < 6; i++) ids.push((await create({ title: `concurrent ${w}-${i}` })).id)
    return ids
  })
  const seen: any[] = []
  let cursor = since
  const done = Promise.all(writers)
  let finished = false
  // Awaited below (the loop reads pages until it settles); a writer's failure fails that await.
  void done.then(() => (finished = true))
  while (!finished) {
    const page = await feed(`after=${enc(cursor)}&limit=3`)
    seen.push(...page.items)
    cursor = page.nextCursor
  }
  const rest = await readSettled(cursor, 3)
  seen.push(...rest.items)
  const ids = (await done).flat()
  t.equal(seen.length, ids.length, 'as many events as records created')
  t.same(new Set(seen.map((e) => e.subject.id)), new Set(ids), 'each record once')
  const stored = await pool.query("SELECT id::text FROM events WHERE tenant_id = 'acme' AND subject_id = ANY($1)", [
    ids
  ])
  t.same(new Set(seen.map((e) => e.id)), new Set(stored.rows.map((r) => r.id)), 'exactly the stored events')
})

t.test("another tenant's events never appear, and its cursor is refused", async (t) => {
  const acme = await create({ title: 'acme only' })
  const globex = await create({ title: 'globex only' }, server.keys.globex)
  const { items, cursor } = await readSettled(undefined, 50, '', server.keys.globex, 'globex')
  t.ok(items.length > 0)
  t.ok(
    items.every((e) => e.tenantId === 'globex'),
    'only globex events'
  )
  t.notOk(items.some((e) => e.subject.id === acme.id))
  t.ok(items.some((e) => e.subject.id === globex.id))
  const r = await server.request('GET', `/api/v1/events?after=${enc(cursor)}`)
  t.equal(r.status, 400, "acme may not page with globex's cursor")
  t.equal(r.body.code, 'cursor.invalid')
})

t.test('the types and moduleKey filters keep only the events asked for', async (t) => {
  const since = await tail()
  const r = await create({ title: 'filtered' })
  await server.request('PATCH', `/api/v1/records/${r.id}`, { body: { payload: { site: 'York' } } })
  const action = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'corrective-action', payload: { title: 'Fix it', incident: r.id, kind: 'corrective' } }
  })
  t.equal(action.status, 201)
  await settled()
  t.same(
    (await feed(`after=${enc(since)}&types=record.updated`)).items.map((e) => e.subject.id),
    [r.id]
  )
  t.same(
    (await feed(`after=${enc(since)}&types=record.updated,record.created`)).items.map((e) => e.type),
    ['record.created', 'record.updated', 'record.created']
  )
  t.same(
    (await feed(`after=${enc(since)}&moduleKey=corrective-action`)).items.map((e) => e.subject.id),
    [action.body.id]
  )
  const bad = await server.request('GET', '/api/v1/events?types=record.exploded')
  t.equal(bad.status, 400)
  t.equal(bad.body.errors[0].field, 'types')
  t.equal((await server.request('GET', '/api/v1/events?moduleKey=no-such-module')).status, 404)
  t.equal((await server.request('GET', '/api/v1/events?after=garbage.cursor')).status, 400)
})

t.test(
  'each event needs the read right on its subject: row rules, hidden fields, identity events for admins',
  async (t) => {
    const since = await tail()
    const reporter = await userWithToken(server, 'acme', ['reporter'])
    const auditor = await userWithToken(server, 'acme', ['auditor'])
    const admin = await userWithToken(server, 'acme', ['admin'])
    const mine = await create({ title: 'reported by the reporter' }, reporter.token)
    const other = await create({ title: 'reported by the key' })
    t.equal(
      (
        await server.request('PATCH', `/api/v1/records/${other.id}`, {
          body: { payload: { medicalDetails: 'Sprained wrist', site: 'Hull' } }
        })
      ).status,
      200
    )

    const asReporter = (await readSettled(since, 100, '', reporter.token)).items
    t.same(
      asReporter.map((e) => e.subject.id),
      [mine.id],
      'the reporter sees the events of its own records only'
    )
    const asAuditor = (await readAll(since, 100, '', auditor.token)).items
    t.same(
      asAuditor.map((e) => e.type),
      ['record.created', 'record.created', 'record.updated'],
      'no user events for a non-admin'
    )
    t.same(asAuditor[2].data.changedFields, ['site'], 'a field the auditor may not read is left out of changedFields')
    const asKey = (await readAll(since)).items
    t.same(asKey.find((e) => e.type === 'record.updated').data.changedFields.sort(), ['medicalDetails', 'site'])
    t.same(
      asKey.filter((e) => e.type === 'user.provisioned').map((e) => e.subject),
      [reporter.id, auditor.id, admin.id].map((id) => ({ type: 'user', id })),
      'the tenant key sees user events'
    )
    const asAdmin = (await readAll(since, 100, '', admin.token)).items
    t.same(asAdmin.filter((e) => e.type === 'user.provisioned').length, 3, 'and so does an admin')

    const nobody = await userWithToken(server, 'acme', [])
    const refused = await server.request('GET', '/api/v1/events', { token: nobody.token })
    t.equal(refused.status, 403, 'a user who may read no module and is no admin is refused')
    t.equal(refused.body.code, 'permission.denied')
    const scoped = await userWithToken(server, 'acme', ['auditor'], { scopes: ['records:read'] })
    const noScope = await server.request('GET', '/api/v1/events', { token: scoped.token })
    t.equal(noScope.status, 403, 'a token without events:read is refused')
    t.equal(noScope.body.code, 'scope.missing')
    const withScope = await userWithToken(server, 'acme', ['auditor'], { scopes: ['records:read', 'events:read'] })
    t.equal((await server.request('GET', '/api/v1/events', { token: withScope.token })).status, 200)
    t.equal(
      (await server.request('GET', '/api/v1/events?moduleKey=corrective-action', { token: reporter.token })).status,
      403,
      'a module the caller may not read is 403'
    )
  }
)

t.test('the retention job removes old events, and a cursor before them is 410 Gone', async (t) => {
  const first = await feed('limit=1')
  const start = first.nextCursor
  const keep = await create({ title: 'kept' })
  // An identity change: the identity log's audit trail, which the retention leaves.
  const auditor = await server.platform.users.create('acme', {
    userName: 'retention.auditor',
    password: 'correct horse battery staple',
    roles: ['auditor']
  })
  // The identity log shows the change once it is under the cluster's visibility horizon (another test file's open transaction holds it back).
  await eventsSettled(pool)
  const identity = (
    await pool.query(
      "SELECT count(*)::int AS n FROM events WHERE tenant_id = 'acme' AND (type LIKE 'user.%' OR type LIKE 'group.%')"
    )
  ).rows[0].n
  t.ok(identity >= 1, `${identity} identity events`)
  const { rows } = await pool.query(
    "SELECT count(*)::int AS n FROM events WHERE tenant_id = 'acme' AND subject_id IS DISTINCT FROM $1 AND NOT (type LIKE 'user.%' OR type LIKE 'group.%')",
    [keep.id]
  )
  await pool.query(
    "UPDATE events SET occurred_at = now() - interval '31 days' WHERE tenant_id = 'acme' AND subject_id IS DISTINCT FROM $1",
    [keep.id]
  )
  const globexBefore = (await pool.query("SELECT count(*)::int AS n FROM events WHERE tenant_id = 'globex'")).rows[0].n
  const job = eventsFeedPlugin.jobs!(server.running.app).find((j) => j.name === 'events.purge')!
  t.equal(server.platform.config.events.retentionDays, 30)
  const result = (await job.run({}, { touch: async () => undefined, signal: new AbortController().signal })) as {
    removed: number
  }
  t.equal(result.removed, rows[0].n, 'every event older than 30 days was removed')
  t.same(
    (
      await pool.query(
        "SELECT subject_id FROM events WHERE tenant_id = 'acme' AND NOT (type LIKE 'user.%' OR type LIKE 'group.%')"
      )
    ).rows.map((r) => r.subject_id),
    [keep.id],
    'the newer one is kept'
  )
  t.equal(
    (
      await pool.query(
        "SELECT count(*)::int AS n FROM events WHERE tenant_id = 'acme' AND (type LIKE 'user.%' OR type LIKE 'group.%')"
      )
    ).rows[0].n,
    identity,
    'identity events stay, however old'
  )
  const log = await server.request('GET', `/api/v1/identity-log?subjectId=${auditor.id}`)
  t.equal(log.status, 200)
  t.same(
    log.body.items.map((e: any) => e.type),
    ['user.provisioned'],
    'the identity log still shows the old change'
  )
  t.equal(
    (await pool.query("SELECT count(*)::int AS n FROM events WHERE tenant_id = 'globex'")).rows[0].n,
    globexBefore,
    "another tenant's recent events are kept"
  )

  const gone = await server.request('GET', `/api/v1/events?after=${enc(start)}`)
  t.equal(gone.status, 410, 'a cursor whose following events were removed is Gone')
  t.equal(gone.body.code, 'events.cursor_expired')
  t.match(gone.body.detail, /30-day retention/)
  await settled()
  const fresh = await feed()
  t.same(
    fresh.items.map((e) => e.subject.id),
    [keep.id],
    'without a cursor the feed starts at the oldest event kept'
  )
  t.equal(
    (await server.request('GET', `/api/v1/events?after=${enc(fresh.nextCursor)}`)).status,
    200,
    'and its cursor is good'
  )
  t.equal(
    ((await job.run({}, { touch: async () => undefined, signal: new AbortController().signal })) as { removed: number })
      .removed,
    0,
    'a second run removes nothing'
  )
  const again = await feed('limit=1')
  t.equal((await server.request('GET', `/api/v1/events?after=${enc(again.nextCursor)}`)).status, 200)
})

t.test("a long transaction of another database does not hold back this database's events", async (t) => {
  // A transaction with an id, held open on another database of the same server (the suite's own database).
  const elsewhere = new pg.Client({ connectionString: databaseUrl.replace(/\/[^/?]+(\?|$)/, '/postgres$1') })
  await elsewhere.connect()
  t.teardown(() => elsewhere.end())
  await elsewhere.query('BEGIN')
  await elsewhere.query('SELECT pg_current_xact_id()')
  try {
    const before = await readAll(undefined)
    const made = await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Seen while another database waits' }) }
    })
    t.equal(made.status, 201)
    const after = await feed(`after=${enc(before.cursor)}`)
    t.ok(
      after.items.some(
        (e) => e.subject?.id === made.body.id || e.data?.id === made.body.id || JSON.stringify(e).includes(made.body.id)
      ),
      'the event is in the feed while the other database’s transaction still runs'
    )
  } finally {
    await elsewhere.query('ROLLBACK')
  }
  // One of this database's own running transactions still holds the horizon: an event is never passed over.
  const own = await pool.connect()
  try {
    await own.query('BEGIN')
    await own.query('SELECT pg_current_xact_id()')
    const before = await readAll(undefined)
    const made = await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Held by a transaction of this database' }) }
    })
    const held = await feed(`after=${enc(before.cursor)}`)
    t.notOk(
      JSON.stringify(held.items).includes(made.body.id),
      'an event after a running transaction of this database waits'
    )
    await own.query('ROLLBACK')
    const free = await readAll(before.cursor)
    t.ok(JSON.stringify(free.items).includes(made.body.id), 'and comes once it has ended')
  } finally {
    own.release()
  }
})
