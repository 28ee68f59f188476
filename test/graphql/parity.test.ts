import t from '../helpers/tap.ts'
import { fixtureModules } from '../helpers/fixture-modules.ts'
import { userWithToken } from '../helpers/identity.ts'
import { defaultTenants, incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'

/*
 * One table of cases, each sent once over REST and once over GraphQL: the same data and
 * the same refusal (status, code and the members naming what to fix) from both, since
 * both call the same services with the same hooks.
 */

// A module with a field some roles may read but only one may write: the only way a GraphQL
// caller meets field.forbidden, as a field it may not read is not in its schema at all.
const toolboxTalk = {
  key: 'toolbox-talk',
  version: '1.0.0',
  title: 'Toolbox talk',
  numberPattern: 'TBT-{YYYY}-{seq:3}',
  fields: [
    { key: 'topic', type: 'text', required: true, maxLength: 80 },
    {
      key: 'supervisorNote',
      type: 'longText',
      access: { read: ['reporter', 'safety-manager'], write: ['safety-manager'] }
    }
  ],
  workflow: {
    initial: 'planned',
    states: [{ key: 'planned' }, { key: 'held', final: true }],
    transitions: [{ key: 'hold', from: ['planned'], to: 'held' }]
  },
  permissions: {
    reporter: ['read', 'create', 'update'],
    'safety-manager': ['read', 'create', 'update', 'transition:hold']
  }
}
const fixtures = fixtureModules([toolboxTalk])
t.teardown(fixtures.remove)

const server = await startTestServer({
  modules: { directories: ['tenant-modules', fixtures.directory], packages: [] },
  tenants: {
    ...defaultTenants,
    acme: { ...defaultTenants.acme, modules: [...defaultTenants.acme.modules, 'toolbox-talk'] },
    // Three requests a minute per credential, for the 429 case.
    initech: { ...defaultTenants.initech, limits: { requestsPerMinute: 3 } }
  }
})
t.teardown(() => server.close())

const acme = server.keys.acme
const globex = server.keys.globex
const [reader, reporter] = await Promise.all([
  userWithToken(server, 'acme', ['safety-manager'], { scopes: ['records:read', 'graphql'] }),
  userWithToken(server, 'acme', ['reporter'])
])

const gql = (
  token: string | null,
  query: string,
  variables?: Record<string, unknown>,
  headers?: Record<string, string>
) => server.request('POST', '/api/graphql', { token, body: { query, variables }, headers })
const rest = (method: string, path: string, token: string | null, body?: unknown, headers?: Record<string, string>) =>
  server.request(method, path, { token, body, headers })

/** GraphQL's enum name for an option value, as graphql.names.ts derives it. */
const enumName = (v: string) => v.replace(/[^A-Za-z0-9]+/g, '_').toUpperCase()
/** An incident payload as GraphQL variables carry it: choices by their enum names. */
const asInput = (p: Record<string, unknown>) => ({
  ...p,
  category: enumName(p.category as string),
  severity: enumName(p.severity as string)
})

async function created(payload = incidentPayload()) {
  const r = await rest('POST', '/api/v1/records', acme, { moduleKey: 'incident', payload })
  if (r.status !== 201) throw new Error(`setup: create answered ${r.status} ${r.text}`)
  return r.body
}

/** A refusal as a client reads it: a problem's members, or those of the first GraphQL error's extensions. */
function refusal(r: Reply) {
  const body = (r.headers.get('content-type') ?? '').startsWith('application/problem+json')
    ? r.body
    : r.body?.errors?.[0]?.extensions
  if (!body) return { answered: r.status, body: r.text.slice(0, 300) }
  const { status, code, field, errors, missingScope, currentState, allowedTransitions } = body
  return { status, code, field, errors, missingScope, currentState, allowedTransitions }
}

const actor = '{ type id name token { type id name } onBehalfOf { userId name } }'
const envelope = `id number state version externalRef createdAt updatedAt createdBy ${actor} updatedBy ${actor}`
const payloadFields = 'payload { title description occurredAt site category severity }'
/** A GraphQL incident back in REST's shape (choices by value), for comparing the two. */
const asRest = (n: any) =>
  n && {
    ...n,
    payload: {
      ...n.payload,
      category: n.payload.category.toLowerCase().replaceAll('_', '-'),
      severity: n.payload.severity.toLowerCase()
    }
  }
// REST leaves out an actor's token and person when there is none; GraphQL answers null.
const actorView = (a: any) => ({ ...a, token: a.token ?? null, onBehalfOf: a.onBehalfOf ?? null })
const restView = (r: any) => ({
  id: r.id,
  number: r.number,
  state: r.state,
  version: r.version,
  externalRef: r.externalRef ?? null,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
  createdBy: actorView(r.createdBy),
  updatedBy: actorView(r.updatedBy),
  payload: {
    title: r.payload.title,
    description: r.payload.description,
    occurredAt: r.payload.occurredAt,
    site: r.payload.site,
    category: r.payload.category,
    severity: r.payload.severity
  }
})

interface Case {
  name: string
  status: number
  code: string
  rest(): Promise<Reply>
  graphql(): Promise<Reply>
}

const stale = await created()
const reported = await created()
const acmeOnly = await created()
const cases: Case[] = [
  {
    name: 'a call without a credential',
    status: 401,
    code: 'auth.missing',
    rest: () => rest('GET', '/api/v1/records?moduleKey=incident', null),
    graphql: () => gql(null, '{ incidents { nodes { id } } }')
  },
  {
    name: 'a token without the records:write scope creates an incident',
    status: 403,
    code: 'scope.missing',
    rest: () => rest('POST', '/api/v1/records', reader.token, { moduleKey: 'incident', payload: incidentPayload() }),
    graphql: () =>
      gql(reader.token, 'mutation($p: IncidentPayloadInput!) { createIncident(payload: $p) { id } }', {
        p: asInput(incidentPayload())
      })
  },
  {
    name: 'a reporter writes a field only a safety manager may write',
    status: 403,
    code: 'field.forbidden',
    rest: () =>
      rest('POST', '/api/v1/records', reporter.token, {
        moduleKey: 'toolbox-talk',
        payload: { topic: 'Ladders', supervisorNote: 'Good turnout' }
      }),
    graphql: () =>
      gql(
        reporter.token,
        'mutation { createToolboxTalk(payload: { topic: "Ladders", supervisorNote: "Good turnout" }) { id } }'
      )
  },
  {
    name: "another tenant reads one of acme's records",
    status: 404,
    code: 'record.not_found',
    rest: () => rest('GET', `/api/v1/records/${acmeOnly.id}`, globex),
    graphql: () => gql(globex, 'query($id: ID!) { record(id: $id) { id } }', { id: acmeOnly.id })
  },
  {
    name: 'a title longer than the module allows',
    status: 400,
    code: 'field.invalid',
    rest: () =>
      rest('POST', '/api/v1/records', acme, {
        moduleKey: 'incident',
        payload: incidentPayload({ title: 'x'.repeat(201) })
      }),
    graphql: () =>
      gql(acme, 'mutation($p: IncidentPayloadInput!) { createIncident(payload: $p) { id } }', {
        p: asInput(incidentPayload({ title: 'x'.repeat(201) }))
      })
  },
  {
    name: 'a transition the current state does not allow',
    status: 409,
    code: 'transition.not_allowed',
    rest: () => rest('POST', `/api/v1/records/${reported.id}:transition`, acme, { transition: 'close' }),
    graphql: () =>
      gql(acme, 'mutation($id: ID!) { transitionIncident(id: $id, transition: CLOSE) { id } }', { id: reported.id })
  },
  {
    name: 'a change against a version the record has moved past',
    status: 412,
    code: 'record.version_mismatch',
    rest: () =>
      rest('PATCH', `/api/v1/records/${stale.id}`, acme, { payload: { site: 'York' } }, { 'if-match': '"7"' }),
    graphql: () =>
      gql(
        acme,
        'mutation($id: ID!) { updateIncident(id: $id, payload: { site: "York" }, expectedVersion: 7) { id } }',
        { id: stale.id }
      )
  }
]

t.test('REST and GraphQL refuse the same calls with the same status, code and details', async (t) => {
  for (const c of cases) {
    const [viaRest, viaGraphql] = [await c.rest(), await c.graphql()]
    const expected = refusal(viaRest)
    t.match(expected, { status: c.status, code: c.code }, `${c.name}: REST answers ${c.status} ${c.code}`)
    t.same(refusal(viaGraphql), expected, `${c.name}: GraphQL answers the same`)
    if (viaGraphql.headers.get('content-type')?.includes('json') && viaGraphql.body?.errors) {
      t.equal(
        viaGraphql.body.errors[0].extensions.traceId,
        viaGraphql.headers.get('x-trace-id') ?? viaGraphql.body.errors[0].extensions.traceId,
        `${c.name}: the error carries the request's trace id`
      )
      t.ok(viaGraphql.body.errors[0].message, `${c.name}: and says what is wrong`)
    }
  }
  const field = refusal(await cases[4].graphql())
  t.match(field.errors, [{ field: 'title' }], 'the validation error names the field')
  t.equal(refusal(await cases[2].graphql()).field, 'supervisorNote', 'the forbidden field is named')
  t.equal(
    (await rest('GET', `/api/v1/records/${stale.id}`, acme)).body.version,
    1,
    'nothing refused changed the record'
  )
})

t.test('REST and GraphQL refuse a caller over its rate limit the same way', async (t) => {
  const key = async () =>
    (await server.platform.credentials.create({ tenantId: 'initech', kind: 'api_key', name: 'limit' })).token
  const [restKey, graphqlKey] = [await key(), await key()]
  const restReplies = [],
    graphqlReplies = []
  for (let i = 0; i < 4; i++) restReplies.push(await rest('GET', '/api/v1/records?moduleKey=incident', restKey))
  for (let i = 0; i < 4; i++) graphqlReplies.push(await gql(graphqlKey, '{ incidents { nodes { id } } }'))
  t.same(
    restReplies.map((r) => r.status),
    [200, 200, 200, 429]
  )
  t.same(
    graphqlReplies.map((r) => r.status),
    [200, 200, 200, 429],
    'one GraphQL request counts once, however many fields it has'
  )
  t.same(refusal(graphqlReplies[3]), refusal(restReplies[3]))
  t.ok(graphqlReplies[3].headers.get('retry-after'), 'with Retry-After')
})

t.test('one record reads the same through both', async (t) => {
  const r = await created(incidentPayload({ title: 'Spill at bay 3', category: 'environmental', severity: 'high' }))
  const viaRest = (await rest('GET', `/api/v1/records/${r.id}`, acme)).body
  const viaGraphql = await gql(
    acme,
    `query($id: ID!) { incident(id: $id) { ${envelope} ${payloadFields} } record(id: $id) { id number } }`,
    { id: r.id }
  )
  t.same(asRest(viaGraphql.body.data.incident), restView(viaRest))
  t.same(viaGraphql.body.data.record, { id: r.id, number: r.number }, 'also by the generic record field')
})

t.test('a filtered list pages through the same records in the same order', async (t) => {
  for (let i = 0; i < 5; i++) await created(incidentPayload({ site: 'Paging site', title: `Paging ${i}` }))
  const restIds: string[] = []
  for (let cursor = ''; ;) {
    const page = await rest(
      'GET',
      `/api/v1/records?moduleKey=incident&state=reported&payload[site]=Paging%20site&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      acme
    )
    restIds.push(...page.body.items.map((x: any) => x.id))
    if (!page.body.nextCursor) break
    cursor = page.body.nextCursor
  }
  const graphqlIds: string[] = []
  const pages: boolean[] = []
  for (let after: string | null = null; ;) {
    const page: Reply = await gql(
      acme,
      'query($after: String) { incidents(first: 2, after: $after, state: [REPORTED], filter: { site: { eq: "Paging site" } }) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }',
      { after }
    )
    const conn = page.body.data.incidents
    graphqlIds.push(...conn.edges.map((e: any) => e.node.id))
    pages.push(conn.pageInfo.hasNextPage)
    if (!conn.pageInfo.hasNextPage) break
    after = conn.pageInfo.endCursor
  }
  t.equal(restIds.length, 5)
  t.same(graphqlIds, restIds)
  t.same(pages, [true, true, false])
  const fromEdge = await gql(
    acme,
    'query($after: String) { incidents(first: 2, after: $after, filter: { site: { eq: "Paging site" } }) { nodes { id } } }',
    {
      after: (await gql(acme, '{ incidents(first: 2, filter: { site: { eq: "Paging site" } }) { edges { cursor } } }'))
        .body.data.incidents.edges[0].cursor
    }
  )
  t.same(
    fromEdge.body.data.incidents.nodes.map((n: any) => n.id),
    restIds.slice(1, 3),
    "an edge's cursor starts the page after that edge"
  )
})

t.test('a record created, changed, moved on and deleted through GraphQL reads the same over REST', async (t) => {
  const made = await gql(
    acme,
    `mutation($p: IncidentPayloadInput!) { createIncident(payload: $p, externalRef: "GQL-1") { ${envelope} ${payloadFields} } }`,
    { p: asInput(incidentPayload({ title: 'Made in GraphQL' })) }
  )
  const node = made.body.data.createIncident
  t.same(asRest(node), restView((await rest('GET', `/api/v1/records/${node.id}`, acme)).body))
  const changed = await gql(
    acme,
    'mutation($id: ID!) { updateIncident(id: $id, payload: { site: "York", injuredPeople: 1 }, expectedVersion: 1) { version payload { title site injuredPeople } } }',
    { id: node.id }
  )
  t.same(
    changed.body.data.updateIncident,
    { version: 2, payload: { title: 'Made in GraphQL', site: 'York', injuredPeople: 1 } },
    'a partial update merges, as PATCH does'
  )
  const moved = await gql(
    acme,
    'mutation($id: ID!, $lead: ID!) { transitionIncident(id: $id, transition: START_INVESTIGATION, comment: "On it", payload: { investigationLead: $lead }) { state version payload { investigationLead { id name } } activity { action comment transition { key from to } } } }',
    { id: node.id, lead: reporter.id }
  )
  t.match(
    moved.body.data.transitionIncident,
    {
      state: 'investigating',
      version: 3,
      payload: { investigationLead: { id: reporter.id, name: reporter.userName } }
    },
    'a user field resolves to the user and their name'
  )
  t.match(moved.body.data.transitionIncident.activity.at(-1), {
    action: 'transitioned',
    comment: 'On it',
    transition: { key: 'start-investigation', from: 'reported', to: 'investigating' }
  })
  const viaRest = (await rest('GET', `/api/v1/records/${node.id}`, acme)).body
  t.match(viaRest, {
    state: 'investigating',
    version: 3,
    payload: { site: 'York', injuredPeople: 1, investigationLead: reporter.id }
  })
  t.same(
    (await rest('GET', `/api/v1/audit-log?recordId=${node.id}`, acme)).body.items.map((i: any) => [
      i.action,
      i.actor.id
    ]),
    [
      ['created', viaRest.createdBy.id],
      ['updated', viaRest.createdBy.id],
      ['transitioned', viaRest.createdBy.id]
    ],
    'the audit log has each change with its actor'
  )
  const gone = await gql(acme, 'mutation($id: ID!) { deleteRecord(id: $id) { id deletedAt } }', { id: node.id })
  t.ok(gone.body.data.deleteRecord.deletedAt)
  t.equal((await rest('GET', `/api/v1/records/${node.id}`, acme)).status, 404, 'deleted for REST too')
})

t.test('a field a role may not read is absent from its schema and its data', async (t) => {
  const fields = async (token: string, type: string) =>
    ((await gql(token, `query($t: String!) { __type(name: $t) { fields { name } inputFields { name } } }`, { t: type }))
      .body.data.__type ?? {}) as { fields?: Array<{ name: string }>; inputFields?: Array<{ name: string }> }
  const names = (x: { fields?: Array<{ name: string }> | null; inputFields?: Array<{ name: string }> | null }) =>
    [...(x.fields ?? []), ...(x.inputFields ?? [])].map((f) => f.name)
  const health = await userWithToken(server, 'acme', ['health-officer'])
  for (const type of ['IncidentPayload', 'IncidentPayloadInput', 'IncidentPayloadPatch', 'IncidentFilter']) {
    t.notOk(names(await fields(reporter.token, type)).includes('medicalDetails'), `not in a reporter's ${type}`)
  }
  t.ok(
    names(await fields(health.token, 'IncidentPayload')).includes('medicalDetails'),
    "in a health officer's IncidentPayload"
  )
  const sdl = await server.request('GET', '/api/graphql/schema.graphql', { token: reporter.token })
  t.notOk(sdl.text.includes('medicalDetails'), "nor anywhere in the reporter's SDL")
  const r = await rest('POST', '/api/v1/records', reporter.token, {
    moduleKey: 'incident',
    payload: incidentPayload({ title: 'Cut hand' })
  })
  await rest('PATCH', `/api/v1/records/${r.body.id}`, health.token, { payload: { medicalDetails: 'Three stitches' } })
  const asked = await gql(reporter.token, 'query($id: ID!) { incident(id: $id) { payload { medicalDetails } } }', {
    id: r.body.id
  })
  t.match(
    refusal(asked),
    { code: 'graphql.invalid' },
    'asking for it is a validation error, as for a field that does not exist'
  )
  const activity = await gql(
    reporter.token,
    'query($id: ID!) { incident(id: $id) { payload { title } activity { changes { field } } } }',
    { id: r.body.id }
  )
  t.notOk(JSON.stringify(activity.body).includes('medicalDetails'), 'and its changes are not in the activity')
  t.notOk(JSON.stringify(activity.body).includes('Three stitches'))
  const healthRead = await gql(health.token, 'query($id: ID!) { incident(id: $id) { payload { medicalDetails } } }', {
    id: r.body.id
  })
  t.equal(healthRead.body.data.incident.payload.medicalDetails, 'Three stitches')
})

t.test('the same changes through REST and GraphQL write the same events, in their commits', async (t) => {
  const events = async (id: string) =>
    (
      await server.platform.db.system.query(
        'SELECT type, actor, module_key, data FROM events WHERE subject_id = $1 ORDER BY position',
        [id]
      )
    ).rows.map((e: any) => ({ ...e, data: { ...e.data, number: undefined } }))
  const viaRest = (await rest('POST', '/api/v1/records', acme, { moduleKey: 'incident', payload: incidentPayload() }))
    .body
  await rest('PATCH', `/api/v1/records/${viaRest.id}`, acme, { payload: { site: 'York' } })
  await rest('POST', `/api/v1/records/${viaRest.id}:transition`, acme, {
    transition: 'dismiss',
    payload: { closureNote: 'Not an incident' }
  })
  await rest('DELETE', `/api/v1/records/${viaRest.id}`, acme)
  const made = (
    await gql(acme, 'mutation($p: IncidentPayloadInput!) { createIncident(payload: $p) { id } }', {
      p: asInput(incidentPayload())
    })
  ).body.data.createIncident
  await gql(acme, 'mutation($id: ID!) { updateIncident(id: $id, payload: { site: "York" }) { id } }', { id: made.id })
  await gql(
    acme,
    'mutation($id: ID!) { transitionIncident(id: $id, transition: DISMISS, payload: { closureNote: "Not an incident" }) { id } }',
    { id: made.id }
  )
  await gql(acme, 'mutation($id: ID!) { deleteRecord(id: $id) { id } }', { id: made.id })
  const [restEvents, graphqlEvents] = [await events(viaRest.id), await events(made.id)]
  t.same(
    restEvents.map((e: any) => e.type),
    ['record.created', 'record.updated', 'record.transitioned', 'record.deleted']
  )
  t.same(graphqlEvents, restEvents)
  const refused = await gql(
    acme,
    'mutation($id: ID!) { updateIncident(id: $id, payload: { site: "Leeds" }, expectedVersion: 1) { id } }',
    { id: made.id }
  )
  t.ok(refused.body.errors)
  t.equal((await events(made.id)).length, 4, 'a refused change writes none')
})
