import t, { type Test } from '../helpers/tap.ts'
import { incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const isoZ = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

async function create(moduleKey: string, payload: Record<string, unknown>, token?: string): Promise<Reply> {
  const res = await server.request('POST', '/api/v1/records', { body: { moduleKey, payload }, token })
  if (res.status !== 201) throw new Error(`setup: create ${moduleKey} answered ${res.status} ${res.text}`)
  return res
}
const createIncident = (overrides: Record<string, unknown> = {}, token?: string) =>
  create('incident', incidentPayload(overrides), token)

async function listIds(moduleKey: string): Promise<string[]> {
  const ids: string[] = []
  let cursor: string | null = null
  do {
    const res: Reply = await server.request(
      'GET',
      `/api/v1/records?moduleKey=${moduleKey}&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
    )
    if (res.status !== 200) throw new Error(`list answered ${res.status} ${res.text}`)
    ids.push(...res.body.items.map((r: { id: string }) => r.id))
    cursor = res.body.nextCursor
  } while (cursor)
  return ids
}

function assertProblem(t: Test, res: Reply, status: number, code: string) {
  t.equal(res.status, status, `status ${status}`)
  t.match(res.headers.get('content-type'), /^application\/problem\+json/)
  t.equal(res.body.code, code)
  t.equal(res.body.status, status)
  t.type(res.body.traceId, 'string')
}

t.test('creates an incident with 201, Location, ETag "1", the first number and the initial state', async (t) => {
  const module = await server.request('GET', '/api/v1/modules/incident')
  const res = await createIncident({ injuredPeople: 1 })
  const r = res.body
  t.equal(res.status, 201)
  t.match(r.id, uuid)
  t.equal(res.headers.get('location'), `/api/v1/records/${r.id}`)
  t.equal(res.headers.get('etag'), '"1"')
  t.equal(r.moduleKey, 'incident')
  t.equal(r.version, 1)
  t.equal(r.state, module.body.workflow.initial)
  t.equal(r.state, 'reported')
  t.match(r.createdAt, isoZ)
  t.match(r.updatedAt, isoZ)
  t.equal(r.updatedAt, r.createdAt)
  t.equal(r.number, `INC-${r.createdAt.slice(0, 4)}-00001`)
  t.same(r.payload, incidentPayload({ injuredPeople: 1 }))
  t.match(r.createdBy, { type: 'api-key', id: uuid, name: 'acme test key' })
  t.same(r.updatedBy, r.createdBy)

  t.equal(r.activity.length, 1, 'one activity entry')
  const [entry] = r.activity
  t.equal(entry.action, 'created')
  t.match(entry.at, isoZ)
  t.same(entry.actor, r.createdBy)
  t.equal(entry.transition, null)
  const expected = Object.entries(incidentPayload({ injuredPeople: 1 })).map(([field, to]) => ({
    field,
    from: null,
    to
  }))
  const byField = (a: { field: string }, b: { field: string }) => a.field.localeCompare(b.field)
  t.same([...entry.changes].sort(byField), expected.sort(byField), 'the diff lists every field from null')

  const followed = await server.request('GET', res.headers.get('location')!)
  t.equal(followed.status, 200, 'Location can be followed')
  t.equal(followed.body.id, r.id)
})

t.test('numbers records sequentially per tenant and module', async (t) => {
  const second = await createIncident()
  const third = await createIncident()
  const year = second.body.createdAt.slice(0, 4)
  t.equal(second.body.number, `INC-${year}-00002`)
  t.equal(third.body.number, `INC-${year}-00003`)
  const globex = await createIncident({}, server.keys.globex)
  t.equal(globex.body.number, `INC-${year}-00001`, 'another tenant has its own counter')
  const action = await create('corrective-action', {
    title: 'Add end-of-aisle barriers',
    incident: second.body.id,
    kind: 'preventive'
  })
  t.equal(action.body.number, `CA-${year}-0001`, 'another module has its own pattern and counter')
})

t.test('returns one record with its activity, no attachments and the transitions it can take', async (t) => {
  const { body: created } = await createIncident()
  const res = await server.request('GET', `/api/v1/records/${created.id}`)
  t.equal(res.status, 200)
  t.equal(res.headers.get('etag'), '"1"')
  t.same(res.body.payload, incidentPayload())
  t.equal(res.body.number, created.number)
  t.equal(res.body.activity.length, 1)
  t.equal(res.body.activity[0].action, 'created')
  t.same(res.body.attachments, [])
  t.same(
    res.body.availableTransitions.map((x: { key: string; to: string; missingFields: string[] }) => [
      x.key,
      x.to,
      x.missingFields
    ]),
    [
      ['start-investigation', 'investigating', ['investigationLead']],
      ['dismiss', 'closed', ['closureNote']]
    ]
  )
})

t.test('answers 404 for an unknown, malformed or other-tenant record id', async (t) => {
  const { body: created } = await createIncident()
  assertProblem(
    t,
    await server.request('GET', '/api/v1/records/3f1c4c1e-8f1a-4f57-9a52-1d2b6e0c9a11'),
    404,
    'record.not_found'
  )
  assertProblem(t, await server.request('GET', '/api/v1/records/not-a-uuid'), 404, 'record.not_found')
  assertProblem(
    t,
    await server.request('GET', `/api/v1/records/${created.id}`, { token: server.keys.globex }),
    404,
    'record.not_found'
  )
  assertProblem(
    t,
    await server.request('PATCH', `/api/v1/records/${created.id}`, {
      token: server.keys.globex,
      body: { payload: { severity: 'low' } }
    }),
    404,
    'record.not_found'
  )
  const after = await server.request('GET', `/api/v1/records/${created.id}`)
  t.equal(after.body.payload.severity, 'medium', 'another tenant cannot change it')
})

t.test('patches only the supplied keys, logs the change and increments the version', async (t) => {
  const { body: created } = await createIncident()
  const res = await server.request('PATCH', `/api/v1/records/${created.id}`, {
    body: { payload: { severity: 'high', immediateActions: 'Cordoned off aisle 4' } }
  })
  t.equal(res.status, 200)
  t.equal(res.headers.get('etag'), '"2"')
  t.equal(res.body.version, 2)
  t.same(res.body.payload, incidentPayload({ severity: 'high', immediateActions: 'Cordoned off aisle 4' }))
  t.equal(res.body.createdAt, created.createdAt)
  t.match(res.body.updatedAt, isoZ)
  t.ok(res.body.updatedAt >= created.updatedAt, 'updatedAt moves forward')
  t.equal(res.body.activity.length, 2)
  const entry = res.body.activity[1]
  t.equal(entry.action, 'updated')
  const sorted = [...entry.changes].sort((a: { field: string }, b: { field: string }) => a.field.localeCompare(b.field))
  t.same(sorted, [
    { field: 'immediateActions', from: null, to: 'Cordoned off aisle 4' },
    { field: 'severity', from: 'medium', to: 'high' }
  ])

  const removed = await server.request('PATCH', `/api/v1/records/${created.id}`, {
    body: { payload: { immediateActions: null } }
  })
  t.equal(removed.status, 200)
  t.equal(removed.body.version, 3)
  t.notOk('immediateActions' in removed.body.payload, 'null removes an optional key')
  t.same(removed.body.payload, incidentPayload({ severity: 'high' }))
  t.same(removed.body.activity[2].changes, [{ field: 'immediateActions', from: 'Cordoned off aisle 4', to: null }])

  const required = await server.request('PATCH', `/api/v1/records/${created.id}`, {
    body: { payload: { title: null } }
  })
  assertProblem(t, required, 400, 'field.invalid')
  t.match(required.body.detail, /payload\.title is required/)

  const unchanged = await server.request('PATCH', `/api/v1/records/${created.id}`, {
    body: { payload: { severity: 'high' } }
  })
  t.equal(unchanged.status, 200)
  t.equal(unchanged.body.version, 3, 'a patch that changes nothing keeps the version')
  t.equal(unchanged.body.activity.length, 3, 'and logs nothing')
})

t.test('refuses a stale If-Match with 412 and accepts the current version', async (t) => {
  const { body: created } = await createIncident()
  await server.request('PATCH', `/api/v1/records/${created.id}`, { body: { payload: { site: 'York DC' } } })
  const stale = await server.request('PATCH', `/api/v1/records/${created.id}`, {
    body: { payload: { site: 'Hull DC' } },
    headers: { 'if-match': '"1"' }
  })
  assertProblem(t, stale, 412, 'record.version_mismatch')
  t.match(stale.body.type, /\/precondition-failed$/)
  t.equal(stale.body.currentVersion, 2)
  const still = await server.request('GET', `/api/v1/records/${created.id}`)
  t.equal(still.body.payload.site, 'York DC', 'the stale write changed nothing')
  t.equal(still.body.version, 2)

  const current = await server.request('PATCH', `/api/v1/records/${created.id}`, {
    body: { payload: { site: 'Hull DC' } },
    headers: { 'if-match': still.headers.get('etag')! }
  })
  t.equal(current.status, 200)
  t.equal(current.body.payload.site, 'Hull DC')
  t.equal(current.headers.get('etag'), '"3"')
})

t.test('soft-deletes a record so reads, writes and lists no longer see it', async (t) => {
  const { body: created } = await createIncident()
  t.ok((await listIds('incident')).includes(created.id), 'listed before deletion')
  const res = await server.request('DELETE', `/api/v1/records/${created.id}`)
  t.equal(res.status, 200)
  t.match(res.body.deletedAt, isoZ)
  t.same(res.body.deletedBy, created.createdBy)
  assertProblem(t, await server.request('GET', `/api/v1/records/${created.id}`), 404, 'record.not_found')
  assertProblem(
    t,
    await server.request('PATCH', `/api/v1/records/${created.id}`, { body: { payload: { severity: 'low' } } }),
    404,
    'record.not_found'
  )
  assertProblem(t, await server.request('DELETE', `/api/v1/records/${created.id}`), 404, 'record.not_found')
  t.notOk((await listIds('incident')).includes(created.id), 'no longer listed')

  const audit = await server.request('GET', `/api/v1/audit-log?recordId=${created.id}`)
  t.equal(audit.status, 200)
  t.equal(audit.body.record.id, created.id)
  t.same(audit.body.record.payload, incidentPayload())
  t.match(audit.body.record.deletedAt, isoZ)
  t.same(
    audit.body.items.map((a: { action: string }) => a.action),
    ['created', 'deleted']
  )
  assertProblem(
    t,
    await server.request('GET', `/api/v1/audit-log?recordId=${created.id}`, { token: server.keys.globex }),
    404,
    'record.not_found'
  )
})

t.test('pages through the deleted-records feed of a module', async (t) => {
  const before = await server.request('GET', '/api/v1/audit-log?moduleKey=incident&action=deleted&limit=200')
  const known = new Set(before.body.items.map((a: { recordId: string }) => a.recordId))
  const deleted: string[] = []
  for (let i = 0; i < 3; i++) {
    const { body } = await createIncident({ title: `Duplicate report ${i}` })
    await server.request('PATCH', `/api/v1/records/${body.id}`, { body: { payload: { severity: 'low' } } })
    t.equal((await server.request('DELETE', `/api/v1/records/${body.id}`)).status, 200)
    deleted.push(body.id)
  }
  const { body: inc } = await createIncident()
  const action = await create('corrective-action', { title: 'Retrain drivers', incident: inc.id, kind: 'corrective' })
  await server.request('DELETE', `/api/v1/records/${action.body.id}`)

  const seen: Array<{ recordId: string; action: string; recordNumber: string }> = []
  let cursor: string | null = null
  let pages = 0
  do {
    const res: Reply = await server.request(
      'GET',
      `/api/v1/audit-log?moduleKey=incident&action=deleted&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
    )
    t.equal(res.status, 200)
    t.ok(res.body.items.length <= 2)
    seen.push(...res.body.items)
    cursor = res.body.nextCursor
    pages++
  } while (cursor && pages < 20)
  const ids = seen.map((a) => a.recordId)
  t.equal(new Set(ids).size, ids.length, 'no entry twice')
  t.ok(
    seen.every((a) => a.action === 'deleted'),
    'only deletions'
  )
  t.same(
    ids.filter((id) => !known.has(id)),
    deleted,
    'every new deletion, oldest first'
  )
  t.notOk(ids.includes(action.body.id), 'another module is not in the feed')
  t.ok(seen.every((a) => /^INC-\d{4}-\d{5}$/.test(a.recordNumber)))

  const first = await server.request('GET', '/api/v1/audit-log?moduleKey=incident&action=deleted&limit=1')
  const wrongFilter = await server.request(
    'GET',
    `/api/v1/audit-log?moduleKey=incident&action=updated&cursor=${encodeURIComponent(first.body.nextCursor)}`
  )
  assertProblem(t, wrongFilter, 400, 'cursor.invalid')
})

t.test('lists the modules installed for the tenant', async (t) => {
  const acme = await server.request('GET', '/api/v1/modules')
  t.equal(acme.status, 200)
  t.same(
    acme.body.items.map((m: { key: string }) => m.key),
    ['corrective-action', 'incident', 'inspection']
  )
  const incident = acme.body.items.find((m: { key: string }) => m.key === 'incident')
  t.match(incident, {
    title: 'Incident',
    version: '1.3.0',
    states: ['reported', 'investigating', 'actions-pending', 'closed']
  })
  const initech = await server.request('GET', '/api/v1/modules', { token: server.keys.initech })
  t.same(
    initech.body.items.map((m: { key: string }) => m.key),
    ['incident']
  )
})

t.test('describes a module with its fields, JSON Schema, workflow and permissions', async (t) => {
  const res = await server.request('GET', '/api/v1/modules/incident')
  t.equal(res.status, 200)
  const m = res.body
  t.equal(m.key, 'incident')
  const severity = m.fields.find((f: { key: string }) => f.key === 'severity')
  t.match(severity, {
    type: 'singleChoice',
    required: true,
    options: [
      { value: 'low', label: 'Low' },
      { value: 'medium', label: 'Medium' },
      { value: 'high', label: 'High' },
      { value: 'critical', label: 'Critical' }
    ],
    filterable: true
  })
  t.match(
    m.fields.find((f: { key: string }) => f.key === 'description'),
    { type: 'longText', filterable: false }
  )
  t.equal(m.schema.type, 'object')
  t.equal(m.schema.additionalProperties, false)
  t.same(m.schema.properties.severity.enum, ['low', 'medium', 'high', 'critical'])
  t.equal(m.schema.properties.occurredAt.format, 'date-time')
  t.same([...m.schema.required].sort(), ['category', 'description', 'occurredAt', 'severity', 'site', 'title'])
  t.equal(m.workflow.initial, 'reported')
  t.match(
    m.workflow.transitions.find((x: { key: string }) => x.key === 'start-investigation'),
    { from: ['reported'], to: 'investigating' }
  )
  t.ok(m.permissions['safety-manager'].includes('create'))
  t.same(m.permissions.auditor, ['read', 'export'])
})

t.test('hides modules the tenant has not installed', async (t) => {
  const token = server.keys.initech
  assertProblem(t, await server.request('GET', '/api/v1/modules/corrective-action', { token }), 404, 'module.not_found')
  assertProblem(t, await server.request('GET', '/api/v1/modules/inspection', { token }), 404, 'module.not_found')
  const created = await server.request('POST', '/api/v1/records', {
    token,
    body: {
      moduleKey: 'inspection',
      payload: { title: 'Fire doors', kind: 'fire-safety', site: 'HQ', scheduledFor: '2026-12-01' }
    }
  })
  assertProblem(t, created, 404, 'module.not_found')
  assertProblem(
    t,
    await server.request('GET', '/api/v1/records?moduleKey=corrective-action', { token }),
    404,
    'module.not_found'
  )
  assertProblem(t, await server.request('GET', '/api/v1/modules/no-such-module'), 404, 'module.not_found')
  const own = await server.request('POST', '/api/v1/records', {
    token,
    body: { moduleKey: 'incident', payload: incidentPayload() }
  })
  t.equal(own.status, 201, 'an installed module still works for that tenant')
})
