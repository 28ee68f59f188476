import t, { type Test } from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

const acme = server.keys.acme
const globex = server.keys.globex
const initech = server.keys.initech
const leadId = '6f1c3a52-8c1e-4a8e-9d55-2d2f6c8f0a11'

/** Records created by acme: one per module plus one soft-deleted incident. */
async function acmeRecords() {
  const create = async (moduleKey: string, payload: Record<string, unknown>) => {
    const r = await server.request('POST', '/api/v1/records', { token: acme, body: { moduleKey, payload } })
    if (r.status !== 201) throw new Error(`setup: create ${moduleKey} answered ${r.status} ${r.text}`)
    return r.body
  }
  const incident = await create('incident', incidentPayload())
  const action = await create('corrective-action', {
    title: 'Fit end-of-aisle barriers',
    incident: incident.id,
    kind: 'preventive'
  })
  const inspection = await create('inspection', {
    title: 'Racking check',
    kind: 'workplace',
    site: 'Leeds DC',
    scheduledFor: '2026-12-01'
  })
  const deleted = await create('incident', incidentPayload({ title: 'Duplicate report' }))
  const del = await server.request('DELETE', `/api/v1/records/${deleted.id}`, { token: acme })
  if (del.status !== 200) throw new Error(`setup: delete answered ${del.status}`)
  return { live: [incident, action, inspection], deleted }
}

const records = await acmeRecords()
const transitionFor: Record<string, { transition: string; payload?: Record<string, unknown> }> = {
  incident: { transition: 'start-investigation', payload: { investigationLead: leadId } },
  'corrective-action': { transition: 'cancel' },
  inspection: { transition: 'cancel' }
}

function expectNotFound(t: Test, reply: { status: number; body: any; headers: Headers }, what: string) {
  t.equal(reply.status, 404, `${what}: status 404`)
  t.equal(reply.body?.code, 'record.not_found', `${what}: code record.not_found`)
  t.match(reply.headers.get('content-type'), /^application\/problem\+json/, `${what}: problem+json`)
}

t.test(
  "another tenant's key gets 404 from every record endpoint for every record id of the first tenant",
  async (t) => {
    for (const token of [globex, initech]) {
      for (const rec of [...records.live, records.deleted]) {
        const path = `/api/v1/records/${rec.id}`
        const label = `${token === globex ? 'globex' : 'initech'} ${rec.moduleKey} ${rec.id}`
        expectNotFound(t, await server.request('GET', path, { token }), `GET ${label}`)
        expectNotFound(
          t,
          await server.request('PATCH', path, { token, body: { payload: { title: 'hijacked' } } }),
          `PATCH ${label}`
        )
        expectNotFound(
          t,
          await server.request('POST', `${path}:transition`, { token, body: transitionFor[rec.moduleKey] }),
          `transition ${label}`
        )
        expectNotFound(t, await server.request('DELETE', path, { token }), `DELETE ${label}`)
        expectNotFound(
          t,
          await server.request('GET', `/api/v1/audit-log?recordId=${rec.id}`, { token }),
          `audit-log ${label}`
        )
      }
    }
  }
)

t.test("another tenant's list shows none of the first tenant's records", async (t) => {
  const own = await server.request('POST', '/api/v1/records', {
    token: globex,
    body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Globex own' }) }
  })
  t.equal(own.status, 201)
  const acmeIds = new Set([...records.live, records.deleted].map((r) => r.id))
  for (const moduleKey of ['incident', 'corrective-action', 'inspection']) {
    const list = await server.request('GET', `/api/v1/records?moduleKey=${moduleKey}&limit=200`, { token: globex })
    t.equal(list.status, 200, `list ${moduleKey}`)
    t.equal(list.body.items.filter((r: any) => acmeIds.has(r.id)).length, 0, `no acme ${moduleKey} rows`)
    t.same(
      list.body.items.map((r: any) => r.id),
      moduleKey === 'incident' ? [own.body.id] : [],
      `only globex's own ${moduleKey} rows`
    )
  }
  // Record numbers are counted per tenant: globex's first incident is 00001 although acme has two.
  t.match(own.body.number, /^INC-\d{4}-00001$/)
  const acmeList = await server.request('GET', '/api/v1/records?moduleKey=incident', { token: acme })
  t.notOk(
    acmeList.body.items.some((r: any) => r.id === own.body.id),
    "acme's list does not show globex's record"
  )
})

t.test("another tenant's audit-log module feed holds none of the first tenant's activity", async (t) => {
  const acmeIds = new Set([...records.live, records.deleted].map((r) => r.id))
  for (const moduleKey of ['incident', 'corrective-action', 'inspection']) {
    const feed = await server.request('GET', `/api/v1/audit-log?moduleKey=${moduleKey}&limit=200`, { token: globex })
    t.equal(feed.status, 200, `feed ${moduleKey}`)
    t.equal(feed.body.items.filter((a: any) => acmeIds.has(a.recordId)).length, 0, `no acme activity in ${moduleKey}`)
  }
  const mine = await server.request('GET', '/api/v1/audit-log?moduleKey=incident&limit=200', { token: acme })
  t.ok(
    mine.body.items.some((a: any) => a.recordId === records.deleted.id && a.action === 'deleted'),
    "acme's own feed does show its activity"
  )
})

t.test("a record reference to another tenant's record is refused as invalid", async (t) => {
  const r = await server.request('POST', '/api/v1/records', {
    token: globex,
    body: {
      moduleKey: 'corrective-action',
      payload: { title: 'Borrowed incident', incident: records.live[0].id, kind: 'corrective' }
    }
  })
  t.equal(r.status, 400)
  t.equal(r.body.code, 'field.invalid')
  t.match(r.body.errors, [{ pointer: '/payload/incident', code: 'reference' }])
})

t.test("the first tenant's records are unchanged after the other tenants' attempts", async (t) => {
  for (const before of records.live) {
    const after = await server.request('GET', `/api/v1/records/${before.id}`, { token: acme })
    t.equal(after.status, 200)
    t.equal(after.body.version, before.version, `${before.moduleKey} version`)
    t.equal(after.body.state, before.state, `${before.moduleKey} state`)
    t.same(after.body.payload, before.payload, `${before.moduleKey} payload`)
    t.equal(after.body.activity.length, 1, `${before.moduleKey} has only its creation activity`)
  }
  const { rows } = await server.platform.db.system.query(
    'SELECT id, deleted_at IS NOT NULL AS deleted, version FROM records WHERE tenant_id = $1 AND id = $2',
    ['acme', records.deleted.id]
  )
  t.same(
    rows,
    [{ id: records.deleted.id, deleted: true, version: 2 }],
    'the deleted record stays deleted at its version'
  )
})

t.test(
  'a module the tenant has not installed is a 404 module.not_found on create, list, schema and audit feed',
  async (t) => {
    const checks = [
      await server.request('POST', '/api/v1/records', {
        token: initech,
        body: {
          moduleKey: 'corrective-action',
          payload: { title: 'x', incident: records.live[0].id, kind: 'corrective' }
        }
      }),
      await server.request('GET', '/api/v1/records?moduleKey=corrective-action', { token: initech }),
      await server.request('GET', '/api/v1/modules/corrective-action', { token: initech }),
      await server.request('GET', '/api/v1/audit-log?moduleKey=inspection', { token: initech }),
      await server.request('GET', '/api/v1/records?moduleKey=no-such-module', { token: acme })
    ]
    for (const [i, r] of checks.entries()) {
      t.equal(r.status, 404, `check ${i}: status`)
      t.equal(r.body.code, 'module.not_found', `check ${i}: code`)
    }
    const installed = await server.request('GET', '/api/v1/modules', { token: initech })
    t.same(
      installed.body.items.map((m: any) => m.key),
      ['incident']
    )
    const { rows } = await server.platform.db.system.query(
      "SELECT count(*)::int AS n FROM records WHERE tenant_id = 'initech'"
    )
    t.equal(rows[0].n, 0, 'nothing was created for initech')
  }
)

t.test('every tenant-owned table leads its primary key and every index with tenant_id', async (t) => {
  const { rows } = await server.platform.db.system.query(`
    SELECT c.relname AS "table", i.relname AS "index", x.indisprimary AS "primary",
           (SELECT a.attname FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum = x.indkey[0]) AS "first"
      FROM pg_index x
      JOIN pg_class i ON i.oid = x.indexrelid
      JOIN pg_class c ON c.oid = x.indrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema()
       AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped)
     ORDER BY 1, 2`)
  const tables = [...new Set(rows.map((r) => r.table))].sort()
  t.same(
    tables,
    [
      'attachments',
      'bulk_outcomes',
      'credentials',
      'event_retention',
      'events',
      'export_chunks',
      'export_jobs',
      'group_members',
      'groups',
      'idempotency_keys',
      'record_activity',
      'record_migration_refusals',
      'record_migrations',
      'record_overdue',
      'record_sequences',
      'record_series',
      'record_series_periods',
      'records',
      'sessions',
      'tenant_modules',
      'users',
      'webhook_attempts',
      'webhook_cursors',
      'webhook_deliveries',
      'webhook_subscriptions'
    ],
    'the tenant-owned tables'
  )
  for (const table of tables)
    t.ok(
      rows.some((r) => r.table === table && r.primary && r.first === 'tenant_id'),
      `${table}: primary key starts with tenant_id`
    )
  const offenders = rows.filter((r) => r.first !== 'tenant_id').map((r) => `${r.table}.${r.index} (${r.first})`)
  t.same(
    offenders,
    ['credentials.credentials_by_hash (secret_hash)', 'sessions.sessions_by_id (id)'],
    'only the documented token and session hash indexes do not lead with tenant_id (both plain: a request is looked up by its hash before its tenant is known; docs/citus.md)'
  )
})
