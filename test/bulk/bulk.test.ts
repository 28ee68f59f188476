import t from '../helpers/tap.ts'
import { userWithToken } from '../helpers/identity.ts'
import { bulkCall, ndjson, openBulk } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())
const key = server.keys.acme
const pool = server.platform.db.system
const path = '/api/modules/incident/bulk'

const count = async (tenant = 'acme', module = 'incident') =>
  (
    await pool.query('SELECT count(*)::int AS n FROM records WHERE tenant_id = $1 AND module_key = $2', [
      tenant,
      module
    ])
  ).rows[0].n

t.test(
  'mixed good and bad rows get exact outcomes, one per row in input order, and only the good rows load',
  async (t) => {
    const before = await count()
    const res = await bulkCall(
      server.url,
      path,
      key,
      ndjson([
        { payload: incidentPayload({ title: 'first' }), externalRef: 'HR-1' },
        '{"payload": {"title": "broken',
        { payload: incidentPayload({ severity: 'catastrophic' }), externalRef: 'HR-3' },
        '',
        { payload: incidentPayload({ colour: 'red' }) },
        { payload: incidentPayload(), source: 'hr' },
        [1, 2],
        { payload: incidentPayload({ title: 'sixth row' }) }
      ])
    )
    t.equal(res.status, 200)
    t.match(res.headers.get('content-type'), /^application\/x-ndjson/)
    const [l1, l2, l3, l5, l6, l7, l8, summary] = res.lines
    t.match(l1, { line: 1, externalRef: 'HR-1', status: 'created', version: 1 })
    t.match(l1.number, /^INC-\d{4}-\d{5}$/)
    t.match(l2, { line: 2, status: 'error', problem: { code: 'row.malformed_json', status: 400 } })
    t.match(l3, {
      line: 3,
      externalRef: 'HR-3',
      status: 'error',
      problem: {
        code: 'field.invalid',
        errors: [{ field: 'payload.severity', allowed: ['low', 'medium', 'high', 'critical'] }]
      }
    })
    t.match(l3.problem.detail, /payload.severity must be one of: low, medium, high, critical/)
    t.equal(l5.line, 5, 'a blank line is no row, but line numbers stay those of the body')
    t.match(l5, { status: 'error', problem: { code: 'field.invalid', errors: [{ field: 'payload.colour' }] } })
    t.match(l6, { line: 6, status: 'error', problem: { code: 'field.invalid', errors: [{ field: 'source' }] } })
    t.match(l7, { line: 7, status: 'error', problem: { code: 'field.invalid' } })
    t.match(l8, { line: 8, status: 'created' })
    t.same(
      summary.summary,
      {
        rows: 7,
        created: 2,
        updated: 0,
        unchanged: 0,
        valid: 0,
        errors: 5,
        replayed: 0,
        notAttempted: 0,
        dryRun: false,
        complete: true
      },
      'rows that failed on their own merits leave the call complete'
    )
    t.equal(res.lines.length, 8, 'nothing else')
    t.equal(await count(), before + 2)

    const record = await server.request('GET', `/api/v1/records/${l1.id}`)
    t.equal(record.body.number, l1.number)
    t.equal(record.body.externalRef, 'HR-1')
    t.equal(record.body.payload.title, 'first')
    t.equal(record.body.activity[0].action, 'created', 'each row is logged like a single create')
    t.same(
      record.body.createdBy,
      {
        type: 'api-key',
        id: record.body.createdBy.id,
        name: 'acme test key',
        token: { type: 'api-key', id: record.body.createdBy.id, name: 'acme test key' }
      },
      'the creator as a single create names it, token included'
    )
    const n1 = Number(l1.number.split('-')[2])
    t.equal(Number(l8.number.split('-')[2]), n1 + 1, 'numbers are consecutive, as for single creates')
  }
)

t.test('rows with a known externalRef update that record (JSON merge patch); unchanged rows say so', async (t) => {
  const first = await bulkCall(
    server.url,
    path,
    key,
    ndjson([{ payload: incidentPayload({ title: 'before' }), externalRef: 'SYNC-1' }])
  )
  const id = first.lines[0].id
  const res = await bulkCall(
    server.url,
    path,
    key,
    ndjson([
      { payload: { title: 'after', severity: 'high' }, externalRef: 'SYNC-1' },
      { payload: { title: 'after' }, externalRef: 'SYNC-1' },
      { payload: incidentPayload({ title: 'new one' }), externalRef: 'SYNC-2' },
      { payload: { severity: 'low' }, externalRef: 'SYNC-2' }
    ])
  )
  t.match(res.lines[0], { line: 1, status: 'updated', id, version: 2 })
  t.match(res.lines[1], { line: 2, status: 'unchanged', id, version: 2 })
  t.match(res.lines[2], { line: 3, status: 'created', externalRef: 'SYNC-2' })
  t.match(
    res.lines[3],
    { line: 4, status: 'updated', id: res.lines[2].id, version: 2 },
    'a reference repeated in one call updates what the earlier row created'
  )
  const record = await server.request('GET', `/api/v1/records/${id}`)
  t.equal(record.body.payload.title, 'after')
  t.equal(record.body.payload.site, 'Leeds DC', 'fields not sent are kept')
  t.same(
    record.body.activity.map((a: any) => a.action),
    ['created', 'updated']
  )
  const byRef = await server.request('GET', '/api/v1/records?moduleKey=incident&externalRef=SYNC-1')
  t.same(
    byRef.body.items.map((r: any) => r.id),
    [id],
    'a list finds a record by its externalRef'
  )
  const single = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload(), externalRef: 'SYNC-1' }
  })
  t.equal(single.status, 409, "a single create may not take a live record's externalRef")
  t.equal(single.body.code, 'record.external_ref_taken')
})

t.test('outcomes stream back while the upload is still going', async (t) => {
  const call = openBulk(server.url, path, key)
  const sentAt = Date.now()
  call.write([{ payload: incidentPayload({ title: 'slow 1' }) }])
  await call.waitFor(1, 3000)
  const firstOutcomeMs = Date.now() - sentAt
  t.match(call.lines[0], { line: 1, status: 'created' }, 'the first outcome arrived before the body ended')
  t.ok(firstOutcomeMs < 1000, `first outcome after ${firstOutcomeMs} ms`)
  call.write([{ payload: incidentPayload({ title: 'slow 2' }) }])
  await call.waitFor(2, 3000)
  t.match(call.lines[1], { line: 2, status: 'created' })
  const lines = await call.end([{ payload: incidentPayload({ title: 'slow 3' }) }])
  t.match(lines[2], { line: 3, status: 'created' })
  t.match(lines[3], { summary: { rows: 3, created: 3, complete: true } })
})

t.test('a dry run reports every outcome and writes nothing', async (t) => {
  await bulkCall(server.url, path, key, ndjson([{ payload: incidentPayload(), externalRef: 'DRY-1' }]))
  const before = await count()
  const activity = (await pool.query("SELECT count(*)::int AS n FROM record_activity WHERE tenant_id = 'acme'")).rows[0]
    .n
  const res = await bulkCall(
    server.url,
    `${path}?dryRun=true`,
    key,
    ndjson([
      { payload: incidentPayload() },
      { payload: { title: 'renamed' }, externalRef: 'DRY-1' },
      { payload: { title: 'x' } }
    ]),
    { 'Idempotency-Key': 'dry-key' }
  )
  t.same(res.lines[0], { line: 1, status: 'valid', action: 'create' })
  t.same(res.lines[1], { line: 2, externalRef: 'DRY-1', status: 'valid', action: 'update' })
  t.match(res.lines[2], { line: 3, status: 'error', problem: { code: 'field.invalid' } })
  t.match(res.lines[3], { summary: { rows: 3, valid: 2, errors: 1, created: 0, dryRun: true, complete: true } })
  t.equal(await count(), before, 'no record written')
  t.equal(
    (await pool.query("SELECT count(*)::int AS n FROM record_activity WHERE tenant_id = 'acme'")).rows[0].n,
    activity,
    'no activity written'
  )
  t.equal(
    (await pool.query("SELECT count(*)::int AS n FROM idempotency_keys WHERE key = 'dry-key'")).rows[0].n,
    0,
    'a dry run keeps no key'
  )
})

t.test(
  'the 10,001st row and every later one get an error outcome, the first 10,000 load, and the call says it is not complete and where to resume',
  async (t) => {
    const before = await count()
    const rows = Array.from({ length: 10_002 }, (_, i) => ({ payload: incidentPayload({ title: `row ${i + 1}` }) }))
    const res = await bulkCall(server.url, path, key, ndjson(rows))
    t.equal(res.lines.length, 10_003)
    t.ok(res.lines.slice(0, 10_000).every((l: any) => l.status === 'created'))
    t.match(res.lines[10_000], { line: 10_001, status: 'error', problem: { code: 'bulk.row_limit', status: 413 } })
    t.match(res.lines[10_000].problem.detail, /at most 10000 rows/)
    t.match(res.lines[10_001], { line: 10_002, status: 'error', problem: { code: 'bulk.row_limit' } })
    t.same(res.lines[10_002].summary, {
      rows: 10_002,
      created: 10_000,
      updated: 0,
      unchanged: 0,
      valid: 0,
      errors: 2,
      replayed: 0,
      notAttempted: 2,
      dryRun: false,
      complete: false,
      resumeAtLine: 10_001
    })
    t.equal(await count(), before + 10_000)
  }
)

t.test('whole-call refusals are problems before the stream starts', async (t) => {
  const initech = await bulkCall(
    server.url,
    '/api/modules/corrective-action/bulk',
    server.keys.initech,
    ndjson([{ payload: { title: 'x' } }])
  )
  t.equal(initech.status, 404, 'a module the tenant has not installed')
  t.equal(initech.body.code, 'module.not_found')
  const json = await bulkCall(server.url, path, key, '{}', { 'content-type': 'application/json' })
  t.equal(json.status, 415)
  const query = await bulkCall(server.url, `${path}?mode=fast`, key, ndjson([{ payload: incidentPayload() }]))
  t.equal(query.status, 400)
  const none = await bulkCall(server.url, path, '', ndjson([{ payload: incidentPayload() }]), { authorization: '' })
  t.equal(none.status, 401)
})

t.test("a row pointing at another tenant's record is refused for that row only", async (t) => {
  const globexIncident = (
    await server.request('POST', '/api/v1/records', {
      token: server.keys.globex,
      body: { moduleKey: 'incident', payload: incidentPayload() }
    })
  ).body
  const acmeIncident = (
    await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })
  ).body
  const res = await bulkCall(
    server.url,
    '/api/modules/corrective-action/bulk',
    key,
    ndjson([
      { payload: { title: 'fix', incident: globexIncident.id, kind: 'corrective' } },
      { payload: { title: 'fix', incident: acmeIncident.id, kind: 'corrective' } }
    ])
  )
  t.match(res.lines[0], {
    status: 'error',
    problem: { code: 'field.invalid', errors: [{ field: 'payload.incident', code: 'reference' }] }
  })
  t.match(res.lines[1], { status: 'created' })
  t.equal(await count('globex', 'corrective-action'), 0)
})

t.test('bulk rows obey scopes, roles and field rules like single creates', async (t) => {
  const sa = (
    await server.request('POST', '/api/v1/tokens', {
      body: { type: 'service-account', name: 'no bulk', scopes: ['records:write:incident'] }
    })
  ).body
  const noScope = await bulkCall(server.url, path, sa.token, ndjson([{ payload: incidentPayload() }]))
  t.equal(noScope.status, 403)
  t.equal(noScope.body.missingScope, 'bulk:write')
  const auditor = await userWithToken(server, 'acme', ['auditor'])
  t.equal(
    (await bulkCall(server.url, path, auditor.token, ndjson([{ payload: incidentPayload() }]))).status,
    403,
    'no create or update right'
  )
  const reporter = await userWithToken(server, 'acme', ['reporter'])
  await bulkCall(server.url, path, key, ndjson([{ payload: incidentPayload(), externalRef: 'OWNED-BY-KEY' }]))
  const res = await bulkCall(
    server.url,
    path,
    reporter.token,
    ndjson([
      { payload: incidentPayload({ medicalDetails: 'x' }) },
      { payload: incidentPayload() },
      { payload: { title: 'mine now' }, externalRef: 'OWNED-BY-KEY' }
    ])
  )
  t.match(res.lines[0], { status: 'error', problem: { code: 'field.forbidden', field: 'medicalDetails', status: 403 } })
  t.match(res.lines[1], { status: 'created' })
  t.match(
    res.lines[2],
    { status: 'error', problem: { code: 'record.external_ref_taken' } },
    "a record outside the reporter's row rule cannot be upserted"
  )
  const created = await server.request('GET', `/api/v1/records/${res.lines[1].id}`)
  t.same(created.body.createdBy, {
    type: 'user',
    id: reporter.id,
    name: reporter.userName,
    token: { type: 'personal', id: created.body.createdBy.token?.id, name: `${reporter.userName} token` }
  })
})
