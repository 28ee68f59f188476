import t, { type Test } from '../helpers/tap.ts'
import { incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

/** Successful creates per module: after every refusal the lists must still hold exactly these. */
const created: Record<string, string[]> = { incident: [], 'corrective-action': [], inspection: [] }

async function post(moduleKey: string, payload: unknown, token?: string): Promise<Reply> {
  const res = await server.request('POST', '/api/v1/records', { body: { moduleKey, payload }, token })
  if (res.status === 201 && !token) created[moduleKey].push(res.body.id)
  return res
}

async function mustCreate(moduleKey: string, payload: unknown, token?: string) {
  const res = await post(moduleKey, payload, token)
  if (res.status !== 201) throw new Error(`setup: create ${moduleKey} answered ${res.status} ${res.text}`)
  return res.body
}

/** Asserts a 400 validation problem that names `field` in its detail and its errors. */
function assertInvalid(t: Test, res: Reply, field: string) {
  t.equal(res.status, 400, `400 for ${field}`)
  t.match(res.headers.get('content-type'), /^application\/problem\+json/)
  t.match(res.body.type, /\/validation$/)
  t.equal(res.body.title, 'Validation failed')
  t.equal(res.body.status, 400)
  t.equal(res.body.code, 'field.invalid')
  t.type(res.body.traceId, 'string')
  t.ok(res.body.detail.includes(field), `detail names ${field}: ${res.body.detail}`)
  const problem = res.body.errors?.find((e: { field: string }) => e.field === field)
  t.ok(problem, `errors list ${field}`)
  return problem
}

async function assertNothingWritten(t: Test) {
  for (const [moduleKey, ids] of Object.entries(created)) {
    const res = await server.request('GET', `/api/v1/records?moduleKey=${moduleKey}&limit=200`)
    t.same(
      res.body.items.map((r: { id: string }) => r.id),
      ids,
      `${moduleKey} holds only the successful creates`
    )
  }
}

const inspection = (overrides: Record<string, unknown> = {}) => ({
  title: 'Monthly warehouse walk',
  kind: 'workplace',
  site: 'Leeds DC',
  scheduledFor: '2026-12-01',
  ...overrides
})

t.test('rejects a severity outside the options and lists the allowed values', async (t) => {
  const res = await post('incident', incidentPayload({ severity: 'catastrophic' }))
  const problem = assertInvalid(t, res, 'payload.severity')
  t.match(res.body.detail, 'low, medium, high, critical')
  t.same(problem.allowed, ['low', 'medium', 'high', 'critical'])
  t.equal(problem.pointer, '/payload/severity')
  await assertNothingWritten(t)
})

t.test('names an unknown payload field', async (t) => {
  const res = await post('incident', incidentPayload({ weather: 'rain' }))
  const problem = assertInvalid(t, res, 'payload.weather')
  t.match(problem.detail, /is not an accepted field/)
  t.ok(problem.allowed.includes('severity'), 'and lists the accepted fields')
  await assertNothingWritten(t)
})

t.test('rejects values of the wrong type', async (t) => {
  const res = await post('incident', incidentPayload({ injuredPeople: 'two', regulatorNotified: 'yes', title: 42 }))
  t.match(assertInvalid(t, res, 'payload.injuredPeople').detail, /must be an integer/)
  t.match(assertInvalid(t, res, 'payload.regulatorNotified').detail, /must be a boolean/)
  t.match(assertInvalid(t, res, 'payload.title').detail, /must be a string/)
  const range = await post('incident', incidentPayload({ injuredPeople: -1 }))
  t.match(assertInvalid(t, range, 'payload.injuredPeople').detail, />= 0/)
  const notObject = await post('incident', 'a string payload')
  assertInvalid(t, notObject, 'payload')
  await assertNothingWritten(t)
})

t.test('rejects a date-time or date that is not ISO 8601', async (t) => {
  for (const occurredAt of ['20/11/2026 08:30', '2026-11-20', '2026-11-20T08:30:00', '2026-02-30T08:30:00Z']) {
    const res = await post('incident', incidentPayload({ occurredAt }))
    t.match(assertInvalid(t, res, 'payload.occurredAt').detail, /ISO 8601 date-time with a timezone/, occurredAt)
  }
  const date = await post('incident', incidentPayload({ regulatorNotifiedOn: '2026-13-01' }))
  t.match(assertInvalid(t, date, 'payload.regulatorNotifiedOn').detail, /YYYY-MM-DD/)
  t.equal(
    (await post('incident', incidentPayload({ occurredAt: '2026-11-20T08:30:00+01:00' }))).status,
    201,
    'an offset is a timezone'
  )
  // Valid RFC 3339 that PostgreSQL cannot cast: stored once, it broke every filter on the field.
  for (const occurredAt of ['0000-01-01T00:00:00Z', '2026-11-20T08:30:00+16:00', '2026-12-31T23:59:60.5Z']) {
    assertInvalid(t, await post('incident', incidentPayload({ occurredAt })), 'payload.occurredAt')
  }
  assertInvalid(
    t,
    await post('incident', incidentPayload({ regulatorNotifiedOn: '0000-12-31' })),
    'payload.regulatorNotifiedOn'
  )
  t.equal(
    (await post('incident', incidentPayload({ occurredAt: '2026-11-20T08:30:00-15:30' }))).status,
    201,
    'the widest offset PostgreSQL holds'
  )
  const filtered = await server.request(
    'GET',
    '/api/v1/records?moduleKey=incident&payload[occurredAt][gte]=2026-01-01T00:00:00Z'
  )
  t.equal(filtered.status, 200, 'the field can still be filtered on')
  await assertNothingWritten(t)
})

t.test('reports every missing required field', async (t) => {
  const res = await post('incident', {})
  for (const field of ['title', 'description', 'occurredAt', 'site', 'category', 'severity']) {
    t.match(assertInvalid(t, res, `payload.${field}`).detail, 'is required')
  }
  const blankTitle = await post('incident', incidentPayload({ title: undefined }))
  t.equal(blankTitle.body.errors.length, 1, 'only the missing field is named')
  assertInvalid(t, blankTitle, 'payload.title')
  await assertNothingWritten(t)
})

t.test('rejects a body without moduleKey or with unknown members', async (t) => {
  const noModule = await server.request('POST', '/api/v1/records', { body: { payload: incidentPayload() } })
  assertInvalid(t, noModule, 'moduleKey')
  const extra = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload(), state: 'closed' }
  })
  assertInvalid(t, extra, 'state')
  const noPayload = await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident' } })
  assertInvalid(t, noPayload, 'payload')
  await assertNothingWritten(t)
})

t.test('rejects a patch that breaks the module schema and leaves the record as it was', async (t) => {
  const record = await mustCreate('incident', incidentPayload())
  const res = await server.request('PATCH', `/api/v1/records/${record.id}`, {
    body: { payload: { severity: 'extreme', colour: 'red' } }
  })
  assertInvalid(t, res, 'payload.severity')
  assertInvalid(t, res, 'payload.colour')
  const envelope = await server.request('PATCH', `/api/v1/records/${record.id}`, { body: { severity: 'high' } })
  assertInvalid(t, envelope, 'severity')
  const after = await server.request('GET', `/api/v1/records/${record.id}`)
  t.equal(after.body.version, 1)
  t.same(after.body.payload, incidentPayload())
  t.equal(after.body.activity.length, 1)
})

t.test('refuses a corrective action whose incident is missing, deleted or another tenant’s', async (t) => {
  const action = (incident: unknown) => ({ title: 'Fit mirrors to forklifts', incident, kind: 'preventive' })
  const missing = await post('corrective-action', action('0b5e4a6c-2f1d-4e7a-8c39-5d0f1e2a3b4c'))
  t.match(assertInvalid(t, missing, 'payload.incident').detail, /live incident record of this tenant/)

  const gone = await mustCreate('incident', incidentPayload({ title: 'Reported twice' }))
  t.equal((await server.request('DELETE', `/api/v1/records/${gone.id}`)).status, 200)
  created.incident = created.incident.filter((id) => id !== gone.id)
  assertInvalid(t, await post('corrective-action', action(gone.id)), 'payload.incident')

  const foreign = await mustCreate('incident', incidentPayload({ title: 'Globex incident' }), server.keys.globex)
  assertInvalid(t, await post('corrective-action', action(foreign.id)), 'payload.incident')

  const ownAction = await mustCreate('corrective-action', action(foreign.id), server.keys.globex)
  t.equal(ownAction.payload.incident, foreign.id, 'the owning tenant may reference it')

  const notAnId = await post('corrective-action', action('INC-2026-00001'))
  assertInvalid(t, notAnId, 'payload.incident')
  const otherModule = await mustCreate('inspection', inspection())
  assertInvalid(t, await post('corrective-action', action(otherModule.id)), 'payload.incident')
  await assertNothingWritten(t)

  const live = await mustCreate('incident', incidentPayload())
  const ok = await mustCreate('corrective-action', action(live.id))
  t.equal(ok.payload.incident, live.id, 'a live incident of the tenant is accepted')
  const repoint = await server.request('PATCH', `/api/v1/records/${ok.id}`, {
    body: { payload: { incident: foreign.id } }
  })
  assertInvalid(t, repoint, 'payload.incident')
})

t.test('validates each item of an inspection checklist', async (t) => {
  const checklist = [
    { item: 'Fire exits clear', result: 'pass' },
    { item: 'Extinguisher tagged', result: 'broken' },
    { result: 'fail', severity: 'urgent' },
    { item: 'Racking labels', result: 'pass', colour: 'red' }
  ]
  const res = await post('inspection', inspection({ checklist }))
  const result = assertInvalid(t, res, 'payload.checklist.1.result')
  t.match(result.detail, 'pass, fail, not-applicable')
  t.equal(result.pointer, '/payload/checklist/1/result')
  assertInvalid(t, res, 'payload.checklist.2.item')
  t.match(assertInvalid(t, res, 'payload.checklist.2.severity').detail, 'low, medium, high')
  assertInvalid(t, res, 'payload.checklist.3.colour')
  t.notOk(
    res.body.errors.some((e: { field: string }) => e.field.startsWith('payload.checklist.0')),
    'the valid item is not named'
  )
  assertInvalid(
    t,
    await post('inspection', inspection({ checklist: { item: 'x', result: 'pass' } })),
    'payload.checklist'
  )
  await assertNothingWritten(t)

  const ok = await mustCreate(
    'inspection',
    inspection({
      checklist: [checklist[0], { item: 'Extinguisher tagged', result: 'fail', severity: 'high', photoTaken: true }]
    })
  )
  t.equal(ok.payload.checklist.length, 2)
  t.same(ok.activity[0].changes.map((c: { field: string }) => c.field).sort(), [
    'checklist',
    'kind',
    'scheduledFor',
    'site',
    'title'
  ])
})

t.test('refused creates use no record numbers', async (t) => {
  const before = await mustCreate('incident', incidentPayload())
  assertInvalid(t, await post('incident', incidentPayload({ severity: 'none' })), 'payload.severity')
  assertInvalid(t, await post('incident', incidentPayload({ injuredPeople: 1.5 })), 'payload.injuredPeople')
  const after = await mustCreate('incident', incidentPayload())
  const seq = (n: string) => Number(n.split('-').pop())
  t.equal(seq(after.number), seq(before.number) + 1, 'the next number follows without a gap')
  const feed = await server.request('GET', '/api/v1/audit-log?moduleKey=incident&action=created&limit=200')
  t.equal(
    feed.body.items.length,
    created.incident.length + 1,
    'one created entry per successful create, including the deleted one'
  )
  await assertNothingWritten(t)
})
