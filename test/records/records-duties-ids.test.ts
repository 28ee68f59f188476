import { assessmentModule, fixtureModules } from '../helpers/fixture-modules.ts'
import { userWithToken } from '../helpers/identity.ts'
import { defaultTenants, incidentPayload, startTestServer } from '../helpers/server.ts'
import t from '../helpers/tap.ts'

/**
 * Separation of duties: `approve` of an assessment must not be fired by the person named in
 * `author` (or `reviewer`). Each test launders the named person past the rule through a door a client has.
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

const person = () => userWithToken(server, 'acme', ['assessor', 'approver'])

async function submitted(payload: Record<string, unknown>) {
  const created = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'assessment', payload: { title: 'Forklift traffic in aisle 4', severity: 4, ...payload } }
  })
  if (created.status !== 201) throw new Error(`setup: create answered ${created.status} ${created.text}`)
  const res = await server.request('POST', `/api/v1/records/${created.body.id}:transition`, {
    body: { transition: 'submit' }
  })
  if (res.status !== 200) throw new Error(`setup: submit answered ${res.status} ${res.text}`)
  return created.body.id as string
}

const approve = (id: string, token: string, payload?: Record<string, unknown>) =>
  server.request('POST', `/api/v1/records/${id}:transition`, {
    token,
    body: { transition: 'approve', ...(payload ? { payload } : {}) }
  })

t.test('the author cannot approve by naming themselves author in upper case (a UUID the schema accepts)', async (t) => {
  const ann = await person()
  const bob = await person()
  const id = await submitted({ author: ann.id.toUpperCase(), reviewer: bob.id })
  const res = await approve(id, ann.token)
  t.equal(res.status, 403, 'the person named in author is refused, however the id is written')
  t.equal(res.body.code, 'workflow.separation_of_duties')
})

t.test('the author cannot approve by naming themselves author as urn:uuid:', async (t) => {
  const ann = await person()
  const bob = await person()
  const id = await submitted({ author: `urn:uuid:${ann.id}`, reviewer: bob.id })
  const res = await approve(id, ann.token)
  t.equal(res.status, 403, 'the person named in author is refused, however the id is written')
  t.equal(res.body.code, 'workflow.separation_of_duties')
})

t.test('the author cannot approve their own assessment by naming someone else author on the way', async (t) => {
  const ann = await person()
  const bob = await person()
  const vic = await person()
  const id = await submitted({ author: ann.id, reviewer: bob.id })
  const res = await approve(id, ann.token, { author: vic.id })
  t.equal(res.status, 403, 'the author as the record stood when approve was fired is refused')
  t.equal(res.body.code, 'workflow.separation_of_duties')
  const now = await server.request('GET', `/api/v1/records/${id}`)
  t.equal(now.body.state, 'submitted', 'the record is still submitted')
})

t.test(
  'a user id is kept in lower case without urn:uuid:, so the row rule that names its person finds the record',
  async (t) => {
    const owner = await userWithToken(server, 'acme', ['action-owner'])
    const incident = await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload() }
    })
    const action = await server.request('POST', '/api/v1/records', {
      body: {
        moduleKey: 'corrective-action',
        payload: {
          title: 'Fix the rail',
          incident: incident.body.id,
          kind: 'corrective',
          owner: owner.id.toUpperCase()
        }
      }
    })
    t.equal(action.status, 201, action.text)
    t.equal(action.body.payload.owner, owner.id, 'stored as the person is known')
    const seen = await server.request('GET', `/api/v1/records/${action.body.id}`, { token: owner.token })
    t.equal(seen.status, 200, 'the owner sees the action assigned to them')
    const patched = await server.request('PATCH', `/api/v1/records/${action.body.id}`, {
      body: { payload: { owner: `urn:uuid:${owner.id}` } }
    })
    t.equal(patched.status, 200)
    t.same(
      [patched.body.version, patched.body.activity.length],
      [1, 1],
      'the same person written otherwise is no change: nothing written'
    )
  }
)
