import type { Principal } from '../../core/auth/principal.ts'
import { loadModules } from '../../core/modules/registry.ts'
import { transitionBlockers } from '../../plugins/records/records.duties.ts'
import { assessmentModule, fixtureModules } from '../helpers/fixture-modules.ts'
import { userWithToken, type TestUser } from '../helpers/identity.ts'
import { defaultTenants, incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'
import t, { type Test } from '../helpers/tap.ts'

/**
 * Separation of duties (issue 30): `approve` of an assessment must be fired by someone other than the `author` and
 * the `reviewer` the record names once approve has set its own fields, and other than whoever fired `submit`; the
 * person behind a token is who is compared. Through REST and GraphQL alike (bulk fires no transitions).
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

/** A person who may both assess and approve (and administer, to create service accounts). */
const assessorApprover = () => userWithToken(server, 'acme', ['assessor', 'approver', 'admin'])

/** An assessment created and submitted with the tenant key (so neither the creator nor the submitter is a person). */
async function submitted(payload: Record<string, unknown>, submitWith?: string) {
  const created = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'assessment', payload: { title: 'Forklift traffic in aisle 4', severity: 4, ...payload } }
  })
  if (created.status !== 201) throw new Error(`setup: create answered ${created.status} ${created.text}`)
  const res = await server.request('POST', `/api/v1/records/${created.body.id}:transition`, {
    token: submitWith,
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

async function refused(t: Test, res: Reply, id: string, conflicts: unknown[]) {
  t.equal(res.status, 403, '403')
  t.match(res.headers.get('content-type'), /^application\/problem\+json/)
  t.equal(res.body.code, 'workflow.separation_of_duties')
  t.equal(res.body.transition, 'approve')
  t.same(res.body.conflicts, conflicts, 'names each rule the caller breaks')
  const now = await server.request('GET', `/api/v1/records/${id}`)
  t.equal(now.body.state, 'submitted', 'the record is still submitted')
  t.equal(now.body.version, 2, 'and unchanged')
}

async function serviceAccount(creator: TestUser, name: string) {
  const res = await server.request('POST', '/api/v1/tokens', {
    token: creator.token,
    body: {
      type: 'service-account',
      name,
      roles: ['approver'],
      scopes: ['records:read:assessment', 'records:transition:assessment']
    }
  })
  if (res.status !== 201) throw new Error(`setup: token creation answered ${res.status} ${res.text}`)
  return res.body as { id: string; token: string }
}

t.test(
  'an assessor named as author cannot approve their own assessment, not even by naming themselves reviewer on the way',
  async (t) => {
    const ann = await assessorApprover()
    const bob = await assessorApprover()
    const id = await submitted({ author: ann.id })

    const asReviewer = await approve(id, ann.token, { reviewer: ann.id })
    await refused(t, asReviewer, id, [
      { rule: 'field', field: 'author' },
      { rule: 'field', field: 'reviewer' }
    ])
    t.match(asReviewer.body.detail, /the person named in "author", nor by the person named in "reviewer"/)

    const otherReviewer = await approve(id, ann.token, { reviewer: bob.id })
    await refused(t, otherReviewer, id, [{ rule: 'field', field: 'author' }])
  }
)

t.test(
  "an approver cannot approve a colleague's assessment that names the approver reviewer, given before or on the way",
  async (t) => {
    const colleague = await assessorApprover()
    const pat = await assessorApprover()
    const vic = await assessorApprover()

    const named = await submitted({ author: colleague.id, reviewer: pat.id })
    await refused(t, await approve(named, pat.token), named, [{ rule: 'field', field: 'reviewer' }])

    // The rule reads the record as approve leaves it: naming oneself reviewer on the way is the same.
    const onTheWay = await submitted({ author: colleague.id, reviewer: vic.id })
    await refused(t, await approve(onTheWay, pat.token, { reviewer: pat.id }), onTheWay, [
      { rule: 'field', field: 'reviewer' }
    ])

    // The record as approve finds it counts too: naming another reviewer on the way does not let the named reviewer
    // approve, nor would it let the author.
    await refused(t, await approve(named, pat.token, { reviewer: vic.id }), named, [
      { rule: 'field', field: 'reviewer' }
    ])
    // Once the record names vic reviewer, pat may approve.
    const renamed = await server.request('PATCH', `/api/v1/records/${named}`, {
      body: { payload: { reviewer: vic.id } }
    })
    t.equal(renamed.status, 200, renamed.text)
    t.equal((await approve(named, pat.token)).status, 200, 'pat approves once the record names vic reviewer')
  }
)

t.test(
  "the author's token, a service account they created, is refused too: the person behind it is compared",
  async (t) => {
    const ann = await assessorApprover()
    const robot = await serviceAccount(ann, 'approval robot')
    const reviewer = await assessorApprover()
    const id = await submitted({ author: ann.id, reviewer: reviewer.id })
    await refused(t, await approve(id, robot.token), id, [{ rule: 'field', field: 'author' }])

    const other = await assessorApprover()
    const otherRobot = await serviceAccount(other, 'second pair of eyes')
    const res = await approve(id, otherRobot.token)
    t.equal(res.status, 200, "another person's service account approves it")
    t.equal(res.body.state, 'approved')
    t.match(res.body.activity.at(-1).actor, { type: 'service-account', onBehalfOf: { userId: other.id } })
  }
)

t.test(
  'whoever submitted the assessment cannot approve it, through any credential of theirs; another person can',
  async (t) => {
    const sam = await assessorApprover()
    const author = await assessorApprover()
    const reviewer = await assessorApprover()
    const id = await submitted({ author: author.id, reviewer: reviewer.id }, sam.token)
    await refused(t, await approve(id, sam.token), id, [{ rule: 'transition', transition: 'submit' }])
    const samRobot = await serviceAccount(sam, 'sam robot')
    const viaRobot = await approve(id, samRobot.token)
    await refused(t, viaRobot, id, [{ rule: 'transition', transition: 'submit' }])
    t.match(viaRobot.body.detail, /a person who fired "submit" on this record/)

    const vic = await assessorApprover()
    const res = await approve(id, vic.token)
    t.equal(res.status, 200, 'a person who is neither author, reviewer nor submitter approves')
    t.equal(res.body.state, 'approved')
    t.match(res.body.activity.at(-1), { action: 'transitioned', actor: { id: vic.id }, transition: { key: 'approve' } })
  }
)

t.test('GraphQL refuses the same approval with the same code, its conflicts in the extensions', async (t) => {
  const ann = await assessorApprover()
  const id = await submitted({ author: ann.id })
  const res = await server.request('POST', '/api/graphql', {
    token: ann.token,
    body: {
      query: `mutation($id: ID!, $p: AssessmentPayloadPatch) {
        transitionAssessment(id: $id, transition: APPROVE, payload: $p) { id state }
      }`,
      variables: { id, p: { reviewer: ann.id } }
    }
  })
  t.equal(res.status, 200)
  t.equal(res.body.data?.transitionAssessment ?? null, null)
  t.match(res.body.errors[0].extensions, {
    code: 'workflow.separation_of_duties',
    status: 403,
    transition: 'approve',
    conflicts: [
      { rule: 'field', field: 'author' },
      { rule: 'field', field: 'reviewer' }
    ]
  })
  const now = await server.request('GET', `/api/v1/records/${id}`)
  t.equal(now.body.version, 2, 'nothing changed')
})

t.test('transitionBlockers says why a transition is unavailable without firing it', async (t) => {
  const registry = await loadModules({ directories: [fixtures.directory], packages: [] })
  const module = registry.get('assessment')!
  const person = (userId: string, roles: string[]): Principal => ({
    tenantId: 'acme',
    credentialId: `${userId}-token`,
    kind: 'personal',
    actor: { type: 'user', id: userId, name: userId },
    userId,
    roles,
    scopes: 'all'
  })
  const sam = person('sam', ['approver'])
  const record = {
    state: 'submitted',
    payload: { title: 'x', author: 'ann' },
    createdBy: { type: 'api-key' as const, id: 'key', name: 'key' },
    transitions: [
      { key: 'submit', actor: { ...sam.actor, token: { type: 'personal' as const, id: 'other', name: 'x' } } }
    ]
  }
  t.same(transitionBlockers(sam, module, record), [
    {
      transition: 'approve',
      blockers: [
        {
          code: 'workflow.separation_of_duties',
          detail:
            'Transition "approve" may not be fired by a person who fired "submit" on this record, and the caller is that person (a token acts for the person who created it); another person with the role must fire it.',
          conflicts: [{ rule: 'transition', transition: 'submit' }]
        },
        {
          code: 'field.invalid',
          detail: 'To enter "approved", reviewer must hold a value (the transition may set them).',
          missingFields: ['reviewer']
        }
      ]
    }
  ])
  const ann = person('ann', ['assessor'])
  t.same(
    transitionBlockers(ann, module, record)[0].blockers.map((b) => [b.code, b.conflicts]),
    [
      ['permission.denied', undefined],
      ['workflow.separation_of_duties', [{ rule: 'field', field: 'author' }]],
      ['field.invalid', undefined]
    ]
  )
  const vic = person('vic', ['approver'])
  t.same(transitionBlockers(vic, module, { ...record, payload: { ...record.payload, reviewer: 'pat' } }), [
    { transition: 'approve', blockers: [] }
  ])
})

t.test(
  'a corrective action is verified by neither its owner nor whoever marked it complete (the bundled module)',
  async (t) => {
    const [carl, olga, vera] = await Promise.all([1, 2, 3].map(() => userWithToken(server, 'acme', ['safety-manager'])))
    const incident = await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload() }
    })
    const action = await server.request('POST', '/api/v1/records', {
      body: {
        moduleKey: 'corrective-action',
        payload: { title: 'Fit mirrors', incident: incident.body.id, kind: 'corrective', owner: olga.id }
      }
    })
    const id = action.body.id as string
    const fire = (token: string | undefined, transition: string, payload?: Record<string, unknown>) =>
      server.request('POST', `/api/v1/records/${id}:transition`, { token, body: { transition, payload } })
    t.equal((await fire(undefined, 'start', { dueDate: '2026-12-15' })).status, 200)
    t.equal((await fire(carl.token, 'complete', { completionNote: 'Fitted', completedOn: '2026-12-10' })).status, 200)
    const verifying = { effective: true, verificationNote: 'No near misses since' }

    const byCompleter = await fire(carl.token, 'verify', verifying)
    t.equal(byCompleter.status, 403)
    t.same(byCompleter.body.conflicts, [{ rule: 'transition', transition: 'complete' }])
    const byOwner = await fire(olga.token, 'verify', verifying)
    t.equal(byOwner.status, 403)
    t.same(byOwner.body.conflicts, [{ rule: 'field', field: 'owner' }])
    const byCreator = await fire(undefined, 'verify', verifying)
    t.equal(byCreator.body.code, 'workflow.self_approval', "the creator's refusal keeps its code")

    const verified = await fire(vera.token, 'verify', verifying)
    t.equal(verified.status, 200, 'another safety manager verifies it')
    t.equal(verified.body.state, 'verified')
  }
)

t.test(
  'a record says which of its transitions the separation of duties holds the caller apart from, and why, before any is fired',
  async (t) => {
    const author = await assessorApprover()
    const submitter = await assessorApprover()
    const other = await assessorApprover()
    const id = await submitted({ author: author.id }, submitter.token)
    const approveOf = async (token: string) =>
      (await server.request('GET', `/api/v1/records/${id}`, { token })).body.availableTransitions.find(
        (x: { key: string }) => x.key === 'approve'
      )
    t.match(await approveOf(author.token), {
      refusal: { code: 'workflow.separation_of_duties', conflicts: [{ rule: 'field', field: 'author' }] }
    })
    t.match(await approveOf(submitter.token), {
      refusal: { code: 'workflow.separation_of_duties', conflicts: [{ rule: 'transition', transition: 'submit' }] }
    })
    t.notOk('refusal' in (await approveOf(other.token)), 'another person is not held apart')
    // What it says is what firing answers.
    t.equal((await approve(id, author.token)).body.code, 'workflow.separation_of_duties')

    const gql = await server.request('POST', '/api/graphql', {
      token: submitter.token,
      body: {
        query: `query($id: ID!) { assessment(id: $id) { availableTransitions { key refusal { code detail } } } }`,
        variables: { id }
      }
    })
    t.match(gql.body.data.assessment.availableTransitions, [
      { key: 'approve', refusal: { code: 'workflow.separation_of_duties', detail: /fired "submit"/ } }
    ])
    // A list's records too: the activity the rule on earlier transitions reads is read with them (a statement of its
    // own shape: a list of a module without such a rule, run first, selects no activity).
    await server.request('POST', '/api/graphql', {
      body: { query: '{ incidents(first: 50) { nodes { availableTransitions { key } } } }' }
    })
    const listed = await server.request('POST', '/api/graphql', {
      token: submitter.token,
      body: { query: '{ assessments(first: 50) { nodes { id availableTransitions { key refusal { code } } } } }' }
    })
    const node = listed.body.data.assessments.nodes.find((n: { id: string }) => n.id === id)
    t.match(node.availableTransitions, [{ key: 'approve', refusal: { code: 'workflow.separation_of_duties' } }])
  }
)
