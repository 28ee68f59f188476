// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import t from '../helpers/tap.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'
import { secureTenantTables } from '../../core/db/row-security.ts'
import { scopeOfClient } from '../../core/db/tenant-scope.ts'

/*
 * Tenancy is the database's rule (core/db/row-security.ts), not each statement's. Every
 * statement the services send while they work for tenant A (acme) is recorded, then run again,
 * word for word with A's parameters, under tenant B's scope (globex) in a transaction rolled
 * back: it must return no row of A's. A statement that names A's tenant in its WHERE is then no
 * different from one that forgot it: the policy decides which rows exist.
 */

const server = await startTestServer({
  jobs: { enabled: true, processEverySeconds: 1 },
  webhooks: { allowedCidrs: ['203.0.113.0/24'] }
})
t.teardown(async () => {
  await server.close()
  // Agenda leaves a referenced timer behind job runs (see test/exports/exports.test.ts).
  setTimeout(() => process.exit(), 200).unref()
})
const A = server.keys.acme
const B = server.keys.globex
const system = server.platform.db.system

interface Statement {
  text: string
  values: unknown[]
}
const recorded = new Map<string, Statement>()
/**
 * Not tenant data: transaction control, settings and notifications; and Agenda's queue, the
 * platform's own table, whose rows carry a job's ids only (CONVENTIONS 6), never a tenant's data.
 */
const control =
  /^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|SET|RESET|LISTEN|UNLISTEN|COPY|DISCARD)\b|"?agenda_jobs"?/i

// Every statement a client pinned to acme sends: the pool's clients are pg Clients, and the pin is what PostgreSQL sees.
const original = pg.Client.prototype.query
pg.Client.prototype.query = function (this: pg.Client, ...args: any[]) {
  if (scopeOfClient(this as pg.PoolClient) === 'acme') {
    const [first, second] = args
    const text: unknown = typeof first === 'string' ? first : first?.text
    const values: unknown = Array.isArray(second) ? second : first?.values
    if (typeof text === 'string' && !control.test(text)) {
      const s = { text, values: Array.isArray(values) ? [...values] : [] }
      recorded.set(`${text}\u0000${JSON.stringify(s.values)}`, s)
    }
  }
  return (original as (...a: unknown[]) => unknown).apply(this, args)
} as typeof pg.Client.prototype.query

/** Every UUID in A's answers: A's records, activity, attachments, exports, tokens, users, groups, webhooks. */
const aIds = new Set<string>()
const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi
async function asA(method: string, path: string, body?: unknown, status?: number): Promise<Reply> {
  const r = await server.request(method, path, { token: A, body })
  if (status !== undefined && r.status !== status)
    throw new Error(`setup: ${method} ${path} answered ${r.status}: ${r.text.slice(0, 300)}`)
  for (const id of r.text.match(uuid) ?? []) aIds.add(id.toLowerCase())
  return r
}

// ---- What B has of its own, so that its scope is not simply empty.
const bInc = await server.request('POST', '/api/v1/records', {
  token: B,
  body: { moduleKey: 'incident', payload: incidentPayload() }
})
if (bInc.status !== 201) throw new Error('setup: B could not create its record')

// ---- A representative run for A: every service's statements.
const inc = (await asA('POST', '/api/v1/records', { moduleKey: 'incident', payload: incidentPayload() }, 201)).body
const inc2 = (
  await asA(
    'POST',
    '/api/v1/records',
    { moduleKey: 'incident', payload: incidentPayload({ title: 'Ammonia release' }), externalRef: 'ACME-1' },
    201
  )
).body
const action = (
  await asA(
    'POST',
    '/api/v1/records',
    { moduleKey: 'corrective-action', payload: { title: 'Fit a leak detector', incident: inc.id, kind: 'preventive' } },
    201
  )
).body
await asA('GET', `/api/v1/records/${inc.id}`, undefined, 200)
await asA('PATCH', `/api/v1/records/${inc.id}`, { payload: { site: 'Hull' } }, 200)
await asA(
  'POST',
  `/api/v1/records/${inc2.id}:transition`,
  { transition: 'start-investigation', payload: { investigationLead: inc.id } },
  200
)
await asA('GET', '/api/v1/records?moduleKey=incident&limit=50', undefined, 200)
await asA('GET', '/api/v1/records?moduleKey=incident&limit=1&state=investigating', undefined, 200)
await asA(
  'GET',
  `/api/v1/records?moduleKey=incident&payload[title]=${encodeURIComponent('Ammonia release')}`,
  undefined,
  200
)
await asA('GET', `/api/v1/audit-log?recordId=${inc.id}`, undefined, 200)
await asA('GET', '/api/v1/audit-log?moduleKey=incident&limit=5', undefined, 200)
await asA('GET', '/api/v1/events?limit=5', undefined, 200)
const loaded = await bulkCall(
  server.url,
  '/api/modules/incident/bulk',
  A,
  ndjson([1, 2, 3].map((i) => ({ externalRef: `ACME-BULK-${i}`, payload: incidentPayload() })))
)
if (loaded.status !== 200) throw new Error('setup: A bulk load failed')
const file = (
  await asA(
    'POST',
    '/api/v1/attachments',
    { recordId: inc.id, fileName: 'photo.txt', contentType: 'text/plain', size: 5 },
    201
  )
).body
if (
  (await fetch(file.upload.url, { method: 'PUT', headers: file.upload.headers, body: Buffer.from('photo') })).status !==
  200
)
  throw new Error('setup: upload failed')
await asA('POST', `/api/v1/attachments/${file.id}:complete`, undefined, 200)
await asA('GET', `/api/v1/attachments/${file.id}`, undefined, 200)
const exported = (await asA('POST', '/api/v1/exports', { moduleKey: 'incident', format: 'csv' }, 202)).body
for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(100)) {
  if ((await asA('GET', `/api/v1/exports/${exported.id}`)).body?.status === 'done') break
}
const hook = (
  await asA(
    'POST',
    '/api/v1/webhooks',
    { url: 'https://203.0.113.10/acme-hooks', kinds: ['webhook.test'], description: 'Acme alerts' },
    201
  )
).body
await asA('GET', `/api/v1/webhooks/${hook.id}`, undefined, 200)
await asA('GET', '/api/v1/webhooks', undefined, 200)
const scimUser = (
  await asA('POST', '/api/scim/v2/Users', { userName: 'lead@acme.example', name: { givenName: 'Lead' } }, 201)
).body
await asA('POST', '/api/scim/v2/Groups', { displayName: 'Acme crew', members: [{ value: scimUser.id }] }, 201)
await asA('GET', `/api/scim/v2/Users?filter=${encodeURIComponent('userName eq "lead@acme.example"')}`, undefined, 200)
await asA('GET', '/api/scim/v2/Groups', undefined, 200)
const token = (await asA('POST', '/api/v1/tokens', { type: 'api-key', name: 'Acme ERP sync' }, 201)).body
await asA('GET', '/api/v1/tokens', undefined, 200)
await asA('DELETE', `/api/v1/tokens/${token.id}`, undefined, 200)
await asA(
  'POST',
  '/api/graphql',
  { query: '{ incidents(first: 5) { edges { node { id number state payload { title } } } } }' },
  200
)
await asA('DELETE', `/api/v1/records/${action.id}`, undefined, 200)
pg.Client.prototype.query = original

const statements = [...recorded.values()]
await t.test('the run for A sent a representative set of statements', async (t) => {
  t.ok(statements.length >= 40, `${statements.length} statements`)
  for (const table of ['records', 'record_activity', 'attachments', 'export_jobs', 'webhook_subscriptions', 'users'])
    t.ok(
      statements.some((s) => s.text.includes(table)),
      `the run touched ${table}`
    )
})

/** Runs one statement as the app's role under `tenant` (or none), in a transaction rolled back; its rows, or the error. */
async function runAs(client: pg.Client, tenant: string, s: Statement) {
  await client.query('BEGIN')
  try {
    await client.query(`SET LOCAL ROLE ${server.platform.config.database.role}`)
    await client.query(`SELECT set_config('records.tenant', $1, true)`, [tenant])
    const { rows } = await client.query(s.text, s.values)
    return { rows: rows.map((r) => JSON.stringify(r)) }
  } catch (err) {
    return { error: (err as Error).message }
  } finally {
    await client.query('ROLLBACK')
  }
}

await t.test("every statement run for A returns none of A's rows under B's scope", async (t) => {
  const client = new pg.Client({ connectionString: server.platform.db.url, options: '-c TimeZone=UTC' })
  await client.connect()
  t.teardown(() => client.end())
  let aRowsSeen = 0
  for (const s of statements) {
    const asAcme = await runAs(client, 'acme', s)
    const asNobody = await runAs(client, '', s)
    const asGlobex = await runAs(client, 'globex', s)
    aRowsSeen += asAcme.rows?.length ?? 0
    // A row of A's under B: one A's scope returns too that no scope at all returns (tenant data, not a constant), or one naming any of A's ids.
    const leaked = (asGlobex.rows ?? []).filter(
      (row) =>
        (asAcme.rows?.includes(row) && !asNobody.rows?.includes(row)) ||
        (row.match(uuid) ?? []).some((id) => aIds.has(id.toLowerCase()))
    )
    t.same(leaked, [], `under B: ${s.text.replace(/\s+/g, ' ').slice(0, 160)}`)
  }
  t.ok(aRowsSeen > 0, "the same statements under A's scope do return A's rows")
})

await t.test('a statement with its tenant condition removed returns nothing outside its tenant', async (t) => {
  const client = new pg.Client({ connectionString: server.platform.db.url })
  await client.connect()
  t.teardown(() => client.end())
  const byId = { text: 'SELECT id, payload FROM records r WHERE r.id = $1 AND r.deleted_at IS NULL', values: [inc.id] }
  t.equal((await runAs(client, 'acme', byId)).rows?.length, 1, "A's scope finds A's record by id alone")
  t.same((await runAs(client, 'globex', byId)).rows, [], "B's scope does not")
  t.same((await runAs(client, '', byId)).rows, [], 'no scope does not')
  const { rows: tables } = await system.query<{ table: string }>(
    `SELECT c.relname AS table FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id'
      JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public' WHERE c.relkind IN ('r', 'p') ORDER BY 1`
  )
  t.ok(tables.length >= 15, `every tenant-owned table is checked (${tables.length})`)
  for (const { table } of tables) {
    const all = { text: `SELECT DISTINCT tenant_id FROM ${table}`, values: [] }
    t.same((await runAs(client, '', all)).rows, [], `${table}: no scope, no rows`)
    const seen = (await runAs(client, 'globex', all)).rows ?? []
    t.ok(
      seen.every((r) => r === JSON.stringify({ tenant_id: 'globex' })),
      `${table}: B's scope shows B's rows only`
    )
    const write = await runAs(client, 'globex', {
      text: `UPDATE ${table} SET tenant_id = tenant_id RETURNING tenant_id`,
      values: []
    })
    t.ok(
      (write.rows ?? []).every((r) => r === JSON.stringify({ tenant_id: 'globex' })),
      `${table}: B's scope updates B's rows only`
    )
  }
})

await t.test("the app's pool acts as a role that row-level security applies to", async (t) => {
  const { rows } = await server.platform.db.pool.query(
    `SELECT current_user AS role, r.rolsuper OR r.rolbypassrls AS bypasses FROM pg_roles r WHERE r.rolname = current_user`
  )
  t.same(rows, [{ role: server.platform.config.database.role, bypasses: false }])
  const { rows: none } = await server.platform.db.pool.query('SELECT count(*)::int AS n FROM records')
  t.same(none, [{ n: 0 }], 'outside any scope the pool sees no record')
  const { rows: every } = await system.query('SELECT count(DISTINCT tenant_id)::int AS n FROM records')
  t.same(every, [{ n: 2 }], "the named system scope sees every tenant's")
})

await t.test('a table a later migration adds is secured by the step after the migrations', async (t) => {
  await system.query(
    'CREATE TABLE plugin_notes (tenant_id text NOT NULL, id int, note text, PRIMARY KEY (tenant_id, id))'
  )
  await system.query(`INSERT INTO plugin_notes VALUES ('acme', 1, 'A'), ('globex', 1, 'B')`)
  const secured = await secureTenantTables(server.platform.db.url, server.platform.config.database.role)
  t.same(secured, ['plugin_notes'], 'only the new table needed it')
  t.same(await secureTenantTables(server.platform.db.url, server.platform.config.database.role), [], 'idempotent')
  const client = new pg.Client({ connectionString: server.platform.db.url })
  await client.connect()
  t.teardown(() => client.end())
  t.same((await runAs(client, 'globex', { text: 'SELECT note FROM plugin_notes', values: [] })).rows, [
    JSON.stringify({ note: 'B' })
  ])
})
