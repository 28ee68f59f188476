import t from '../helpers/tap.ts'
import { setClock, syncClock } from '../../core/clock.ts'
import { fixtureModules } from '../helpers/fixture-modules.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { defaultTenants, incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * Computed fields, defaults and rules (issue 30; docs/modules.md "Computed fields", "Defaults", "Rules") through every
 * door: REST create, PATCH and transition, a bulk load (creates and upserts), GraphQL mutations. A computed field sent
 * by a client is refused, naming it; the platform's value is stored, filtered and sorted on; a rule names its fields.
 */
const risk = {
  key: 'risk',
  version: '1.0.0',
  title: 'Risk assessment',
  numberPattern: 'RA-{seq:4}',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'likelihood', type: 'integer', minimum: 1, maximum: 5, required: true },
    { key: 'severity', type: 'integer', minimum: 1, maximum: 5, required: true },
    { key: 'riskRating', type: 'integer', computed: 'likelihood * severity', filterable: true, sortable: true },
    {
      key: 'riskBand',
      type: 'singleChoice',
      options: ['low', 'medium', 'high'],
      computed: "band(riskRating, [4, 'low'], [9, 'medium'], [25, 'high'])"
    },
    { key: 'assessedOn', type: 'date', default: 'today()' },
    { key: 'status', type: 'singleChoice', options: ['draft', 'final'], default: 'draft' },
    { key: 'startsOn', type: 'date' },
    { key: 'endsOn', type: 'date' },
    { key: 'reviewDate', type: 'date' }
  ],
  workflow: {
    initial: 'draft',
    states: [{ key: 'draft' }, { key: 'approved', requires: ['reviewDate'] }],
    transitions: [
      { key: 'approve', from: ['draft'], to: 'approved' },
      { key: 'reopen', from: ['approved'], to: 'draft' }
    ]
  },
  permissions: { assessor: ['read', 'create', 'update', 'transition:*'] },
  rules: [
    { check: 'endsOn >= startsOn', message: 'must not be before the start date', fields: ['endsOn'] },
    { check: 'reviewDate > today()', message: 'must be in the future to approve', on: { transitions: ['approve'] } }
  ]
}
const fixtures = fixtureModules([risk])
t.teardown(fixtures.remove)
const server = await startTestServer({
  modules: { directories: ['tenant-modules', fixtures.directory], packages: [] },
  tenants: { ...defaultTenants, acme: { ...defaultTenants.acme, modules: [...defaultTenants.acme.modules, 'risk'] } },
  clock: { controllable: true, refreshMs: 100 }
})
t.teardown(() => server.close())
const key = server.keys.acme
const todayUtc = () => new Date().toISOString().slice(0, 10)

const create = (payload: Record<string, unknown>) =>
  server.request('POST', '/api/v1/records', { body: { moduleKey: 'risk', payload } })
const patch = (id: string, payload: Record<string, unknown>) =>
  server.request('PATCH', `/api/v1/records/${id}`, { body: { payload } })
const transition = (id: string, name: string, payload?: Record<string, unknown>) =>
  server.request('POST', `/api/v1/records/${id}:transition`, { body: { transition: name, payload } })
const gql = (query: string, variables?: Record<string, unknown>) =>
  server.request('POST', '/api/graphql', { token: key, body: { query, variables } })
const base = { title: 'Forklift aisle', likelihood: 1, severity: 1 }

const readOnly = { status: 400, body: { code: 'field.invalid' } }

t.test('REST: a computed value sent on create is refused naming the field; the stored one is computed', async (t) => {
  const refused = await create({ ...base, riskRating: 25 })
  t.match(refused, readOnly)
  t.match(refused.body.errors, [{ pointer: '/payload/riskRating', field: 'payload.riskRating', code: 'readOnly' }])
  t.match(refused.body.detail, /payload\.riskRating is computed by the platform \(likelihood \* severity\)/)

  const before = todayUtc()
  const made = await create(base)
  t.equal(made.status, 201)
  t.match(made.body.payload, { riskRating: 1, riskBand: 'low', status: 'draft' })
  t.ok(
    [before, todayUtc()].includes(made.body.payload.assessedOn),
    'a date default of today() is the day of the create'
  )
  t.equal(
    (await create({ ...base, status: 'final', assessedOn: '2026-01-02' })).body.payload.status,
    'final',
    'a value sent wins'
  )
})

t.test('REST: a PATCH recomputes, and may not send the computed field either', async (t) => {
  const { id } = (await create(base)).body
  const refused = await patch(id, { riskRating: 25 })
  t.match(refused, readOnly)
  t.match(refused.body.errors, [{ pointer: '/payload/riskRating', code: 'readOnly' }])
  t.match(await patch(id, { riskRating: null }), readOnly, 'nor remove it')
  const changed = await patch(id, { likelihood: 3, severity: 4 })
  t.equal(changed.status, 200)
  t.match(changed.body.payload, { riskRating: 12, riskBand: 'high' })
  const changes = [...changed.body.activity.at(-1).changes].sort((a, b) => a.field.localeCompare(b.field))
  t.same(
    changes,
    [
      { field: 'likelihood', from: 1, to: 3 },
      { field: 'riskBand', from: 'low', to: 'high' },
      { field: 'riskRating', from: 1, to: 12 },
      { field: 'severity', from: 1, to: 4 }
    ],
    'the activity shows the computed changes beside the sent ones'
  )
})

t.test('lists filter and sort by a computed field as stored', async (t) => {
  for (const [likelihood, severity] of [
    [5, 5],
    [2, 3],
    [4, 4]
  ])
    t.equal((await create({ ...base, title: 'sorted', likelihood, severity })).status, 201)
  const list = await server.request(
    'GET',
    '/api/v1/records?moduleKey=risk&payload[title]=sorted&payload[riskRating][gte]=6&sort=-payload.riskRating'
  )
  t.equal(list.status, 200)
  t.same(
    list.body.items.map((r: { payload: { riskRating: number } }) => r.payload.riskRating),
    [25, 16, 6]
  )
})

t.test('bulk: a row sending a computed value fails alone; created and upserted rows are computed', async (t) => {
  const path = '/api/modules/risk/bulk'
  const first = await bulkCall(
    server.url,
    path,
    key,
    ndjson([
      { payload: { ...base, riskRating: 25 }, externalRef: 'R-1' },
      { payload: base, externalRef: 'R-2' },
      { payload: { ...base, startsOn: '2026-05-02', endsOn: '2026-05-01' }, externalRef: 'R-3' }
    ])
  )
  t.equal(first.status, 200)
  const [bad, good, broken] = first.lines
  t.match(bad, {
    line: 1,
    status: 'error',
    problem: { code: 'field.invalid', errors: [{ field: 'payload.riskRating', code: 'readOnly' }] }
  })
  t.match(good, { line: 2, status: 'created' })
  t.match(broken, {
    status: 'error',
    problem: { errors: [{ pointer: '/payload/endsOn', code: 'rule', detail: 'must not be before the start date' }] }
  })
  const stored = (await server.request('GET', `/api/v1/records/${good.id}`)).body.payload
  t.match(stored, { riskRating: 1, riskBand: 'low', status: 'draft' })
  t.ok(typeof stored.assessedOn === 'string', 'defaults apply to bulk creates')

  const again = await bulkCall(
    server.url,
    path,
    key,
    ndjson([
      { payload: { severity: 5 }, externalRef: 'R-2' },
      { payload: { riskRating: 3 }, externalRef: 'R-2' }
    ])
  )
  t.match(again.lines[0], { status: 'updated' })
  t.match(again.lines[1], { status: 'error', problem: { errors: [{ field: 'payload.riskRating', code: 'readOnly' }] } })
  t.match((await server.request('GET', `/api/v1/records/${good.id}`)).body.payload, {
    riskRating: 5,
    riskBand: 'medium'
  })
})

t.test('GraphQL: computed fields are outputs only; mutations store the computed value', async (t) => {
  const sent = await gql(
    'mutation { createRisk(payload: { title: "x", likelihood: 1, severity: 1, riskRating: 25 }) { id } }'
  )
  t.match(
    sent.body.errors,
    [{ message: /"riskRating" is not defined by type "RiskPayloadInput"/ }],
    'refused by the schema'
  )
  const made = await gql(
    'mutation { createRisk(payload: { title: "x", likelihood: 1, severity: 1 }) { id payload { riskRating riskBand status assessedOn } } }'
  )
  t.match(made.body.data.createRisk.payload, { riskRating: 1, riskBand: 'LOW', status: 'DRAFT' })
  const id = made.body.data.createRisk.id
  const changed = await gql(
    'mutation($id: ID!) { updateRisk(id: $id, payload: { severity: 4 }) { payload { riskRating riskBand } } }',
    { id }
  )
  t.same(changed.body.data.updateRisk.payload, { riskRating: 4, riskBand: 'LOW' })
  const patchSent = await gql('mutation($id: ID!) { updateRisk(id: $id, payload: { riskRating: 2 }) { id } }', { id })
  t.match(patchSent.body.errors, [{ message: /"riskRating" is not defined by type "RiskPayloadPatch"/ }])
  const rule = await gql(
    'mutation($id: ID!) { transitionRisk(id: $id, transition: APPROVE, payload: { reviewDate: "2020-01-01" }) { state } }',
    { id }
  )
  t.match(rule.body.errors, [
    {
      extensions: {
        code: 'field.invalid',
        errors: [{ pointer: '/payload/reviewDate', detail: 'must be in the future to approve' }]
      }
    }
  ])
  const sdl = (await server.request('GET', '/api/graphql/schema.graphql', { token: key })).text
  t.match(sdl, /Computed by the platform: likelihood \* severity \(read-only\)/)
})

t.test('a cross-field rule is checked on create and on changes to the fields it reads', async (t) => {
  const refused = await create({ ...base, startsOn: '2026-05-02', endsOn: '2026-05-01' })
  t.match(refused, { status: 400, body: { code: 'field.invalid' } })
  t.same(refused.body.errors, [
    { pointer: '/payload/endsOn', field: 'payload.endsOn', code: 'rule', detail: 'must not be before the start date' }
  ])
  const { id } = (await create({ ...base, startsOn: '2026-05-01', endsOn: '2026-05-01' })).body
  t.match(await patch(id, { startsOn: '2026-05-03' }), {
    status: 400,
    body: { errors: [{ pointer: '/payload/endsOn' }] }
  })
  t.equal((await patch(id, { title: 'renamed' })).status, 200, 'a change of other fields does not judge it')
  t.equal((await patch(id, { startsOn: '2026-04-01' })).status, 200)
})

t.test('a date rule on a transition reads the clock: a review date must be after today to approve', async (t) => {
  const { id } = (await create(base)).body
  t.match(await transition(id, 'approve'), {
    status: 400,
    body: { errors: [{ pointer: '/payload/reviewDate', code: 'guard' }] }
  })
  const past = await transition(id, 'approve', { reviewDate: '2020-01-01' })
  t.match(past, { status: 400, body: { code: 'field.invalid' } })
  t.same(past.body.errors, [
    {
      pointer: '/payload/reviewDate',
      field: 'payload.reviewDate',
      code: 'rule',
      detail: 'must be in the future to approve'
    }
  ])
  t.equal((await transition(id, 'approve', { reviewDate: todayUtc() })).status, 400, 'today is not in the future')
  // Set before, the review date is judged when the transition fires.
  t.equal((await patch(id, { reviewDate: '2021-06-01' })).status, 200, 'a PATCH is not an approval')
  t.match(await transition(id, 'approve'), { status: 400, body: { errors: [{ pointer: '/payload/reviewDate' }] } })
  const approved = await transition(id, 'approve', { reviewDate: '2999-01-01' })
  t.match(approved, { status: 200, body: { state: 'approved' } })
  t.equal((await transition(id, 'reopen')).status, 200, 'a transition the rule does not name is not judged by it')
})

t.test(
  'today() is the platform clock: moved to 2031, a review date in 2030 is past and the default is 2031',
  async (t) => {
    await setClock(server.platform.db.system, { fixedAt: new Date('2031-03-01T12:00:00Z') })
    await syncClock()
    t.teardown(async () => {
      await setClock(server.platform.db.system, { offsetMs: 0, fixedAt: null })
      await syncClock()
    })
    const made = await create(base)
    t.equal(made.body.payload.assessedOn, '2031-03-01', "the default is the clock's day")
    const refused = await transition(made.body.id, 'approve', { reviewDate: '2030-06-01' })
    t.match(refused, { status: 400, body: { errors: [{ pointer: '/payload/reviewDate', code: 'rule' }] } })
    t.match(await transition(made.body.id, 'approve', { reviewDate: '2031-03-02' }), { status: 200 })
  }
)

t.test('the module and the OpenAPI document describe computed fields, defaults and rules', async (t) => {
  const m = (await server.request('GET', '/api/v1/modules/risk')).body
  t.match(
    m.fields.find((f: { key: string }) => f.key === 'riskRating'),
    { computed: 'likelihood * severity' }
  )
  t.match(
    m.fields.find((f: { key: string }) => f.key === 'status'),
    { default: 'draft' }
  )
  t.same(m.rules, risk.rules)
  const doc = (await server.request('GET', '/api/docs/spec.json', { token: key })).body
  const props = doc.components.schemas.RiskPayload.properties
  t.match(props.riskRating, { readOnly: true, description: /Computed by the platform: `likelihood \* severity`/ })
  t.match(props.status, { default: 'draft' })
  t.match(props.assessedOn.description, /Default: the day of the create/)
  t.notOk(props.title.readOnly)
})

t.test("the bundled incident module's rule: the regulator is not notified before the incident occurred", async (t) => {
  const post = (payload: Record<string, unknown>) =>
    server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload } })
  const early = await post(incidentPayload({ regulatorNotified: true, regulatorNotifiedOn: '2026-11-19' }))
  t.match(early, { status: 400, body: { code: 'field.invalid' } })
  t.same(early.body.errors, [
    {
      pointer: '/payload/regulatorNotifiedOn',
      field: 'payload.regulatorNotifiedOn',
      code: 'rule',
      detail: 'cannot be before the day the incident occurred'
    }
  ])
  const sameDay = await post(incidentPayload({ regulatorNotified: true, regulatorNotifiedOn: '2026-11-20' }))
  t.equal(sameDay.status, 201, 'the day of the incident (occurredAt 2026-11-20T08:30Z) is not before it')
})
