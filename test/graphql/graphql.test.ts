import pg from 'pg'
import t from '../helpers/tap.ts'
import { fixtureModules } from '../helpers/fixture-modules.ts'
import { userWithToken } from '../helpers/identity.ts'
import { defaultTenants, incidentPayload, startTestServer } from '../helpers/server.ts'
import { IndexClient } from '../../plugins/records/records.indexes.ts'

/*
 * GraphQL's own rules: the bounds on what one operation may ask for, the schema cache,
 * Idempotency-Key on a mutation, GraphQL over HTTP (GET, content types, unreadable
 * requests) and the statements a page of records with its references costs.
 */

// A hazard register whose entries nest (a record reference to its own module): the one
// shape in which a client can write a query as deep as it likes.
const fixtures = fixtureModules([
  {
    key: 'hazard',
    version: '1.0.0',
    title: 'Hazard',
    numberPattern: 'HAZ-{seq:4}',
    fields: [
      { key: 'title', type: 'text', required: true, maxLength: 120 },
      { key: 'parent', type: 'recordRef', module: 'hazard' },
      // One field of every other type, for the derivation table.
      { key: 'notes', type: 'longText' },
      { key: 'exposure', type: 'number' },
      { key: 'likelihood', type: 'integer', minimum: 1, maximum: 5 },
      { key: 'peopleAtRisk', type: 'integer', minimum: 0 },
      { key: 'controlled', type: 'boolean' },
      { key: 'reviewOn', type: 'date' },
      { key: 'foundAt', type: 'datetime' },
      { key: 'level', type: 'singleChoice', options: ['low', { value: 'very-high', label: 'Very high' }] },
      { key: 'tags', type: 'multipleChoice', options: ['noise', 'dust'] },
      { key: 'owner', type: 'user' },
      { key: 'incident', type: 'recordRef', module: 'incident' },
      {
        key: 'controls',
        type: 'group',
        fields: [
          { key: 'measure', type: 'text', required: true },
          { key: 'inPlace', type: 'boolean' }
        ]
      },
      { key: 'where', type: 'location' }
    ],
    workflow: {
      initial: 'open',
      states: [{ key: 'open' }, { key: 'controlled', final: true }],
      transitions: [{ key: 'control', from: ['open'], to: 'controlled' }]
    },
    permissions: { 'safety-manager': ['read', 'create', 'update', 'transition:control'] }
  }
])
t.teardown(fixtures.remove)
const server = await startTestServer({
  modules: { directories: ['tenant-modules', fixtures.directory], packages: [] },
  tenants: { ...defaultTenants, acme: { ...defaultTenants.acme, modules: [...defaultTenants.acme.modules, 'hazard'] } }
})
t.teardown(() => server.close())
const acme = server.keys.acme

const gql = (
  query: string,
  variables?: Record<string, unknown>,
  o: { token?: string | null; headers?: Record<string, string> } = {}
) =>
  server.request('POST', '/api/graphql', {
    token: o.token === undefined ? acme : o.token,
    body: { query, variables },
    headers: o.headers
  })
const responseJson = { accept: 'application/graphql-response+json' }

async function incident(overrides: Record<string, unknown> = {}) {
  const r = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload(overrides) }
  })
  if (r.status !== 201) throw new Error(`setup: ${r.status} ${r.text}`)
  return r.body
}

t.test('a query 20 levels deep is refused before it runs, saying how deep and what is allowed', async (t) => {
  let selection = 'id number'
  for (let i = 0; i < 19; i++) selection = `id payload { parent { ${selection} } }`
  const query = `{ hazards(first: 1) { nodes { ${selection} } } }`
  for (const [accept, status] of [
    [undefined, 200],
    ['application/graphql-response+json', 400]
  ] as const) {
    const r = await gql(query, undefined, { headers: accept ? { accept } : {} })
    t.equal(
      r.status,
      status,
      `${accept ?? 'application/json'}: ${status}, as GraphQL over HTTP has it for a refused document`
    )
    t.notOk('data' in r.body, 'nothing ran')
    t.match(r.body.errors[0], {
      message: /nests fields \d+ deep; at most 12 levels/,
      extensions: { code: 'graphql.too_deep', status: 400, maxDepth: 12 }
    })
  }
  t.equal(
    (await gql('{ hazards(first: 1) { nodes { payload { parent { payload { parent { number } } } } } } }')).body.errors,
    undefined,
    'a reasonable depth runs'
  )
})

t.test(
  'every field type has its GraphQL type: choices as enums, groups nested, references as the record they point at',
  async (t) => {
    const sdl = (await server.request('GET', '/api/graphql/schema.graphql')).text
    // A type's lines in the SDL, without descriptions.
    const block = (name: string) =>
      new RegExp(`^(?:type|input|enum) ${name} [^{]*\\{([^}]*)\\}`, 'm')
        .exec(sdl)?.[1]
        .replace(/"""[^]*?"""|"[^"\n]*"/g, '')
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)
    t.same(block('HazardPayload'), [
      'title: String',
      'parentId: ID',
      'parent: Hazard',
      'notes: String',
      'exposure: Float',
      'likelihood: Int',
      'peopleAtRisk: Float',
      'controlled: Boolean',
      'reviewOn: Date',
      'foundAt: DateTime',
      'level: HazardLevel',
      'tags: [HazardTags!]',
      'owner: User',
      'incidentId: ID',
      'incident: Incident',
      'controls: [HazardControlsItem!]',
      'where: Location'
    ])
    t.same(block('HazardLevel'), ['LOW', 'VERY_HIGH'])
    t.same(block('HazardControlsItem'), ['measure: String', 'inPlace: Boolean'])
    t.match(block('HazardPayloadInput'), ['title: String!', 'parent: ID', 'notes: String'])
  }
)

t.test('a query over the cost bound is refused, with its estimate and the bound', async (t) => {
  const fields =
    'id number state version externalRef createdAt updatedAt deletedAt moduleKey moduleVersion payload { title description occurredAt site category severity injuredPeople lostTimeDays regulatorNotified }'
  const aliases = ['a', 'b', 'c', 'd', 'e', 'f']
    .map((a) => `${a}: incidents(first: 200) { nodes { ${fields} } }`)
    .join(' ')
  const r = await gql(`{ ${aliases} }`, undefined, { headers: responseJson })
  t.equal(r.status, 400)
  t.match(r.body.errors[0], {
    message: /could resolve about \d+ fields \(a lookup counts as 250\); at most 25000/,
    extensions: { code: 'graphql.too_costly', maxCost: 25_000 }
  })
  t.ok(r.body.errors[0].extensions.cost > 25_000)
  const viaVariable = await gql(
    'query($n: Int) { incidents(first: $n) { nodes { id } } a: incidents(first: $n) { nodes { id } } }',
    { n: 200 }
  )
  t.equal(
    viaVariable.body.errors,
    undefined,
    'page sizes given as variables count as sent: 2 × 200 is within the bound'
  )
})

t.test(
  'the schema is built once for a tenant and visible field set, however many requests ask for it at once',
  async (t) => {
    const cache = server.running.app.get('graphqlSchemas')!
    const before = cache.builds
    const key = (await server.platform.credentials.create({ tenantId: 'initech', kind: 'api_key', name: 'schema' }))
      .token
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => gql('{ incidents(first: 1) { nodes { id } } }', undefined, { token: key }))
    )
    t.same(new Set(replies.map((r) => r.status)), new Set([200]))
    t.equal(cache.builds, before + 1, '20 concurrent first requests: one build')
    const [reporterA, reporterB] = [
      await userWithToken(server, 'initech', ['reporter']),
      await userWithToken(server, 'initech', ['reporter'])
    ]
    await gql('{ me { tenantId } }', undefined, { token: reporterA.token })
    t.equal(cache.builds, before + 2, 'a role that sees fewer fields gets a schema of its own')
    await gql('{ me { tenantId } }', undefined, { token: reporterB.token })
    await gql('{ me { tenantId } }', undefined, { token: key })
    t.equal(cache.builds, before + 2, 'and shares it with everyone who sees the same')
  }
)

t.test('an Idempotency-Key makes a one-mutation operation safe to retry, and is refused on several', async (t) => {
  const create = 'mutation($p: IncidentPayloadInput!) { createIncident(payload: $p) { id number } }'
  const p = { ...incidentPayload({ title: 'Retried over a bad line' }), category: 'NEAR_MISS', severity: 'LOW' }
  const headers = { 'idempotency-key': 'gql-retry-1' }
  const first = await gql(create, { p }, { headers })
  const again = await gql(create, { p }, { headers })
  t.ok(first.body.data.createIncident.id)
  t.same(again.body.data, first.body.data, 'the retry answers the first result')
  const listed = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&payload[title]=${encodeURIComponent('Retried over a bad line')}`
  )
  t.equal(listed.body.items.length, 1, 'one record')
  const changed = await gql(create, { p: { ...p, site: 'Elsewhere' } }, { headers })
  t.match(
    changed.body.errors?.[0]?.extensions,
    { code: /^idempotency\./, status: 422 },
    'the same key with another request is refused, as over REST'
  )
  const two = await gql(
    `mutation($p: IncidentPayloadInput!) { a: createIncident(payload: $p) { id } b: createIncident(payload: $p) { id } }`,
    { p: { ...p, title: 'Two at once' } },
    { headers: { 'idempotency-key': 'gql-two' } }
  )
  t.match(two.body.errors?.[0], {
    message: /one mutation field; this one has 2/,
    extensions: { code: 'idempotency.one_mutation', status: 400 }
  })
  const none = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&payload[title]=${encodeURIComponent('Two at once')}`
  )
  t.equal(none.body.items.length, 0, 'and nothing was created')
})

t.test(
  'GraphQL over HTTP: queries by GET, mutations only by POST, the negotiated content type, unreadable requests as problems',
  async (t) => {
    const get = await server.request('GET', `/api/graphql?query=${encodeURIComponent('{ me { tenantId } }')}`, {
      headers: responseJson
    })
    t.equal(get.status, 200)
    t.match(get.headers.get('content-type'), /^application\/graphql-response\+json/)
    t.same(get.body, { data: { me: { tenantId: 'acme' } } })
    const plain = await server.request('GET', `/api/graphql?query=${encodeURIComponent('{ me { tenantId } }')}`, {
      headers: { accept: 'application/json' }
    })
    t.match(plain.headers.get('content-type'), /^application\/json/)
    const mutation = await server.request(
      'GET',
      `/api/graphql?query=${encodeURIComponent('mutation { deleteRecord(id: "00000000-0000-4000-8000-000000000000") { id } }')}`
    )
    t.equal(mutation.status, 405, 'a mutation by GET is refused')
    t.match(mutation.headers.get('content-type'), /^application\/problem\+json/)
    t.match(mutation.headers.get('allow'), /POST/)
    const broken = await server.request('POST', '/api/graphql', {
      raw: '{"query": ',
      headers: { 'content-type': 'application/json' }
    })
    t.equal(broken.status, 400)
    t.match(broken.headers.get('content-type'), /^application\/problem\+json/)
    t.match(broken.body, { code: 'graphql.bad_request', detail: /a GraphQL request is a JSON object/ })
    const coercion = await gql(
      'query($n: Int) { incidents(first: $n) { nodes { id } } }',
      { n: 'ten' },
      { headers: responseJson }
    )
    t.equal(coercion.status, 400, 'a variable that does not coerce is a 400 under application/graphql-response+json')
    t.notOk('data' in coercion.body)
    t.match(coercion.body.errors[0].message, /\$n/)
    t.equal(
      (await gql('query($n: Int) { incidents(first: $n) { nodes { id } } }', { n: 'ten' })).status,
      200,
      'and a 200 with errors under application/json'
    )
    const badVariables = await server.request(
      'GET',
      `/api/graphql?query=${encodeURIComponent('{ me { tenantId } }')}&variables=x`
    )
    t.match(badVariables.body, { status: 400, code: 'graphql.bad_request' })
    const unauthenticated = await server.request('POST', '/api/graphql', {
      token: null,
      body: { query: '{ __schema { queryType { name } } }' }
    })
    t.match(unauthenticated.body, { status: 401, code: 'auth.missing' }, 'no introspection without a credential')
    const introspection = await gql('{ __schema { queryType { name } mutationType { name } } }')
    t.same(
      introspection.body.data,
      { __schema: { queryType: { name: 'Query' }, mutationType: { name: 'Mutation' } } },
      'introspection for a caller'
    )
    const me = await gql('{ me { tenantId roles scopes } }')
    t.same(
      me.body,
      { data: { me: { tenantId: 'acme', roles: 'all', scopes: 'all' } } },
      'me as REST has it: "all" for a tenant API key'
    )
    const scoped = await userWithToken(server, 'acme', ['safety-manager'], { scopes: ['records:read'] })
    const noScope = await gql('{ me { tenantId } }', undefined, { token: scoped.token })
    t.match(
      noScope.body,
      { status: 403, code: 'scope.missing', missingScope: 'graphql' },
      'a scoped token needs the graphql scope'
    )
  }
)

t.test('the SDL downloads at a stable URL with an ETag', async (t) => {
  const sdl = await server.request('GET', '/api/graphql/schema.graphql')
  t.equal(sdl.status, 200)
  t.match(sdl.headers.get('content-type'), /^application\/graphql/)
  t.match(sdl.text, /type Incident implements Record/)
  t.match(sdl.text, /createHazard\(payload: HazardPayloadInput!/)
  const again = await server.request('GET', '/api/graphql/schema.graphql', {
    headers: { 'if-none-match': sdl.headers.get('etag')! }
  })
  t.equal(again.status, 304)
})

t.test(
  'a page of corrective actions with their incidents costs the same statements for 5 records as for 40',
  async (t) => {
    const incidents = await Promise.all(Array.from({ length: 40 }, (_, i) => incident({ title: `Source ${i}` })))
    for (const [i, inc] of incidents.entries()) {
      const r = await server.request('POST', '/api/v1/records', {
        body: { moduleKey: 'corrective-action', payload: { title: `Fix ${i}`, incident: inc.id, kind: 'corrective' } }
      })
      if (r.status !== 201) throw new Error(`setup: ${r.status} ${r.text}`)
    }
    const query =
      'query($n: Int) { correctiveActions(first: $n) { nodes { number createdBy { name } payload { title incident { number state payload { title site } activity { action } } } availableTransitions { key } } } }'
    // Every statement any pool of this process sends, while one request runs.
    const statements = async (n: number) => {
      const original = pg.Client.prototype.query
      let count = 0
      pg.Client.prototype.query = function (this: pg.Client, ...args: any[]) {
        // Background work of the process (the index builder's pass) is not the request's.
        if (!(this instanceof IndexClient)) count++
        return (original as any).apply(this, args)
      } as any
      try {
        const r = await gql(query, { n })
        t.equal(r.body.errors, undefined)
        t.equal(r.body.data.correctiveActions.nodes.length, n)
        t.ok(
          r.body.data.correctiveActions.nodes.every((a: any) => a.payload.incident.number.startsWith('INC-')),
          'every incident resolved'
        )
      } finally {
        pg.Client.prototype.query = original
      }
      return count
    }
    await statements(5) // caches of the credential and the user names warm up
    const [few, many] = [await statements(5), await statements(40)]
    t.equal(many, few, `${few} statements for 5 corrective actions, ${many} for 40`)
    t.ok(few <= 6, `a small constant: ${few}`)
  }
)
