import t, { type Test } from '../helpers/tap.ts'
import { incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

// Four-eyes transitions (forbidSelf) need a second actor of the tenant; no HTTP route issues keys, so this is fixture setup.
const verifierKey = (
  await server.platform.credentials.create({ tenantId: 'acme', kind: 'api_key', name: 'acme verifier key' })
).token

const lead = '2c9d6f1e-7b3a-4e58-9f0d-1a2b3c4d5e6f'
const owner = '8e7d6c5b-4a39-4281-9706-f5e4d3c2b1a0'

async function create(moduleKey: string, payload: Record<string, unknown>) {
  const res = await server.request('POST', '/api/v1/records', { body: { moduleKey, payload } })
  if (res.status !== 201) throw new Error(`setup: create ${moduleKey} answered ${res.status} ${res.text}`)
  return res.body
}
const createIncident = (overrides: Record<string, unknown> = {}) => create('incident', incidentPayload(overrides))

const fire = (
  id: string,
  body: Record<string, unknown>,
  options: { token?: string; headers?: Record<string, string> } = {}
) => server.request('POST', `/api/v1/records/${id}:transition`, { body, ...options })

const get = async (id: string) => (await server.request('GET', `/api/v1/records/${id}`)).body

function assertProblem(t: Test, res: Reply, status: number, code: string, kind: string) {
  t.equal(res.status, status, `status ${status}`)
  t.match(res.headers.get('content-type'), /^application\/problem\+json/)
  t.equal(res.body.code, code)
  t.match(res.body.type, new RegExp(`/${kind}$`))
  t.type(res.body.traceId, 'string')
}

async function assertUnchanged(t: Test, id: string, state: string, version: number) {
  const now = await get(id)
  t.equal(now.state, state, `still ${state}`)
  t.equal(now.version, version, `still at version ${version}`)
}

t.test('starts an investigation with the lead given in the same call', async (t) => {
  const incident = await createIncident()
  const res = await fire(incident.id, {
    transition: 'start-investigation',
    comment: 'Assigning the site safety lead',
    payload: { investigationLead: lead }
  })
  t.equal(res.status, 200)
  t.equal(res.headers.get('etag'), '"2"')
  t.equal(res.body.state, 'investigating')
  t.equal(res.body.version, 2)
  t.same(res.body.payload, incidentPayload({ investigationLead: lead }))
  t.equal(res.body.activity.length, 2)
  const entry = res.body.activity[1]
  t.equal(entry.action, 'transitioned')
  t.same(entry.transition, { key: 'start-investigation', from: 'reported', to: 'investigating' })
  t.equal(entry.comment, 'Assigning the site safety lead')
  t.same(entry.changes, [{ field: 'investigationLead', from: null, to: lead }])
  t.same(entry.actor, incident.createdBy)
  t.same(
    res.body.availableTransitions.map((x: { key: string; missingFields: string[] }) => [x.key, x.missingFields]),
    [['record-root-cause', ['rootCause']]]
  )
  const read = await get(incident.id)
  t.equal(read.state, 'investigating', 'the new state is stored')
  t.equal(read.activity.length, 2)
})

t.test('records a transition without a comment or payload when the guard is already met', async (t) => {
  const incident = await createIncident({ investigationLead: lead })
  const res = await fire(incident.id, { transition: 'start-investigation' })
  t.equal(res.status, 200)
  t.equal(res.body.state, 'investigating')
  const entry = res.body.activity[1]
  t.same(entry.changes, [])
  t.equal(entry.comment, null)
  const root = await fire(incident.id, {
    transition: 'record-root-cause',
    payload: { rootCause: 'Blind corner at aisle end' }
  })
  t.equal(root.body.state, 'actions-pending')
  t.same(root.body.activity[2].transition, { key: 'record-root-cause', from: 'investigating', to: 'actions-pending' })
})

t.test('refuses a transition that does not start from the current state with 409', async (t) => {
  const incident = await createIncident()
  await fire(incident.id, { transition: 'start-investigation', payload: { investigationLead: lead } })
  const res = await fire(incident.id, { transition: 'dismiss', payload: { closureNote: 'Not an incident' } })
  assertProblem(t, res, 409, 'transition.not_allowed', 'conflict')
  t.match(res.body.detail, /"dismiss".*"investigating"/)
  t.equal(res.body.currentState, 'investigating')
  t.same(res.body.allowedTransitions, ['record-root-cause'])
  await assertUnchanged(t, incident.id, 'investigating', 2)
  t.notOk('closureNote' in (await get(incident.id)).payload, 'the payload given with it was not applied')
})

t.test('refuses a transition whose target state needs a missing field', async (t) => {
  const incident = await createIncident()
  const res = await fire(incident.id, { transition: 'start-investigation', comment: 'No lead yet' })
  assertProblem(t, res, 400, 'field.invalid', 'validation')
  t.match(res.body.detail, 'payload.investigationLead')
  t.match(res.body.detail, /required to enter state "investigating"/)
  t.match(res.body.errors, [{ field: 'payload.investigationLead', pointer: '/payload/investigationLead' }])

  const blank = await fire(incident.id, { transition: 'dismiss', payload: { closureNote: '' } })
  assertProblem(t, blank, 400, 'field.invalid', 'validation')
  t.match(blank.body.detail, 'payload.closureNote')

  const removed = await fire(incident.id, { transition: 'start-investigation', payload: { investigationLead: null } })
  t.match(removed.body.detail, 'payload.investigationLead', 'null in the payload does not meet the guard')
  await assertUnchanged(t, incident.id, 'reported', 1)
  t.equal((await get(incident.id)).activity.length, 1, 'nothing was logged')
})

t.test('checks a payload sent with a transition against the module schema', async (t) => {
  const incident = await createIncident()
  const res = await fire(incident.id, {
    transition: 'start-investigation',
    payload: { investigationLead: 'Jo Bloggs' }
  })
  assertProblem(t, res, 400, 'field.invalid', 'validation')
  t.match(res.body.errors, [{ field: 'payload.investigationLead' }])
  const unknown = await fire(incident.id, {
    transition: 'start-investigation',
    payload: { investigationLead: lead, priority: 'p1' }
  })
  t.match(unknown.body.errors, [{ field: 'payload.priority' }])
  await assertUnchanged(t, incident.id, 'reported', 1)
})

t.test('refuses an unknown transition and lists the transitions of the workflow', async (t) => {
  const incident = await createIncident()
  const res = await fire(incident.id, { transition: 'escalate' })
  assertProblem(t, res, 400, 'field.invalid', 'validation')
  t.match(res.body.detail, 'transition must be one of: start-investigation, record-root-cause, close, dismiss, reopen')
  t.same(res.body.errors[0].allowed, ['start-investigation', 'record-root-cause', 'close', 'dismiss', 'reopen'])

  const missing = await fire(incident.id, { comment: 'which one?' })
  assertProblem(t, missing, 400, 'field.invalid', 'validation')
  t.match(missing.body.detail, 'transition')
  const extra = await fire(incident.id, { transition: 'dismiss', note: 'x' })
  t.match(extra.body.errors, [{ field: 'note' }])
  await assertUnchanged(t, incident.id, 'reported', 1)
})

t.test('answers 404 for a transition on a deleted, unknown or other-tenant record', async (t) => {
  const incident = await createIncident()
  t.equal((await server.request('DELETE', `/api/v1/records/${incident.id}`)).status, 200)
  const res = await fire(incident.id, { transition: 'dismiss', payload: { closureNote: 'Gone' } })
  assertProblem(t, res, 404, 'record.not_found', 'not-found')
  const audit = await server.request('GET', `/api/v1/audit-log?recordId=${incident.id}`)
  t.same(
    audit.body.items.map((a: { action: string }) => a.action),
    ['created', 'deleted'],
    'the deleted record was not transitioned'
  )
  assertProblem(
    t,
    await fire('5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d', { transition: 'dismiss' }),
    404,
    'record.not_found',
    'not-found'
  )
  const live = await createIncident()
  const foreign = await fire(
    live.id,
    { transition: 'dismiss', payload: { closureNote: 'x' } },
    { token: server.keys.globex }
  )
  assertProblem(t, foreign, 404, 'record.not_found', 'not-found')
  await assertUnchanged(t, live.id, 'reported', 1)
})

t.test('applies If-Match to transitions', async (t) => {
  const incident = await createIncident()
  await server.request('PATCH', `/api/v1/records/${incident.id}`, { body: { payload: { severity: 'high' } } })
  const stale = await fire(
    incident.id,
    { transition: 'dismiss', payload: { closureNote: 'x' } },
    { headers: { 'if-match': '"1"' } }
  )
  assertProblem(t, stale, 412, 'record.version_mismatch', 'precondition-failed')
  await assertUnchanged(t, incident.id, 'reported', 2)
  const current = await fire(
    incident.id,
    { transition: 'dismiss', payload: { closureNote: 'Not work related' } },
    { headers: { 'if-match': '"2"' } }
  )
  t.equal(current.status, 200)
  t.equal(current.body.state, 'closed')
  t.same(
    current.body.availableTransitions.map((x: { key: string }) => x.key),
    ['reopen']
  )
})

t.test('runs a corrective action from open to verified', async (t) => {
  const incident = await createIncident({ severity: 'high' })
  const action = await create('corrective-action', {
    title: 'Fit convex mirrors at aisle ends',
    incident: incident.id,
    kind: 'corrective'
  })
  t.equal(action.state, 'open')

  const early = await fire(action.id, { transition: 'complete' })
  assertProblem(t, early, 409, 'transition.not_allowed', 'conflict')
  t.same(early.body.allowedTransitions, ['start', 'cancel'])

  const noOwner = await fire(action.id, { transition: 'start', payload: { owner } })
  t.match(noOwner.body.errors, [{ field: 'payload.dueDate' }])
  t.notOk(
    noOwner.body.errors.some((e: { field: string }) => e.field === 'payload.owner'),
    'only the field still missing is named'
  )

  const started = await fire(action.id, { transition: 'start', payload: { owner, dueDate: '2026-12-15' } })
  t.equal(started.status, 200)
  t.equal(started.body.state, 'in-progress')

  const completed = await fire(action.id, {
    transition: 'complete',
    comment: 'Mirrors fitted',
    payload: { completionNote: 'Six mirrors fitted', completedOn: '2026-12-10' }
  })
  t.equal(completed.status, 200)
  t.equal(completed.body.state, 'awaiting-verification')
  t.same(
    completed.body.availableTransitions.map((x: { key: string }) => x.key),
    ['verify', 'reject']
  )

  const self = await fire(action.id, {
    transition: 'verify',
    payload: { effective: true, verificationNote: 'Checked on site' }
  })
  assertProblem(t, self, 403, 'workflow.self_approval', 'forbidden')
  await assertUnchanged(t, action.id, 'awaiting-verification', 3)

  const unverified = await fire(
    action.id,
    { transition: 'verify', payload: { effective: true } },
    { token: verifierKey }
  )
  t.match(unverified.body.errors, [{ field: 'payload.verificationNote' }])

  const verified = await fire(
    action.id,
    {
      transition: 'verify',
      comment: 'Near misses stopped',
      payload: { effective: true, verificationNote: 'No near misses in four weeks' }
    },
    { token: verifierKey }
  )
  t.equal(verified.status, 200)
  t.equal(verified.body.state, 'verified')
  t.equal(verified.body.version, 4)
  t.same(verified.body.availableTransitions, [], 'a final state offers no transitions')
  t.equal(verified.body.updatedBy.name, 'acme verifier key')
  t.same(
    verified.body.activity
      .filter((a: { action: string }) => a.action === 'transitioned')
      .map((a: { transition: unknown; comment: string | null }) => [a.transition, a.comment]),
    [
      [{ key: 'start', from: 'open', to: 'in-progress' }, null],
      [{ key: 'complete', from: 'in-progress', to: 'awaiting-verification' }, 'Mirrors fitted'],
      [{ key: 'verify', from: 'awaiting-verification', to: 'verified' }, 'Near misses stopped']
    ]
  )
  assertProblem(t, await fire(action.id, { transition: 'cancel' }), 409, 'transition.not_allowed', 'conflict')

  const list = await server.request('GET', '/api/v1/records?moduleKey=corrective-action&state=verified')
  t.same(
    list.body.items.map((r: { id: string }) => r.id),
    [action.id],
    'the list filter sees the new state'
  )
})

t.test('sends a corrective action back from verification for rework', async (t) => {
  const incident = await createIncident()
  const action = await create('corrective-action', {
    title: 'Repaint walkway',
    incident: incident.id,
    kind: 'preventive',
    owner,
    dueDate: '2027-01-10'
  })
  await fire(action.id, { transition: 'start' })
  await fire(action.id, { transition: 'complete', payload: { completionNote: 'Repainted', completedOn: '2027-01-05' } })
  const rejected = await fire(action.id, { transition: 'reject', comment: 'Paint already worn' })
  t.equal(rejected.status, 200)
  t.equal(rejected.body.state, 'in-progress')
  t.same(rejected.body.activity.at(-1).transition, { key: 'reject', from: 'awaiting-verification', to: 'in-progress' })
  t.equal(rejected.body.activity.at(-1).comment, 'Paint already worn')
})
