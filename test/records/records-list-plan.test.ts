import pg from 'pg'
import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

// Enough rows that a generic plan with an unknown LIMIT (the planner guesses a tenth of them) looks dearer than a
// page's custom plan, as in any tenant with more than a few pages of records.
await server.platform.db.system.query(
  `INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by)
   SELECT 'acme', 'incident', '1.0.0', 'PLAN-' || g, 'reported', jsonb_build_object('title', 'Incident ' || g),
          '{"type":"system","id":"plan-test","name":"plan test"}', '{"type":"system","id":"plan-test","name":"plan test"}'
     FROM generate_series(1, 20000) g`
)
// As the database user (the tables' owner): the app's role may not ANALYZE them, and without statistics the planner's
// guesses hide the difference.
const owner = new pg.Client({ connectionString: server.platform.db.url })
await owner.connect()
await owner.query('ANALYZE records')
await owner.end()

t.test('a page of the list is planned once per connection, not once per page', async (t) => {
  for (let i = 0; i < 12; i++) {
    // The default page size: the usual sizes are written into the statement (another size stays bound).
    const res = await server.request('GET', '/api/v1/records?moduleKey=incident')
    t.equal(res.status, 200)
    t.equal(res.body.items.length, server.platform.config.pagination.defaultLimit)
  }
  // Prepared statements belong to a connection: ask every idle one of the pool (the pages ran on these).
  const pool = server.platform.db.system
  const clients = await Promise.all(Array.from({ length: pool.idleCount }, () => pool.connect()))
  const rows: Array<{ generic: number; custom: number }> = []
  for (const client of clients) {
    const found = await client.query<{ generic: number; custom: number }>(
      `SELECT generic_plans AS generic, custom_plans AS custom FROM pg_prepared_statements
        WHERE statement LIKE '%from "records" as "r"%order by "r"."seq" asc limit %'
          AND generic_plans + custom_plans > 0`
    )
    rows.push(...found.rows)
    client.release()
  }
  // The pool usually hands the same idle connection to one request after another, but other work (a credential's
  // last-used touch) may take it for a moment: a page then runs on another connection, which prepares it too.
  const seen = JSON.stringify(rows)
  t.equal(
    rows.reduce((n, r) => n + r.generic + r.custom, 0),
    12,
    `the twelve pages, on the connections that ran them: ${seen}`
  )
  const busiest = rows.reduce((a, b) => (a.generic + a.custom >= b.generic + b.custom ? a : b))
  t.ok(busiest.generic + busiest.custom >= 6, `one connection ran six pages or more: ${seen}`)
  t.ok(busiest.generic >= busiest.generic + busiest.custom - 5, `its generic plan was reused (${seen})`)
  for (const r of rows)
    t.ok(r.custom <= 5, `no connection planned more than the five custom plans PostgreSQL tries first (${seen})`)
})

t.test('a page size is a statement of its own, so each size returns its own number of records', async (t) => {
  for (const limit of [1, 7, 20, 200]) {
    const res = await server.request('GET', `/api/v1/records?moduleKey=incident&limit=${limit}`)
    t.equal(res.status, 200)
    t.equal(res.body.items.length, limit, `limit=${limit}`)
    t.type(res.body.nextCursor, 'string')
  }
})

t.test(
  'a page size a client chooses stays bound, so each size does not spend a named statement of its own',
  async (t) => {
    for (const limit of [7, 13]) {
      const res = await server.request('GET', `/api/v1/records?moduleKey=incident&limit=${limit}`)
      t.equal(res.body.items.length, limit)
    }
    const pool = server.platform.db.system
    const clients = await Promise.all(Array.from({ length: pool.idleCount }, () => pool.connect()))
    const statements: string[] = []
    for (const client of clients) {
      const found = await client.query<{ statement: string }>(
        `SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%from "records" as "r"%order by "r"."seq" asc limit %'`
      )
      statements.push(...found.rows.map((r) => r.statement))
      client.release()
    }
    t.notOk(
      statements.some((s) => / limit (8|14)$/.test(s)),
      'no statement with the sizes written in'
    )
    t.ok(
      statements.some((s) => / limit \$\d+$/.test(s)),
      'the page ran as a statement with its limit bound'
    )
  }
)

t.test('a filtered page is planned with its own values: no generic plan is kept for it', async (t) => {
  // A generic plan settled on after common values would read the whole module for a rare one.
  for (let i = 0; i < 8; i++) {
    const res = await server.request(
      'GET',
      `/api/v1/records?moduleKey=incident&payload[severity]=${i < 7 ? 'high' : 'low'}`
    )
    t.equal(res.status, 200)
  }
  const pool = server.platform.db.system
  const clients = await Promise.all(Array.from({ length: pool.idleCount }, () => pool.connect()))
  let kept = 0
  for (const client of clients) {
    const found = await client.query(
      `SELECT 1 FROM pg_prepared_statements WHERE statement LIKE '%payload->>''severity''%'`
    )
    kept += found.rowCount ?? 0
    client.release()
  }
  t.equal(kept, 0, 'no prepared statement holds the filter')
  const plain = await server.request('GET', '/api/v1/records?moduleKey=incident')
  t.equal(plain.status, 200, 'the unfiltered page is still a named statement (the test above)')
})
