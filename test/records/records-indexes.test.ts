import pg from 'pg'
import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { records } from '../helpers/cli.ts'
import { searchDocument, searchOf } from '../../plugins/records/records.search.ts'
import {
  declaredIndexes,
  indexStates,
  IndexClient,
  installedModules,
  reconcileIndexes,
  statisticsName,
  type IndexBuilder
} from '../../plugins/records/records.indexes.ts'

/**
 * The indexes modules declare: built by the service in the background, CONCURRENTLY (writes go on), rebuilt when a
 * build did not finish, dropped when no module declares them any more, and used by the list filters and sorts.
 */
const server = await startTestServer()
t.teardown(() => server.close())
const builder = server.running.app.get('background')!.find((b) => 'pass' in b) as IndexBuilder
const declared = () => declaredIndexes(installedModules(server.platform.tenants))
const owner = new pg.Client({ connectionString: server.platform.db.url })
await owner.connect()
t.teardown(() => owner.end())

// Enough records that a build takes a while beside the writes below.
await owner.query(
  `INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by, created_at)
   SELECT 'acme', 'incident', '1.0.0', 'IDX-' || g, 'reported',
          jsonb_build_object('title', 'Incident ' || g, 'severity', (ARRAY['low','medium','high','critical'])[1 + g % 4],
                             'occurredAt', to_char(timestamp '2026-01-01' + make_interval(mins => g), 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
          '{"type":"system","id":"t","name":"t"}', '{"type":"system","id":"t","name":"t"}',
          timestamptz '2026-01-01T00:00:00Z' + make_interval(mins => g)
     FROM generate_series(1, 60000) g`
)
// And five rare ones, which a filter finds through its index rather than by reading the module in page order.
await owner.query(
  `INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by)
   SELECT 'acme', 'incident', '1.0.0', 'RARE-' || g, 'reported',
          jsonb_build_object('title', 'Spill at the Zürich depot', 'severity', 'high', 'site', 'Rare Site',
                             'bodyParts', jsonb_build_array('internal'), 'occurredAt', '2031-05-0' || g || 'T08:00:00Z'),
          '{"type":"system","id":"t","name":"t"}', '{"type":"system","id":"t","name":"t"}'
     FROM generate_series(1, 5) g`
)
await owner.query('ANALYZE records')

const severityIndex = () => declared().find((d) => d.serves.includes('incident.severity filter'))!

t.test('every index the modules and the platform declare is built at start and ready', async (t) => {
  const states = await indexStates(owner, declared())
  t.ok(states.length >= 8, `${states.length} declared`)
  t.same(
    states.filter((s) => s.state !== 'ready'),
    [],
    'all ready'
  )
  t.ok(
    states.some((s) => s.serves.includes('incident search')),
    'a search index for the incident text'
  )
  const cli = await records(['indexes', 'list'], { config: { database: { url: server.platform.db.url } } })
  t.equal(cli.code, 0, cli.stderr)
  t.match(cli.stdout, /records_q_\w+\tready\t.*incident\.severity filter/)
})

t.test(
  "a module's indexes hold its own records: 60,000 incidents leave the other modules' indexes empty",
  async (t) => {
    // Each module's index is partial on its module: an incident's insert maintains the incident's indexes and no other
    // module's (a shared index was maintained by every record of every module, its search text computed over the
    // incident's fields). Sizes, not plans: an empty index is a page or three, one with 60,000 entries hundreds.
    const sizes = await owner.query<{ name: string; pages: number }>(
      `SELECT c.relname AS name, pg_relation_size(c.oid) / current_setting('block_size')::int AS pages
       FROM pg_class c WHERE c.relname = ANY($1)`,
      [declared().map((d) => d.name)]
    )
    const pages = new Map(sizes.rows.map((r) => [r.name, Number(r.pages)]))
    const others = declared().filter((d) =>
      d.serves.every((s) => !s.startsWith('incident') && !/^(sort|createdAt|number|createdBy)/.test(s))
    )
    t.ok(others.length >= 6, `${others.length} indexes of the corrective action and the inspection`)
    for (const d of others) t.ok((pages.get(d.name) ?? 0) <= 4, `${d.serves.join(', ')}: ${pages.get(d.name)} pages`)
    const severity = severityIndex()
    t.ok((pages.get(severity.name) ?? 0) > 100, `incident.severity: ${pages.get(severity.name)} pages`)
  }
)

t.test('under row-level security, a filter, a sort and a search on declared fields read their index', async (t) => {
  // Through the app's own pool and role, where the tenant policy applies: PostgreSQL uses a condition as an index
  // condition only when the functions it applies to the row are leakproof (records migration 005).
  const cases: Array<[string, string]> = [
    [`(payload->>'severity') = 'high'`, 'r.seq'],
    [`(payload->>'site') IN ('Rare Site', 'Nowhere')`, 'r.seq'],
    [`records_timestamptz(payload->>'occurredAt') >= '2031-01-01T00:00:00Z'`, 'r.seq'],
    [
      `records_timestamptz(payload->>'occurredAt') IS NOT NULL`,
      `records_timestamptz(payload->>'occurredAt') DESC, r.seq DESC`
    ],
    [`lower(r.number) = 'idx-77'`, 'r.seq'],
    [`(payload->'bodyParts') @> '["internal"]'::jsonb`, 'r.seq'],
    [
      `${searchDocument(server.platform.tenants.module('acme', 'incident'))!} @@ to_tsquery('simple', 'zurich:*')`,
      'r.seq'
    ]
  ]
  for (const [where, order] of cases) {
    const { rows } = await server.platform.db.system.query(
      `EXPLAIN SELECT r.id FROM records r WHERE r.tenant_id = 'acme' AND r.module_key = 'incident' AND r.deleted_at IS NULL AND (${where}) ORDER BY ${order} LIMIT 51`
    )
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n')
    t.match(
      plan,
      /Index (Only )?Scan (Backward )?using records_q_\w+|Bitmap Index Scan on records_q_\w+/,
      `${where}\n${plan}`
    )
  }
})

t.test('a rare value is found through its index in a few pages, not by reading the tenant’s entries', async (t) => {
  // Five incidents of 60,000 at the rare site: the index bounds its scan by tenant and value, so it reads a few pages
  // of the index and the five records. (A module column after the tenant, whose condition the partial index's
  // predicate takes out of the index conditions, left the scan bounded by the tenant alone: hundreds of pages.)
  const { rows } = await owner.query(
    `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT r.id FROM records r
      WHERE r.tenant_id = 'acme' AND r.module_key = 'incident' AND r.deleted_at IS NULL AND (payload->>'site') = 'Rare Site'
      ORDER BY r.seq LIMIT 51`
  )
  const plan = rows.map((r) => r['QUERY PLAN']).join('\n')
  t.match(plan, /Index Cond: .*'Rare Site'/, `the value bounds the scan\n${plan}`)
  const pages = Number(
    /Buffers: shared hit=(\d+)(?: read=(\d+))?/
      .exec(plan)
      ?.slice(1)
      .reduce((a, b) => a + Number(b ?? 0), 0)
  )
  t.ok(pages > 0 && pages <= 20, `${pages} pages read\n${plan}`)
})

t.test(
  'a range in creation order passes over the records before it inside an index, reading none of them',
  async (t) => {
    // The newest 6 % of the 60,000 by occurrence and by creation: in creation order, a walk by seq that read each record
    // to test the range would read the 56,400 before it (0.6-0.9 s at a million); the index of (seq, value) tests the
    // value as it passes and reads only the page.
    for (const where of [
      `records_timestamptz(payload->>'occurredAt') >= '2026-02-09T00:00:00Z'`,
      `r.created_at >= '2026-02-09T00:00:00Z' AND r.created_at < '2026-02-12T00:00:00Z'`
    ]) {
      const { rows } = await server.platform.db.system.query(
        `EXPLAIN (ANALYZE, COSTS OFF) SELECT r.id FROM records r WHERE r.tenant_id = 'acme' AND r.module_key = 'incident' AND r.deleted_at IS NULL AND ${where} ORDER BY r.seq LIMIT 51`
      )
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n')
      t.match(plan, /Index Cond: .*(records_timestamptz|created_at)/, `the range is an index condition\n${plan}`)
      const removed = Number(/Rows Removed by Filter: (\d+)/.exec(plan)?.[1] ?? 0)
      t.ok(removed < 100, `${removed} records read and passed over\n${plan}`)
    }
    const listed = await server.request(
      'GET',
      '/api/v1/records?moduleKey=incident&createdSince=2026-02-09T00:00:00Z&createdBefore=2026-02-12T00:00:00Z&limit=5'
    )
    t.equal(listed.status, 200, listed.text)
    t.same(
      listed.body.items.map((r: { number: string }) => r.number),
      ['IDX-56160', 'IDX-56161', 'IDX-56162', 'IDX-56163', 'IDX-56164'],
      'the first records of the range, in creation order'
    )
  }
)

t.test(
  'a list in creation order with a range and another filter starts where the first record in the range stands',
  async (t) => {
    const base =
      '/api/v1/records?moduleKey=incident&payload[severity]=critical&payload[occurredAt][gte]=2026-02-09T00:00:00Z'
    const first = await server.request('GET', `${base}&limit=2`)
    t.equal(first.status, 200, first.text)
    t.same(
      first.body.items.map((r: { number: string }) => r.number),
      ['IDX-56163', 'IDX-56167'],
      'the first critical incidents in the range'
    )
    const next = await server.request('GET', `${base}&limit=2&cursor=${first.body.nextCursor}`)
    t.same(
      next.body.items.map((r: { number: string }) => r.number),
      ['IDX-56171', 'IDX-56175'],
      'and the next ones after the cursor'
    )
    const none = await server.request(
      'GET',
      '/api/v1/records?moduleKey=incident&payload[severity]=critical&payload[occurredAt][gte]=2040-01-01T00:00:00Z&count=true'
    )
    t.same(
      [none.status, none.body.items, none.body.nextCursor, none.body.count],
      [200, [], null, { value: 0, exact: true }]
    )
    // The start is a statement of its own (the first seq in the range, by the ranges' index), and the page begins there.
    const statements: string[] = []
    const original = pg.Client.prototype.query
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string })?.text
      if (!(this instanceof IndexClient) && text) statements.push(text)
      return (original as (...a: unknown[]) => unknown).apply(this, args)
    } as typeof original
    try {
      const again = await server.request('GET', `${base}&limit=2`)
      t.same(again.body.items.length, 2)
    } finally {
      pg.Client.prototype.query = original
    }
    t.ok(
      statements.some(
        (s) =>
          /^select "r"\."seq" from "records" as "r" .*records_timestamptz.* order by "r"\."seq" asc limit 1$/.test(s) &&
          !s.includes('severity')
      ),
      `the start is found by the range alone: ${statements.join('\n')}`
    )
    t.ok(
      statements.some((s) => s.includes('severity') && /"r"\."seq" >= \$\d+ order by "r"\."seq" asc/.test(s)),
      'the page starts from it'
    )
  }
)

t.test(
  'a search walks the records in page order for a word many hold, and reads the matches of a rare word through its index',
  async (t) => {
    // The builder reads the most common words of each search text from the statistics ANALYZE gathers.
    await builder.pass()
    const service = server.running.app.service('api/v1/records')
    const incident = server.platform.tenants.module('acme', 'incident')
    t.equal(service.words.plan(searchOf('Incident', incident)!), 'walk', 'every record says "Incident"')
    t.equal(service.words.plan(searchOf('inci', incident)!), 'walk', 'and as a prefix')
    t.equal(service.words.plan(searchOf('zurich', incident)!), 'match', 'five say "Zürich"')
    t.equal(service.words.plan(searchOf('incident zurich', incident)!), 'match', 'both words: five')
    const common = await server.request('GET', '/api/v1/records?moduleKey=incident&q=INCIDENT&limit=3')
    t.equal(common.status, 200, common.text)
    t.same(
      common.body.items.map((r: { number: string }) => r.number),
      ['IDX-1', 'IDX-2', 'IDX-3'],
      'the first matches in creation order'
    )
    const next = await server.request(
      'GET',
      `/api/v1/records?moduleKey=incident&q=INCIDENT&limit=3&cursor=${common.body.nextCursor}`
    )
    t.same(
      next.body.items.map((r: { number: string }) => r.number),
      ['IDX-4', 'IDX-5', 'IDX-6'],
      'and the next page after them'
    )
    const rare = await server.request('GET', '/api/v1/records?moduleKey=incident&q=zurich')
    t.same(
      rare.body.items.map((r: { number: string }) => r.number),
      ['RARE-1', 'RARE-2', 'RARE-3', 'RARE-4', 'RARE-5']
    )
  }
)

t.test('an index is built beside writes that go on, and loses none of them', async (t) => {
  const index = severityIndex()
  await owner.query(`DROP INDEX ${index.name}`)
  let writing = true
  const latencies: number[] = []
  const ids: string[] = []
  const writer = (async () => {
    while (writing) {
      const started = Date.now()
      const res = await server.request('POST', '/api/v1/records', {
        body: { moduleKey: 'incident', payload: incidentPayload({ severity: 'critical' }) }
      })
      latencies.push(Date.now() - started)
      if (res.status !== 201) throw new Error(`write: ${res.status} ${res.text}`)
      ids.push(res.body.id)
    }
  })()
  await new Promise((r) => setTimeout(r, 100))
  const pass = await builder.pass()
  writing = false
  await writer
  t.same(pass?.built, [index.name], 'built again')
  t.ok(ids.length > 0, `${ids.length} records written during the build`)
  const slowest = Math.max(...latencies)
  // A blocked write would wait for the whole build; under CONCURRENTLY each waits at most for a moment.
  t.ok(slowest < 2000, `the slowest write took ${slowest} ms`)
  const valid = await owner.query(`SELECT indisvalid FROM pg_index WHERE indexrelid = $1::regclass`, [index.name])
  t.same(valid.rows, [{ indisvalid: true }])
  // Statistics of the expression, which only ANALYZE after the build gathers: without them a rare value looks common.
  const stats = await owner.query(
    `SELECT most_common_vals IS NOT NULL AS known FROM pg_stats_ext_exprs WHERE statistics_name = $1`,
    [statisticsName(index.expression!)]
  )
  t.same(stats.rows, [{ known: true }], 'the planner knows the values the index holds')
  // The index holds every row: through it (the list), and without it (a scan of the payload as written).
  await owner.query('SET enable_seqscan = off')
  const viaIndex = await owner.query(
    `SELECT count(*)::int AS n FROM records WHERE tenant_id = 'acme' AND module_key = 'incident' AND deleted_at IS NULL AND (payload->>'severity') = 'critical'`
  )
  await owner.query('RESET enable_seqscan')
  const scanned = await owner.query(
    `SELECT count(*)::int AS n FROM records WHERE tenant_id = 'acme' AND module_key = 'incident' AND deleted_at IS NULL AND payload @> '{"severity":"critical"}'`
  )
  t.equal(viaIndex.rows[0].n, scanned.rows[0].n, `${scanned.rows[0].n} critical incidents either way`)
  const listed = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&payload[severity]=critical&id=${ids.slice(-20).join(',')}&limit=20`
  )
  t.equal(listed.body.items.length, Math.min(20, ids.length), 'the records written during the build are found by it')
})

t.test('a build that did not finish is dropped and built again; an index no module declares is dropped', async (t) => {
  const index = severityIndex()
  // What a crash or a cancel mid-build leaves: the index in the catalogue, marked invalid.
  await owner.query(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1::regclass`, [index.name])
  await owner.query(`CREATE INDEX records_q_0000000000000000 ON records (tenant_id, (payload->>'nothing'))`)
  const before = await indexStates(owner, declared())
  t.match(
    before.find((s) => s.name === index.name),
    { state: 'invalid' }
  )
  t.match(
    before.find((s) => s.name === 'records_q_0000000000000000'),
    { state: 'unused' }
  )
  const pass = await builder.pass()
  t.same(pass?.built, [index.name])
  t.same(pass?.dropped.sort(), [index.name, 'records_q_0000000000000000'].sort())
  const after = await indexStates(owner, declared())
  t.same(
    after.filter((s) => s.state !== 'ready'),
    [],
    'all ready again'
  )
  const ready = await server.request('GET', '/readyz')
  t.equal(ready.status, 200)
  t.notOk(ready.body.degraded?.recordIndexes, 'nothing to report once built')
})

t.test(
  'without leakproof functions readiness says filters are unindexed, and records indexes leakproof mends it',
  async (t) => {
    const plan = async () =>
      (
        await server.platform.db.system.query(
          `EXPLAIN SELECT r.id FROM records r WHERE r.tenant_id = 'acme' AND r.module_key = 'incident' AND r.deleted_at IS NULL AND (payload->>'site') = 'Rare Site' ORDER BY r.seq LIMIT 51`
        )
      ).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n')
    // What a database whose migrations a user that is not a superuser ran looks like.
    await owner.query('ALTER FUNCTION pg_catalog.jsonb_object_field_text(jsonb, text) NOT LEAKPROOF')
    await builder.pass()
    t.match(builder.degraded(), { recordFilters: /unindexed/ })
    t.notMatch(await plan(), /records_q_/, 'the tenant policy comes first: the filter reads the module')
    const cli = await records(['indexes', 'leakproof'], { config: { database: { url: server.platform.db.url } } })
    t.equal(cli.code, 0, cli.stderr)
    t.match(cli.stdout, /declared leakproof/)
    await builder.pass()
    t.equal(builder.degraded(), undefined)
    t.match(await plan(), /records_q_/, 'the filter reads its index again')
  }
)

t.test('readiness names the indexes not ready, and stop cancels a build under way', async (t) => {
  const index = severityIndex()
  await owner.query(`DROP INDEX ${index.name}`)
  const pass = builder.pass()
  // Readiness names it from the moment the pass finds it missing, before the build begins.
  let degraded = builder.degraded()
  for (let i = 0; i < 2000 && !degraded; i++) {
    await new Promise((r) => setTimeout(r, 1))
    degraded = builder.degraded()
  }
  t.match(degraded, { recordIndexes: [{ index: index.name, state: 'missing', serves: index.serves }] })
  const ready = await server.request('GET', '/readyz')
  t.equal(ready.status, 200, 'still ready: lists work, only slower')
  t.match(ready.body.degraded, { recordIndexes: [{ index: index.name }] })
  // Stopping cancels the build under way without waiting for it.
  await builder.stop()
  await pass
  const left = await owner.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE query ILIKE 'CREATE INDEX CONCURRENTLY%' AND datname = current_database()`
  )
  t.equal(left.rows[0].n, 0, 'no build left running')
  const state = (await indexStates(owner, declared())).find((s) => s.name === index.name)
  t.ok(
    ['missing', 'invalid', 'ready'].includes(state!.state),
    `left ${state!.state}: the next start's pass finishes it`
  )
})

t.test(
  'a list searched for a common word is counted from the words’ statistics, not by reading 10,001 matches',
  async (t) => {
    await builder.pass()
    const res = await server.request('GET', '/api/v1/records?moduleKey=incident&q=incident&limit=3&count=true')
    t.equal(res.status, 200, res.text)
    t.equal(res.body.count.exact, false, 'an estimate')
    // Every one of the 60,005 records says "Incident"; the planner alone took any word for 0.5 % of them.
    t.ok(
      res.body.count.value > 50_000 && res.body.count.value < 70_000,
      `near the 60,005 that match (${res.body.count.value})`
    )
    const rare = await server.request('GET', '/api/v1/records?moduleKey=incident&q=zurich&count=true')
    t.same(rare.body.count, { value: 5, exact: true }, 'a rare word is still counted exactly')
  }
)

t.test('a statistics object left without data by a stopped ANALYZE is filled by the next pass', async (t) => {
  const { rows } = await owner.query<{ name: string }>(
    `SELECT stxname AS name FROM pg_statistic_ext
      WHERE stxrelid = 'records'::regclass AND stxname LIKE 'records\\_q\\_%' ORDER BY stxname LIMIT 1`
  )
  t.ok(rows.length, 'the platform keeps statistics objects')
  const { name } = rows[0]
  const def = (
    await owner.query<{ def: string }>(
      `SELECT pg_get_statisticsobjdef(oid) AS def FROM pg_statistic_ext WHERE stxname = $1`,
      [name]
    )
  ).rows[0].def
  await owner.query(`DROP STATISTICS ${name}`)
  await owner.query(def)
  const filled = async () =>
    (
      await owner.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_statistic_ext s JOIN pg_statistic_ext_data d ON d.stxoid = s.oid WHERE s.stxname = $1`,
        [name]
      )
    ).rows[0].n
  t.equal(await filled(), 0, 'made again, as a stopped build leaves it: no data')
  // The builder itself was stopped by an earlier test: its pass, run on a connection of the table's owner.
  const done = await reconcileIndexes(owner, declared())
  t.ok(done.locked, 'the pass ran')
  t.equal(await filled(), 1, 'the next pass analyzed the table')
})
