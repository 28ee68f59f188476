import { getIntrospectionQuery } from 'graphql'
import { userWithToken } from '../helpers/identity.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import t from '../helpers/tap.ts'

/**
 * The three modules bundled with issue 30, written only against the SDK (tenant-modules/risk-assessment,
 * permit-to-work, environmental-monitoring): for each, what makes it what it is, over HTTP. A rating and an exceedance
 * the platform computes and refuses from clients; a reviewer who is the assessor, a past review date, a permit that
 * ends before it starts and a self-approval refused; an exceedance reviewed only with a corrective action; what was
 * approved locked. GraphQL and the OpenAPI document describe the modules from their definitions.
 */
// The demo tenant's modules (config/default.json): the six bundled ones.
const modules = [
  'incident',
  'corrective-action',
  'inspection',
  'risk-assessment',
  'permit-to-work',
  'environmental-monitoring'
]
const server = await startTestServer({ tenants: { acme: { name: 'Acme Chemicals', modules } } })
t.teardown(() => server.close())

const create = (moduleKey: string, payload: Record<string, unknown>, token?: string) =>
  server.request('POST', '/api/v1/records', { token, body: { moduleKey, payload } })
const patch = (id: string, payload: Record<string, unknown>, token?: string) =>
  server.request('PATCH', `/api/v1/records/${id}`, { token, body: { payload } })
const fire = (id: string, transition: string, payload?: Record<string, unknown>, token?: string) =>
  server.request('POST', `/api/v1/records/${id}:transition`, {
    token,
    body: { transition, ...(payload ? { payload } : {}) }
  })
async function made(moduleKey: string, payload: Record<string, unknown>) {
  const res = await create(moduleKey, payload)
  if (res.status !== 201) throw new Error(`setup: create ${moduleKey} answered ${res.status} ${res.text}`)
  return res.body as { id: string; number: string; payload: Record<string, unknown> }
}
async function fired(id: string, transition: string, payload?: Record<string, unknown>, token?: string) {
  const res = await fire(id, transition, payload, token)
  if (res.status !== 200) throw new Error(`setup: ${transition} answered ${res.status} ${res.text}`)
  return res.body
}
const ruleOn = (field: string, detail: RegExp | string) => ({
  status: 400,
  body: { code: 'field.invalid', errors: [{ pointer: `/payload/${field}`, code: 'rule', detail }] }
})
const readOnlyField = (field: string) => ({
  status: 400,
  body: { code: 'field.invalid', errors: [{ pointer: `/payload/${field}`, code: 'readOnly' }] }
})
const days = (n: number) => new Date(Date.now() + n * 86_400_000)

// ---------------------------------------------------------------- risk assessment

const assessment = (extra: Record<string, unknown> = {}) => ({
  title: 'Changing forklift gas cylinders',
  site: 'Leeds DC',
  hazards: [{ hazard: 'Cylinder falls on foot', whoAtRisk: ['employees'], existingControls: 'Safety boots' }],
  likelihood: 3,
  severity: 4,
  ...extra
})

t.test(
  'a risk assessment gets its score and banded rating from the platform, which refuses them from clients',
  async (t) => {
    const ra = await made('risk-assessment', assessment())
    t.match(ra.payload, { riskScore: 12, riskRating: 'high' }, '3 × 4 = 12, banded high')
    t.match(ra.number, /^RA-\d{4}-0001$/)
    t.match(ra.payload.assessedOn, /^\d{4}-\d{2}-\d{2}$/, 'assessed on defaults to the day of the create')

    t.match(await create('risk-assessment', assessment({ riskRating: 'low' })), readOnlyField('riskRating'))
    t.match(await create('risk-assessment', assessment({ riskScore: 1 })), readOnlyField('riskScore'))
    t.match(await patch(ra.id, { riskRating: 'low' }), readOnlyField('riskRating'))

    const lowered = await patch(ra.id, { likelihood: 1, residualLikelihood: 1, residualSeverity: 2 })
    t.match(lowered.body.payload, { riskScore: 4, riskRating: 'low', residualRating: 'low' }, 'recomputed on a PATCH')
    const worst = await patch(ra.id, { likelihood: 5, severity: 5 })
    t.match(worst.body.payload, { riskScore: 25, riskRating: 'very-high' })

    const list = await server.request('GET', '/api/v1/records?moduleKey=risk-assessment&payload[riskRating]=very-high')
    t.same(
      list.body.items.map((r: { id: string }) => r.id),
      [ra.id],
      'the stored rating filters the register'
    )
  }
)

t.test('approving a risk assessment needs a reviewer other than the assessor and a review date ahead', async (t) => {
  const assessor = await userWithToken(server, 'acme', ['assessor'])
  const manager = await userWithToken(server, 'acme', ['safety-manager'])
  const other = await userWithToken(server, 'acme', ['safety-manager'])
  const { id } = await made('risk-assessment', assessment({ assessor: assessor.id }))
  await fired(id, 'submit', undefined, assessor.token)
  const future = days(365).toISOString().slice(0, 10)

  t.match(
    await fire(id, 'approve', { reviewer: assessor.id, reviewDate: future }, manager.token),
    ruleOn('reviewer', 'must be someone other than the assessor')
  )
  t.match(
    await fire(id, 'approve', { reviewer: other.id, reviewDate: '2020-06-30' }, manager.token),
    ruleOn('reviewDate', 'must be in the future to approve')
  )
  t.match(
    await fire(id, 'approve', { reviewer: other.id, reviewDate: new Date().toISOString().slice(0, 10) }, manager.token),
    ruleOn('reviewDate', 'must be in the future to approve'),
    'today is not in the future'
  )
  t.match(
    await patch(id, { reviewer: assessor.id }),
    ruleOn('reviewer', 'must be someone other than the assessor'),
    'nor named reviewer by a PATCH'
  )

  // The assessor holding the safety-manager role too is still the assessor: separation of duties, 403.
  const both = await userWithToken(server, 'acme', ['assessor', 'safety-manager'])
  const own = await made('risk-assessment', assessment({ assessor: both.id }))
  await fired(own.id, 'submit')
  const self = await fire(own.id, 'approve', { reviewer: other.id, reviewDate: future }, both.token)
  t.match(self, {
    status: 403,
    body: { code: 'workflow.separation_of_duties', conflicts: [{ rule: 'field', field: 'assessor' }] }
  })

  const approved = await fire(id, 'approve', { reviewer: other.id, reviewDate: future }, manager.token)
  t.match(approved, { status: 200, body: { state: 'approved', payload: { reviewer: other.id, reviewDate: future } } })
})

t.test('an approved risk assessment is locked until it is revised back to draft', async (t) => {
  const manager = await userWithToken(server, 'acme', ['safety-manager'])
  const { id } = await made('risk-assessment', assessment())
  await fired(id, 'submit', { assessor: manager.id })
  const reviewer = await userWithToken(server, 'acme', ['safety-manager'])
  // Submitted with the tenant key, approved by a person: the key may not fire both (it is compared by itself).
  await fired(
    id,
    'approve',
    { reviewer: reviewer.id, reviewDate: days(200).toISOString().slice(0, 10) },
    reviewer.token
  )

  const locked = await patch(id, { severity: 1 })
  t.match(locked, {
    status: 409,
    body: {
      code: 'field.locked',
      state: 'approved',
      unlockedBy: [{ key: 'revise', to: 'draft' }],
      errors: [{ field: 'payload.severity', code: 'locked' }]
    }
  })
  t.equal(
    (await patch(id, { reviewNote: 'Seen on the floor walk' })).status,
    200,
    'a note is not part of what was approved'
  )

  const revised = await fire(id, 'revise', { severity: 1 })
  t.match(revised, { status: 200, body: { state: 'draft', payload: { severity: 1, riskScore: 3, riskRating: 'low' } } })
  t.match(revised.body.activity.at(-1), { action: 'transition', changes: [{ field: 'severity', from: 4, to: 1 }] })
})

// ---------------------------------------------------------------- permit to work

const permit = (extra: Record<string, unknown> = {}) => ({
  title: 'Weld bracket on tank T-4',
  permitType: 'hot-work',
  site: 'Leeds DC',
  validFrom: days(1).toISOString(),
  validTo: new Date(days(1).getTime() + 8 * 3_600_000).toISOString(),
  precautions: ['fire-watch', 'extinguisher'],
  ...extra
})

t.test('a permit must end after it starts, and within a week', async (t) => {
  const requester = await userWithToken(server, 'acme', ['reporter'])
  const from = days(1)
  const backwards = await create(
    'permit-to-work',
    permit({
      requestedBy: requester.id,
      validFrom: from.toISOString(),
      validTo: new Date(from.getTime() - 60_000).toISOString()
    })
  )
  t.match(backwards, ruleOn('validTo', 'must be after the start of validity'))
  t.match(
    await create(
      'permit-to-work',
      permit({ requestedBy: requester.id, validTo: from.toISOString(), validFrom: from.toISOString() })
    ),
    ruleOn('validTo', 'must be after the start of validity'),
    'nor at the same moment'
  )
  t.match(
    await create('permit-to-work', permit({ requestedBy: requester.id, validTo: days(10).toISOString() })),
    ruleOn('validTo', 'must be at most 7 days after the start of validity')
  )
  const ok = await create('permit-to-work', permit({ requestedBy: requester.id }))
  t.match(ok, { status: 201, body: { state: 'requested', number: /^PTW-\d{4}-00001$/ } })
  t.match(
    await patch(ok.body.id, { validTo: ok.body.payload.validFrom }),
    ruleOn('validTo', 'must be after the start of validity')
  )
})

t.test('nobody approves a permit they requested or raised: separation of duties, and the issuer field', async (t) => {
  const issuer = await userWithToken(server, 'acme', ['permit-issuer'])
  const colleague = await userWithToken(server, 'acme', ['permit-issuer'])
  const third = await userWithToken(server, 'acme', ['permit-issuer'])

  // Raised by the issuer themselves (the creator), for a colleague.
  const raised = await create('permit-to-work', permit({ requestedBy: colleague.id }), issuer.token)
  t.equal(raised.status, 201)
  const own = await fire(raised.body.id, 'approve', { issuer: issuer.id }, issuer.token)
  t.match(own, { status: 403, body: { code: 'workflow.self_approval' } })

  // Requested by the issuer, raised with the tenant key.
  const { id } = await made('permit-to-work', permit({ requestedBy: issuer.id }))
  const requested = await fire(id, 'approve', { issuer: third.id }, issuer.token)
  t.match(requested, {
    status: 403,
    body: { code: 'workflow.separation_of_duties', conflicts: [{ rule: 'field', field: 'requestedBy' }] }
  })
  t.match(
    await fire(id, 'approve', { issuer: issuer.id }, third.token),
    ruleOn('issuer', 'cannot be the person who requested the permit'),
    'nor named issuing authority by whoever approves it'
  )
  const approved = await fire(id, 'approve', { issuer: third.id }, third.token)
  t.match(approved, { status: 200, body: { state: 'approved', payload: { issuer: third.id } } })
})

t.test(
  "an approved permit's scope is locked; it is started, then closed or expired, and stays as it ended",
  async (t) => {
    const requester = await userWithToken(server, 'acme', ['reporter'])
    const issuer = await userWithToken(server, 'acme', ['permit-issuer'])
    const { id } = await made('permit-to-work', permit({ requestedBy: requester.id }))
    await fired(id, 'approve', { issuer: issuer.id }, issuer.token)

    t.match(await patch(id, { validTo: days(3).toISOString() }), {
      status: 409,
      body: { code: 'field.locked', state: 'approved', errors: [{ field: 'payload.validTo' }] }
    })
    t.match(await patch(id, { permitType: 'general', precautions: [] }), {
      status: 409,
      body: { code: 'field.locked' }
    })
    t.equal(
      (await patch(id, { gasReadings: 'O2 20.9 %, LEL 0 %' })).status,
      200,
      'gas readings are recorded after approval'
    )

    await fired(id, 'start-work', undefined, issuer.token)
    t.match(await patch(id, { site: 'York' }), { status: 409, body: { state: 'active' } })
    t.match(await fire(id, 'close', undefined, issuer.token), { status: 400 }, 'closing needs the hand-back')
    const closed = await fire(
      id,
      'close',
      { workAreaSafe: true, handBackNote: 'Area clear, fire watch 60 min' },
      issuer.token
    )
    t.match(closed, { status: 200, body: { state: 'closed' } })
    t.match(await patch(id, { handBackNote: 'edited' }), {
      status: 409,
      body: { code: 'field.locked', state: 'closed' }
    })

    const other = await made('permit-to-work', permit({ requestedBy: requester.id }))
    await fired(other.id, 'approve', { issuer: issuer.id }, issuer.token)
    t.match(await fire(other.id, 'expire', undefined, issuer.token), { status: 200, body: { state: 'expired' } })
    t.match(await fire(other.id, 'start-work', undefined, issuer.token), { status: 409 }, 'an expired permit is final')
  }
)

// ---------------------------------------------------------------- environmental monitoring

const measurement = (extra: Record<string, unknown> = {}) => ({
  monitoringPoint: 'Outfall 2',
  site: 'Leeds DC',
  parameter: 'cod',
  value: 180,
  unit: 'mg-l',
  upperLimit: 125,
  sampledAt: '2026-11-24T09:15:00Z',
  ...extra
})

t.test('the platform flags an exceedance from the value and the limits, and refuses it from clients', async (t) => {
  t.match(
    (await made('environmental-monitoring', measurement())).payload,
    { exceedance: true },
    'above the upper limit'
  )
  const within = await made('environmental-monitoring', measurement({ value: 90 }))
  t.match(within.payload, { exceedance: false })
  t.match(
    (
      await made(
        'environmental-monitoring',
        measurement({ parameter: 'ph', unit: 'ph-units', value: 5.2, lowerLimit: 6, upperLimit: 9 })
      )
    ).payload,
    {
      exceedance: true
    },
    'below the lower limit'
  )
  t.match(
    (await made('environmental-monitoring', measurement({ upperLimit: undefined }))).payload,
    { exceedance: false },
    'no limits, no exceedance'
  )

  t.match(await create('environmental-monitoring', measurement({ exceedance: false })), readOnlyField('exceedance'))
  t.match(await patch(within.id, { exceedance: true }), readOnlyField('exceedance'))
  t.match((await patch(within.id, { value: 130 })).body.payload, { exceedance: true }, 'recomputed on a PATCH')
  t.match(
    await create('environmental-monitoring', measurement({ lowerLimit: 200 })),
    ruleOn('upperLimit', 'cannot be below the lower limit')
  )

  const flagged = await server.request(
    'GET',
    '/api/v1/records?moduleKey=environmental-monitoring&payload[exceedance]=true&payload[site]=Leeds%20DC'
  )
  t.equal(flagged.status, 200)
  t.ok(
    flagged.body.items.every((r: { payload: { exceedance: boolean } }) => r.payload.exceedance === true),
    'the exceedances filter'
  )
  t.ok(flagged.body.items.some((r: { id: string }) => r.id === within.id))
})

t.test(
  'a bulk load of measurements computes each exceedance; a row that sends one, or a permit ending first, fails alone',
  async (t) => {
    const loaded = await bulkCall(
      server.url,
      '/api/modules/environmental-monitoring/bulk',
      server.keys.acme,
      ndjson([
        { payload: measurement({ monitoringPoint: 'Bulk 1' }), externalRef: 'LAB-1' },
        { payload: measurement({ monitoringPoint: 'Bulk 2', exceedance: false }), externalRef: 'LAB-2' },
        { payload: measurement({ monitoringPoint: 'Bulk 3', value: 12 }), externalRef: 'LAB-3' }
      ])
    )
    t.equal(loaded.status, 200)
    const [above, sent, within] = loaded.lines
    t.match(sent, {
      line: 2,
      status: 'error',
      problem: { errors: [{ field: 'payload.exceedance', code: 'readOnly' }] }
    })
    t.match((await server.request('GET', `/api/v1/records/${above.id}`)).body.payload, { exceedance: true })
    t.match((await server.request('GET', `/api/v1/records/${within.id}`)).body.payload, { exceedance: false })

    const upserted = await bulkCall(
      server.url,
      '/api/modules/environmental-monitoring/bulk',
      server.keys.acme,
      ndjson([{ payload: { value: 300 }, externalRef: 'LAB-3' }])
    )
    t.match(upserted.lines[0], { status: 'updated' })
    t.match(
      (await server.request('GET', `/api/v1/records/${within.id}`)).body.payload,
      { exceedance: true },
      'recomputed'
    )

    const requester = await userWithToken(server, 'acme', ['reporter'])
    const from = days(2).toISOString()
    const permits = await bulkCall(
      server.url,
      '/api/modules/permit-to-work/bulk',
      server.keys.acme,
      ndjson([
        { payload: permit({ requestedBy: requester.id, validFrom: from, validTo: days(1).toISOString() }) },
        { payload: permit({ requestedBy: requester.id }) }
      ])
    )
    t.match(permits.lines[0], {
      status: 'error',
      problem: {
        errors: [{ pointer: '/payload/validTo', code: 'rule', detail: 'must be after the start of validity' }]
      }
    })
    t.match(permits.lines[1], { status: 'created' })
  }
)

t.test('an exceedance cannot be reviewed without a linked corrective action, and can with one', async (t) => {
  const sampler = await userWithToken(server, 'acme', ['environmental-officer'])
  const manager = await userWithToken(server, 'acme', ['safety-manager'])
  const { id } = await made('environmental-monitoring', measurement({ sampledBy: sampler.id }))

  const without = await fire(id, 'review', { reviewNote: 'Biological plant upset' }, manager.token)
  t.match(without, ruleOn('correctiveAction', /is required to review an exceedance/))
  t.equal((await server.request('GET', `/api/v1/records/${id}`)).body.state, 'recorded')

  const incident = await made('incident', incidentPayload({ category: 'environmental' }))
  const action = await made('corrective-action', {
    title: 'Re-seed the aeration basin',
    incident: incident.id,
    kind: 'corrective'
  })
  const reviewed = await fire(
    id,
    'review',
    { reviewNote: 'Biological plant upset', correctiveAction: action.id },
    manager.token
  )
  t.match(reviewed, { status: 200, body: { state: 'reviewed', payload: { correctiveAction: action.id } } })
  t.match(await patch(id, { value: 100 }), {
    status: 409,
    body: { code: 'field.locked', unlockedBy: [{ key: 'reopen', to: 'recorded' }] }
  })

  const within = await made('environmental-monitoring', measurement({ value: 40 }))
  t.match(
    await fire(within.id, 'review', { reviewNote: 'Within consent' }, manager.token),
    { status: 200 },
    'a measurement within its limits needs none'
  )

  const mine = await made('environmental-monitoring', measurement({ value: 40, sampledBy: manager.id }))
  t.match(
    await fire(mine.id, 'review', { reviewNote: 'Fine' }, manager.token),
    {
      status: 403,
      body: { conflicts: [{ rule: 'field', field: 'sampledBy' }] }
    },
    'nor reviewed by whoever took the sample'
  )
})

// ---------------------------------------------------------------- derived descriptions

t.test('GraphQL serves the three modules with their computed values, read-only in the inputs', async (t) => {
  await made('risk-assessment', assessment({ likelihood: 2, severity: 2 }))
  const res = await server.request('POST', '/api/graphql', {
    token: server.keys.acme,
    body: {
      query:
        '{ riskAssessments(first: 50, filter: { riskRating: { eq: LOW } }) { nodes { number payload { riskScore riskRating } } } ' +
        'permitToWorks(first: 1) { nodes { number payload { permitType validFrom validTo } } } ' +
        'environmentalMonitorings(first: 1, filter: { exceedance: { eq: true } }) { nodes { number payload { value unit exceedance } } } }'
    }
  })
  t.equal(res.status, 200)
  t.notOk(res.body.errors, 'no errors')
  t.ok(
    res.body.data.riskAssessments.nodes.some((n: any) => n.payload.riskScore === 4 && n.payload.riskRating === 'LOW')
  )
  t.match(res.body.data.permitToWorks.nodes, [{ number: /^PTW-/, payload: { permitType: 'HOT_WORK' } }])
  t.match(res.body.data.environmentalMonitorings.nodes, [{ number: /^ENV-/, payload: { exceedance: true } }])

  const sdl = (await server.request('GET', '/api/graphql/schema.graphql', { token: server.keys.acme })).text
  const input = /input RiskAssessmentPayloadInput \{[^}]*\}/.exec(sdl)?.[0] ?? ''
  t.match(input, /likelihood/)
  t.notMatch(input, /riskScore|riskRating/, 'the computed fields are not inputs')
  t.notMatch(/input EnvironmentalMonitoringPayloadPatch \{[^}]*\}/.exec(sdl)?.[0] ?? 'missing', /exceedance/)
})

t.test(
  "a console's full introspection of a tenant with the six bundled modules runs within the cost limit",
  async (t) => {
    const full = await server.request('POST', '/api/graphql', {
      token: server.keys.acme,
      body: { query: getIntrospectionQuery() }
    })
    t.equal(full.status, 200)
    t.equal(full.body.errors, undefined, 'GraphiQL can load the schema')
    t.ok(full.body.data.__schema.types.some((x: { name: string }) => x.name === 'EnvironmentalMonitoring'))
  }
)

t.test('the OpenAPI document marks the computed fields read-only, with their formulas', async (t) => {
  const doc = (await server.request('GET', '/api/docs/spec.json', { token: server.keys.acme })).body
  const schemas = doc.components.schemas
  t.match(schemas.RiskAssessmentPayload.properties.riskScore, { readOnly: true, description: /likelihood \* severity/ })
  t.match(schemas.RiskAssessmentPayload.properties.riskRating, { readOnly: true, description: /band\(riskScore/ })
  t.match(schemas.EnvironmentalMonitoringPayload.properties.exceedance, { readOnly: true })
  t.notOk(schemas.RiskAssessmentPayload.properties.likelihood.readOnly)
  t.ok(schemas.PermitToWorkPayload, 'the permit is described')
})
