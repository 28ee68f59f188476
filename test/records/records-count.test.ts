import pg from 'pg'
import t from '../helpers/tap.ts'
import { userWithToken } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * `count=true` (GraphQL: `count` on a connection) counts what the filters select as the caller may see it: exact up
 * to 10,000 records by reading at most one more, the planner's estimate above, and the answer says which.
 */
const server = await startTestServer()
t.teardown(() => server.close())
const reporter = await userWithToken(server, 'acme', ['reporter'])

for (let i = 0; i < 5; i++) {
  const res = await server.request('POST', '/api/v1/records', {
    token: i < 2 ? reporter.token : undefined,
    body: { moduleKey: 'incident', payload: incidentPayload({ severity: i % 2 ? 'high' : 'low' }) }
  })
  if (res.status !== 201) throw new Error(`setup: ${res.status} ${res.text}`)
}

t.test('a list counts the records its filters select, the whole list whatever the cursor', async (t) => {
  const all = await server.request('GET', '/api/v1/records?moduleKey=incident&limit=2&count=true')
  t.same(all.body.count, { value: 5, exact: true })
  t.equal(all.body.items.length, 2)
  const next = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&limit=2&count=true&cursor=${encodeURIComponent(all.body.nextCursor)}`
  )
  t.same(next.body.count, { value: 5, exact: true }, 'the same count on the next page')
  const high = await server.request('GET', '/api/v1/records?moduleKey=incident&count=true&payload[severity]=high')
  t.same(high.body.count, { value: 2, exact: true })
  const plain = await server.request('GET', '/api/v1/records?moduleKey=incident')
  t.notOk('count' in plain.body, 'not counted unless asked')
  const bad = await server.request('GET', '/api/v1/records?moduleKey=incident&count=many')
  t.equal(bad.status, 400)
  t.match(bad.text, /count/)
})

t.test("a count sees only the caller's rows: a reporter counts the records they reported", async (t) => {
  const mine = await server.request('GET', '/api/v1/records?moduleKey=incident&count=true', { token: reporter.token })
  t.same(mine.body.count, { value: 2, exact: true })
})

t.test('GraphQL counts when count is selected', async (t) => {
  const res = await server.request('POST', '/api/graphql', {
    body: {
      query: '{ incidents(first: 1, filter: { severity: { eq: HIGH } }) { count { value exact } nodes { id } } }'
    }
  })
  t.notOk(res.body.errors, JSON.stringify(res.body.errors))
  t.same(res.body.data.incidents.count, { value: 2, exact: true })
})

t.test('above 10,000 the count is an estimate, never below what was counted, and says so', async (t) => {
  await server.platform.db.system.query(
    `INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by)
     SELECT r.tenant_id, r.module_key, r.module_version, 'BULK-' || g, r.state, r.payload, r.created_by, r.updated_by
       FROM (SELECT * FROM records WHERE tenant_id = 'acme' AND module_key = 'incident' AND payload->>'severity' = 'low' LIMIT 1) r, generate_series(1, 10050) g`
  )
  await server.platform.db.system.query('ANALYZE records')
  const res = await server.request('GET', '/api/v1/records?moduleKey=incident&limit=1&count=true')
  t.equal(res.body.count.exact, false)
  t.ok(res.body.count.value > 10_000, `estimated ${res.body.count.value}`)
  const few = await server.request('GET', '/api/v1/records?moduleKey=incident&count=true&payload[severity]=high')
  t.same(few.body.count, { value: 2, exact: true }, 'a selective filter still counts exactly')
})

t.test(
  'the estimate is of the tenant’s records, not a fraction of them: row-level security is not counted twice',
  async (t) => {
    // 60,000 more of acme's incidents and as many of globex's: the planner sees two tenants, so the policy's condition
    // alone keeps half of the table in its eyes, and an estimate that took it for another filter would say half.
    for (const tenant of ['acme', 'globex'])
      await server.platform.db.system.query(
        `INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by)
       SELECT $1, 'incident', '1.0.0', 'EST-' || g, 'reported', jsonb_build_object('title', 'Estimate ' || g),
              '{"type":"system","id":"t","name":"t"}', '{"type":"system","id":"t","name":"t"}'
         FROM generate_series(1, 60000) g`,
        [tenant]
      )
    // As the tables' owner: the app's role may not ANALYZE them.
    const owner = new pg.Client({ connectionString: server.platform.db.url })
    await owner.connect()
    await owner.query('ANALYZE records')
    const { rows } = await owner.query(
      `SELECT count(*)::int AS n FROM records WHERE tenant_id = 'acme' AND module_key = 'incident' AND deleted_at IS NULL`
    )
    await owner.end()
    const res = await server.request('GET', '/api/v1/records?moduleKey=incident&limit=1&count=true')
    t.equal(res.body.count.exact, false)
    const ratio = res.body.count.value / rows[0].n
    t.ok(ratio > 0.75 && ratio < 1.33, `estimated ${res.body.count.value} of ${rows[0].n} (${ratio.toFixed(2)})`)
  }
)

t.test('a GraphQL count is charged in the operation cost as the statement it is', async (t) => {
  const aliases = (selection: string) =>
    `{ ${Array.from({ length: 60 }, (_, i) => `a${i}: incidents(first: 1) { ${selection} }`).join(' ')} }`
  const plain = await server.request('POST', '/api/graphql', { body: { query: aliases('nodes { id }') } })
  t.notOk(plain.body.errors, '60 pages are within the cost limit')
  const counted = await server.request('POST', '/api/graphql', {
    body: { query: aliases('nodes { id } count { value exact }') }
  })
  // application/json answers a refused operation with 200 and its errors (GraphQL over HTTP).
  t.match(counted.body.errors?.[0]?.extensions, { code: 'graphql.too_costly' }, 'with a count each, they are not')
  t.notOk('data' in counted.body, 'nothing ran')
})
