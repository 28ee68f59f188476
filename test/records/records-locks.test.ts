import { assessmentModule, fixtureModules } from '../helpers/fixture-modules.ts'
import { userWithToken } from '../helpers/identity.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { defaultTenants, incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'
import t, { type Test } from '../helpers/tap.ts'

/**
 * Locks by state (issue 30): a closed incident's core fields (the bundled module locks them) and an approved
 * assessment's rating cannot be changed by a client, through a PATCH, a bulk update row or a GraphQL update, until
 * a transition leads out of the lock; a transition may set them only when the state it enters does not lock them.
 */

const fixtures = fixtureModules([assessmentModule])
t.teardown(fixtures.remove)
const server = await startTestServer({
  modules: { directories: ['tenant-modules', fixtures.directory], packages: [] },
  tenants: {
    ...defaultTenants,
    acme: { ...defaultTenants.acme, modules: [...defaultTenants.acme.modules, 'assessment'] }
  }
})
t.teardown(() => server.close())
// The tenant key creates and submits assessments; a person who did neither approves them.
const approver = await userWithToken(server, 'acme', ['approver'])

const fire = (id: string, transition: string, payload?: Record<string, unknown>, token?: string) =>
  server.request('POST', `/api/v1/records/${id}:transition`, {
    token,
    body: { transition, ...(payload ? { payload } : {}) }
  })
const patch = (id: string, payload: Record<string, unknown>) =>
  server.request('PATCH', `/api/v1/records/${id}`, { body: { payload } })
const get = async (id: string) => (await server.request('GET', `/api/v1/records/${id}`)).body

/** An incident dismissed straight to `closed` (which locks its core fields). */
async function closedIncident(externalRef?: string) {
  const created = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload(), ...(externalRef ? { externalRef } : {}) }
  })
  if (created.status !== 201) throw new Error(`setup: create answered ${created.status} ${created.text}`)
  const closed = await fire(created.body.id, 'dismiss', { closureNote: 'Not an incident: a planned drill' })
  if (closed.status !== 200) throw new Error(`setup: dismiss answered ${closed.status} ${closed.text}`)
  return closed.body as { id: string; version: number }
}

function lockedProblem(t: Test, problem: Record<string, any>, fields: string[], state = 'closed') {
  t.equal(problem.code, 'field.locked')
  t.equal(problem.status, 409)
  t.equal(problem.state, state, 'names the state')
  t.same(
    problem.errors.map((e: { field: string; code: string }) => [e.field, e.code]),
    fields.map((f) => [`payload.${f}`, 'locked']),
    'names each locked field'
  )
}

async function unchanged(t: Test, id: string, version: number) {
  const now = await get(id)
  t.equal(now.version, version, 'the record is unchanged')
  t.equal(now.activity.length, version, 'and its activity has no new entry')
}

t.test(
  'a closed incident refuses a PATCH of a locked field, naming it, the state and reopen; nothing changes',
  async (t) => {
    const incident = await closedIncident()
    const res: Reply = await patch(incident.id, { severity: 'high', immediateActions: 'Cordoned off' })
    t.match(res.headers.get('content-type'), /^application\/problem\+json/)
    t.match(res.body.type, /\/conflict$/)
    lockedProblem(t, res.body, ['severity'])
    t.same(res.body.unlockedBy, [{ key: 'reopen', to: 'investigating' }], 'the transition that leads out of the lock')
    t.match(res.body.detail, /"severity" cannot be changed: state "closed" locks it; to change it, fire "reopen"/)
    await unchanged(t, incident.id, incident.version)

    const many = await patch(incident.id, { title: 'Renamed', site: 'York DC' })
    lockedProblem(t, many.body, ['title', 'site'])
  }
)

t.test(
  'a closed incident still takes changes to fields it does not lock, and its locked values sent unchanged',
  async (t) => {
    const incident = await closedIncident()
    const res = await patch(incident.id, { severity: 'medium', immediateActions: 'Aisle 4 cordoned off' })
    t.equal(res.status, 200, 'severity is sent with the value it has: nothing locked changes')
    t.same(res.body.activity.at(-1).changes, [{ field: 'immediateActions', from: null, to: 'Aisle 4 cordoned off' }])
  }
)

t.test(
  'after reopening, the field can be changed, and the activity shows the reopening before the change',
  async (t) => {
    const incident = await closedIncident()
    t.equal((await patch(incident.id, { severity: 'high' })).status, 409)
    const reopened = await fire(incident.id, 'reopen', { investigationLead: '2c9d6f1e-7b3a-4e58-9f0d-1a2b3c4d5e6f' })
    t.equal(reopened.status, 200)
    const res = await patch(incident.id, { severity: 'high' })
    t.equal(res.status, 200, 'investigating does not lock severity')
    t.equal(res.body.payload.severity, 'high')
    t.match(res.body.activity.slice(-2), [
      { action: 'transitioned', transition: { key: 'reopen', from: 'closed', to: 'investigating' } },
      { action: 'updated', changes: [{ field: 'severity', from: 'medium', to: 'high' }] }
    ])
  }
)

t.test('a bulk update row of a locked field is refused with the same code; the other rows load', async (t) => {
  const incident = await closedIncident('LOCK-1')
  const res = await bulkCall(
    server.url,
    '/api/modules/incident/bulk',
    server.keys.acme,
    ndjson([
      { externalRef: 'LOCK-1', payload: { severity: 'high' } },
      { externalRef: 'LOCK-1', payload: { immediateActions: 'Cordoned off' } },
      { payload: incidentPayload({ title: 'Another one' }) }
    ])
  )
  t.equal(res.status, 200)
  t.match(res.lines[0], { line: 1, externalRef: 'LOCK-1', status: 'error' })
  lockedProblem(t, res.lines[0].problem, ['severity'])
  t.same(res.lines[0].problem.unlockedBy, [{ key: 'reopen', to: 'investigating' }])
  t.match(res.lines[1], { line: 2, status: 'updated' })
  t.match(res.lines[2], { line: 3, status: 'created' })
  const now = await get(incident.id)
  t.equal(now.payload.severity, 'medium', 'severity is unchanged')
})

t.test('a GraphQL update of a locked field is refused with the same code in its error extensions', async (t) => {
  const incident = await closedIncident()
  const res = await server.request('POST', '/api/graphql', {
    body: {
      query: 'mutation($id: ID!, $p: IncidentPayloadPatch!) { updateIncident(id: $id, payload: $p) { id version } }',
      variables: { id: incident.id, p: { severity: 'HIGH' } }
    }
  })
  t.equal(res.status, 200)
  t.equal(res.body.data?.updateIncident ?? null, null)
  lockedProblem(t, res.body.errors[0].extensions, ['severity'])
  await unchanged(t, incident.id, incident.version)
})

t.test('a transition may set a locked field entering the lock or leaving it, not staying in it', async (t) => {
  const created = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'assessment', payload: { title: 'Racking inspection', severity: 3 } }
  })
  const id = created.body.id as string
  t.equal((await fire(id, 'submit')).status, 200)
  const approved = await fire(
    id,
    'approve',
    { severity: 4, reviewer: '2c9d6f1e-7b3a-4e58-9f0d-1a2b3c4d5e6f' },
    approver.token
  )
  t.equal(approved.status, 200, 'approve sets severity on the way into the lock')

  const annotated = await fire(id, 'annotate', { severity: 5 })
  lockedProblem(t, annotated.body, ['severity'], 'approved')
  t.match(annotated.body.detail, /and so does "approved"/)
  t.same(annotated.body.unlockedBy, [{ key: 'reopen', to: 'draft' }])
  t.equal((await fire(id, 'annotate', { notes: 'Checked' })).status, 200, 'annotate sets what approved leaves open')

  const reopened = await fire(id, 'reopen', { severity: 2 })
  t.equal(reopened.status, 200, 'reopen sets severity on the way out of the lock')
  t.equal(reopened.body.payload.severity, 2)
})

t.test('a state that locks the whole payload refuses any change, and says no transition leads out', async (t) => {
  const created = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'assessment', payload: { title: 'Old assessment' } }
  })
  const id = created.body.id as string
  await fire(id, 'submit')
  await fire(id, 'approve', { reviewer: '2c9d6f1e-7b3a-4e58-9f0d-1a2b3c4d5e6f' }, approver.token)
  t.equal((await fire(id, 'archive')).status, 200)
  const res = await patch(id, { notes: 'Late note' })
  lockedProblem(t, res.body, ['notes'], 'archived')
  t.same(res.body.unlockedBy, [])
  t.match(res.body.detail, /no transition of the workflow leads out of the lock/)
})

t.test(
  'the module, the OpenAPI document and the GraphQL schema describe the locks and the separation, from the definition',
  async (t) => {
    const module = await server.request('GET', '/api/v1/modules/assessment')
    t.equal(module.status, 200)
    t.match(module.body.workflow.states, [
      {},
      {},
      { key: 'approved', locks: ['severity', 'likelihood'] },
      { locks: ['*'] }
    ])
    t.match(module.body.workflow.transitions[1], {
      key: 'approve',
      separateFrom: { fields: ['author', 'reviewer'], transitions: ['submit'] }
    })

    const doc = (await server.request('GET', '/api/docs/spec.json')).body
    const patchSchema = doc.components.schemas.AssessmentPayloadPatch
    t.match(patchSchema.description, /`approved` locks severity, likelihood; `archived` locks \*/)
    t.match(patchSchema.properties.severity.description, /Locked \(read-only to clients\) in states approved, archived/)
    t.match(patchSchema.properties.title.description, /in state archived:/)
    t.match(doc.components.schemas.AssessmentState.description, /`approved`, locks severity, likelihood/)
    t.match(
      doc.components.schemas.AssessmentTransition.description,
      /`approve`: submitted → approved \(roles: approver\), not by the person named in author, the person named in reviewer, whoever fired submit on the record/
    )
    t.match(
      doc.components.schemas.CorrectiveActionTransition.description,
      /`verify`: .*not by the record's creator, the person named in owner, whoever fired complete/
    )

    const sdl = (await server.request('GET', '/api/graphql/schema.graphql')).text
    const patchInput = sdl.slice(sdl.indexOf('input AssessmentPayloadPatch'))
    t.match(
      patchInput.slice(0, patchInput.indexOf('}')),
      /Locked \(read-only to clients\) in states approved, archived[^"]*"""\s*severity: Int/
    )
  }
)
