import { getIntrospectionQuery, Lexer, Source, TokenKind } from 'graphql'
import { parseWithin } from '../../plugins/graphql/graphql.document.ts'
import t from '../helpers/tap.ts'
import { defaultTenants, incidentPayload, startTestServer } from '../helpers/server.ts'

/*
 * What one GraphQL document may make the server do: introspection, fragments, aliases and
 * lookups are counted before anything runs, a refused document does nothing, the text is
 * bounded before it is parsed, and an expensive operation counts as several requests.
 */

// Initech may make 5 requests a minute; Globex's requests have a budget under the GraphQL cost bound.
const server = await startTestServer({
  tenants: {
    ...defaultTenants,
    initech: { ...defaultTenants.initech, limits: { requestsPerMinute: 5 } },
    globex: { ...defaultTenants.globex, limits: { requestBudget: 10_000 } }
  }
})
t.teardown(() => server.close())
const acme = server.keys.acme
const responseJson = { accept: 'application/graphql-response+json' }
// The other tenant's first request warms its caches (credential, tenant) up: what is timed below is the wait, not that.
await server.request('GET', '/api/v1/me', { token: server.keys.globex })

const gql = (
  query: string,
  variables?: Record<string, unknown>,
  o: { token?: string; headers?: Record<string, string> } = {}
) =>
  server.request('POST', '/api/graphql', {
    token: o.token ?? acme,
    body: { query, variables },
    headers: { ...responseJson, ...o.headers }
  })

/** Sends `request` while another tenant reads /api/v1/me; answers both, with how long each took. */
async function meanwhile<T>(request: () => Promise<T>) {
  const started = Date.now()
  const attack = request().then((r) => ({ r, ms: Date.now() - started }))
  await new Promise((resolve) => setTimeout(resolve, 20))
  const otherStarted = Date.now()
  const other = await server.request('GET', '/api/v1/me', { token: server.keys.globex })
  const otherMs = Date.now() - otherStarted
  return { ...(await attack), other, otherMs }
}

async function count(title: string) {
  const r = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&payload[title]=${encodeURIComponent(title)}`
  )
  return r.body.items.length as number
}

t.test('introspection is counted: aliases of __schema are refused by their cost before anything runs', async (t) => {
  const selection =
    '__schema { types { name kind fields { name args { name type { name } } type { name kind ofType { name kind ofType { name kind } } } } } }'
  const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${selection}`).join(' ')} }`

  const few = await gql(aliases(50))
  t.equal(few.status, 400)
  t.notOk('data' in few.body, 'nothing ran')
  t.match(few.body.errors[0], { extensions: { code: 'graphql.too_costly', maxCost: 25_000 } })
  t.ok(few.body.errors[0].extensions.cost > 25_000, `50 aliases cost ${few.body.errors[0].extensions.cost}`)

  // The report's attack: 7,000 aliases, 1 MB of text. Refused before it is even measured (too many tokens), quickly, and another tenant is answered meanwhile.
  const body = aliases(7000)
  t.ok(body.length > 900_000 && body.length < 1_048_576, `${body.length} bytes, within the body cap`)
  const { r, ms, other, otherMs } = await meanwhile(() => gql(body))
  t.equal(r.status, 400)
  t.notOk('data' in r.body, 'nothing ran')
  t.match(r.body.errors[0].extensions, { code: 'graphql.too_large', status: 400 })
  t.ok(ms < 2000, `refused in ${ms} ms`)
  t.equal(other.status, 200)
  t.ok(otherMs < 1000, `another tenant answered in ${otherMs} ms meanwhile`)

  // What a console asks for (GraphiQL's full introspection) still runs, and one alias of the selection above.
  const full = await gql(getIntrospectionQuery())
  t.equal(full.status, 200)
  t.equal(full.body.errors, undefined, 'the full introspection query runs')
  t.ok(full.body.data.__schema.types.length > 50)
  const one = await gql(`{ ${selection} }`)
  t.equal(one.body.errors, undefined)
})

t.test('__type(name:) counts the lists of the largest type, not of an average one', async (t) => {
  const selection = '__type(name: "Mutation") { name fields { name args { name } type { name } } }'
  const many = await gql(`{ ${Array.from({ length: 500 }, (_, i) => `t${i}: ${selection}`).join(' ')} }`)
  t.equal(many.status, 400)
  t.notOk('data' in many.body, 'nothing ran')
  t.match(many.body.errors[0].extensions, { code: 'graphql.too_costly' })
  const one = await gql(`{ ${selection} }`)
  t.equal(one.body.errors, undefined)
  t.ok(one.body.data.__type.fields.length > 5)
})

t.test('a fragment spread twice per level (a 1 KB fragment bomb) is refused at once', async (t) => {
  const levels = 23
  const fragments = Array.from({ length: levels }, (_, i) =>
    i < levels - 1 ? `fragment F${i} on Me { tenantId ...F${i + 1} ...F${i + 1} }` : `fragment F${i} on Me { tenantId }`
  )
  const query = `query { me { ...F0 } } ${fragments.join(' ')}`
  t.ok(query.length < 1500)
  const { r, ms, other, otherMs } = await meanwhile(() => gql(query))
  t.equal(r.status, 400)
  t.notOk('data' in r.body, 'nothing ran')
  t.match(r.body.errors[0].extensions, { code: 'graphql.too_costly', status: 400 })
  t.ok(ms < 500, `refused in ${ms} ms`)
  t.ok(otherMs < 1000, `another tenant answered in ${otherMs} ms meanwhile`)
  t.equal(other.status, 200)
  const small = `query { me { ...F0 } } fragment F0 on Me { tenantId ...F1 ...F1 } fragment F1 on Me { tenantId userId }`
  t.same(
    (await gql(small)).body,
    { data: { me: { tenantId: 'acme', userId: null } } },
    'a fragment spread twice is counted, and runs when it fits'
  )
})

t.test('2,000 fields answering under one name are refused before GraphQL compares them pairwise', async (t) => {
  const query = `{ ${Array.from({ length: 2000 }, () => 'a: __typename').join(' ')} }`
  const { r, ms, otherMs } = await meanwhile(() => gql(query))
  t.equal(r.status, 400)
  t.notOk('data' in r.body, 'nothing ran')
  t.match(r.body.errors[0], {
    message: /101 fields answer as "a"; at most 100/,
    extensions: { code: 'graphql.too_large', maxRepeats: 100 }
  })
  t.ok(ms < 500, `refused in ${ms} ms`)
  t.ok(otherMs < 1000, `another tenant answered in ${otherMs} ms meanwhile`)
  const fine = await gql(`{ ${Array.from({ length: 100 }, () => 'a: __typename').join(' ')} }`)
  t.same(fine.body, { data: { a: 'Query' } }, 'a hundred merge into one answer')
})

t.test('a page selected through a fragment or an inline fragment counts as the page, not as one item', async (t) => {
  const inline = Array.from(
    { length: 100 },
    (_, i) => `a${i}: incidents { ... on IncidentConnection { nodes { id number payload { title description } } } }`
  ).join(' ')
  const r = await gql(`{ ${inline} }`)
  t.equal(r.status, 400)
  t.notOk('data' in r.body, 'nothing ran')
  t.match(r.body.errors[0].extensions, { code: 'graphql.too_costly' })
  const named = Array.from({ length: 100 }, (_, i) => `a${i}: incidents { ...Page }`).join(' ')
  const viaFragment = await gql(
    `{ ${named} } fragment Page on IncidentConnection { nodes { id number payload { title description } } }`
  )
  t.match(viaFragment.body.errors?.[0]?.extensions, { code: 'graphql.too_costly' }, 'the same through a named fragment')
  const plain = await gql(
    `{ ${Array.from({ length: 100 }, (_, i) => `a${i}: incidents { nodes { id number payload { title description } } }`).join(' ')} }`
  )
  t.equal(
    plain.body.errors[0].extensions.cost,
    r.body.errors[0].extensions.cost,
    'and costs what the same selection without a fragment costs'
  )
})

t.test(
  'the values of list arguments are counted: 70,000 states are refused before the service binds them',
  async (t) => {
    const states = Array.from({ length: 70_000 }, () => 'REPORTED')
    const r = await gql('query($s: [IncidentState!]) { incidents(state: $s) { nodes { id } } }', { s: states })
    t.equal(r.status, 400)
    t.notOk('data' in r.body, 'nothing ran')
    t.match(r.body.errors[0].extensions, { code: 'graphql.too_costly' })
    t.ok(r.body.errors[0].extensions.cost > 70_000, `cost ${r.body.errors[0].extensions.cost}`)
    const inList = await gql('query($v: [String!]) { incidents(filter: { title: { in: $v } }) { nodes { id } } }', {
      v: Array.from({ length: 70_000 }, (_, i) => `t${i}`)
    })
    t.match(inList.body.errors?.[0]?.extensions, { code: 'graphql.too_costly' }, 'the same for an in filter')
    const some = await gql('query($s: [IncidentState!]) { incidents(state: $s) { nodes { id } } }', {
      s: states.slice(0, 1000)
    })
    t.equal(some.body.errors, undefined, 'a thousand run')
  }
)

t.test('lookups are counted: 12,000 aliases of record(id) are refused before any is made', async (t) => {
  const made = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Looked up' }) }
  })
  const aliases = (n: number) =>
    `query($i: ID!) { ${Array.from({ length: n }, (_, k) => `r${k}: record(id: $i) { id }`).join(' ')} }`
  let lookups = 0
  const service = server.running.app.service('api/v1/records')
  const get = service.get
  service.get = function (this: unknown, ...args: any[]) {
    lookups++
    return (get as any).apply(this, args)
  } as any
  try {
    const r = await gql(aliases(12_000), { i: made.body.id })
    t.equal(r.status, 400)
    t.notOk('data' in r.body, 'nothing ran')
    t.match(r.body.errors[0].extensions, { code: /^graphql\.too_(costly|large)$/ })
    const some = await gql(aliases(500), { i: made.body.id })
    t.match(
      some.body.errors?.[0]?.extensions,
      { code: 'graphql.too_costly' },
      '500 lookups in one operation are over the bound'
    )
    t.equal(lookups, 0, 'no lookup was made')
    const few = await gql(aliases(5), { i: made.body.id })
    t.equal(few.body.data.r4.id, made.body.id, 'a few lookups run')
    t.equal(lookups, 5)
  } finally {
    service.get = get
  }
})

t.test(
  'activity entries are charged as they are handed out: a long history under many aliases runs out of budget',
  async (t) => {
    const globex = server.keys.globex
    const made = await server.request('POST', '/api/v1/records', {
      token: globex,
      body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Long history' }) }
    })
    t.equal(made.status, 201)
    for (let i = 1; i < 60; i++) {
      const r = await server.request('PATCH', `/api/v1/records/${made.body.id}`, {
        token: globex,
        body: { payload: { site: `Site ${i}` } }
      })
      if (r.status !== 200) throw new Error(`setup: ${r.status} ${r.text}`)
    }
    // 35 × (252 + 1 + 1) = 8,890 units reserved and 35 lookups (5 each) fit Globex's 10,000; 35 × 60 activity entries do not.
    const query = `query($i: ID!) { ${Array.from({ length: 35 }, (_, k) => `r${k}: record(id: $i) { activity { id } }`).join(' ')} }`
    const r = await gql(query, { i: made.body.id }, { token: globex })
    t.equal(r.status, 200)
    t.match(
      r.body.errors?.[0]?.extensions,
      { code: 'request.too_costly', status: 422 },
      'the fields past the budget fail'
    )
    const answered = Object.values(r.body.data ?? {}).filter((v: any) => v?.activity?.length === 60).length
    t.ok(answered > 0 && answered < 35, `${answered} of 35 histories were handed out`)
    const one = await gql(
      'query($i: ID!) { record(id: $i) { activity { id } } }',
      { i: made.body.id },
      { token: globex }
    )
    t.equal(one.body.data.record.activity.length, 60, 'one history fits')
  }
)

t.test('an expensive operation counts as several requests against the rate limit', async (t) => {
  const remaining = (r: { headers: Headers }) => Number(r.headers.get('x-ratelimit-remaining'))
  const before = await gql('{ me { tenantId } }')
  // 1 + 250 (incidents, a lookup) + 200 (nodes) + 200 × 9 fields + 200 (payload) + 200 × 5 payload fields = 3,451 per alias; three aliases 10,353:
  // five requests' worth (2,500 units each).
  const page =
    'incidents(first: 200) { nodes { id number state version createdAt updatedAt moduleKey moduleVersion externalRef payload { title site severity category description } } }'
  const expensive = await gql(`{ a: ${page} b: ${page} c: ${page} }`)
  t.equal(expensive.body.errors, undefined)
  const after = await gql('{ me { tenantId } }')
  t.equal(remaining(before) - remaining(after), 5 + 1, 'the expensive operation counted as 5 requests, the next as 1')
})

t.test(
  'an operation the caller cannot afford is refused before it runs: 429 past the rate limit, 422 past the budget',
  async (t) => {
    const p = { ...incidentPayload({ title: 'Not affordable' }), category: 'NEAR_MISS', severity: 'LOW' }
    // Each createIncident costs 1 + 250 (a write) + 1 (id): 50 of them 12,600 units, five requests' worth and some.
    const creates = (n: number) =>
      `mutation($p: IncidentPayloadInput!) { ${Array.from({ length: n }, (_, i) => `c${i}: createIncident(payload: $p) { id }`).join(' ')} }`
    const initech = server.keys.initech
    const rateLimited = await gql(creates(50), { p }, { token: initech })
    t.equal(rateLimited.status, 429)
    t.match(rateLimited.body, { code: 'rate_limit.exceeded', weight: 6 })
    t.ok(rateLimited.headers.get('retry-after'))
    const inInitech = await server.request(
      'GET',
      `/api/v1/records?moduleKey=incident&payload[title]=${encodeURIComponent('Not affordable')}`,
      { token: initech }
    )
    t.same(inInitech.body.items, [], 'nothing was created')
    const overBudget = await gql(creates(40), { p }, { token: server.keys.globex })
    t.equal(
      overBudget.status,
      422,
      '40 creates (10,080 units) pass the cost bound but not the 10,000 units of a Globex request'
    )
    t.match(overBudget.body, { code: 'request.too_costly', budget: 10_000, for: 'graphql operation' })
    const inGlobex = await server.request(
      'GET',
      `/api/v1/records?moduleKey=incident&payload[title]=${encodeURIComponent('Not affordable')}`,
      { token: server.keys.globex }
    )
    t.same(inGlobex.body.items, [], 'nothing was created')
  }
)

t.test('several mutations: each committed one keeps its result, a failed one is null with its error', async (t) => {
  const p = { ...incidentPayload({ title: 'Serial mutation' }), category: 'NEAR_MISS', severity: 'LOW' }
  const r = await gql(
    `mutation($p: IncidentPayloadInput!) { a: createIncident(payload: $p) { id number } b: deleteRecord(id: "0b8c5c1e-5a3f-4e61-9d7e-3d2f6c1a9b00") { id } c: createIncident(payload: $p) { id } }`,
    { p },
    { headers: { accept: 'application/json' } }
  )
  t.equal(r.status, 200)
  t.match(
    r.body.data,
    { a: { id: String, number: /^INC-/ }, b: null, c: { id: String } },
    'the results of the mutations that committed'
  )
  t.equal(r.body.errors.length, 1)
  t.match(r.body.errors[0], { path: ['b'], extensions: { code: 'record.not_found', status: 404 } })
  t.equal(await count('Serial mutation'), 2)
})

t.test('an Idempotency-Key on mutations spread from a fragment is refused like on several fields', async (t) => {
  const p = { ...incidentPayload({ title: 'Two through a fragment' }), category: 'NEAR_MISS', severity: 'LOW' }
  const headers = { 'idempotency-key': 'gql-fragment-two' }
  const viaFragment = await gql(
    `mutation($p: IncidentPayloadInput!) { ...Two } fragment Two on Mutation { a: createIncident(payload: $p) { id } b: createIncident(payload: $p) { id } }`,
    { p },
    { headers }
  )
  t.match(viaFragment.body.errors?.[0], {
    message: /one mutation field; this one has 2/,
    extensions: { code: 'idempotency.one_mutation', status: 400 }
  })
  const viaInline = await gql(
    `mutation($p: IncidentPayloadInput!) { a: createIncident(payload: $p) { id } ... on Mutation { b: createIncident(payload: $p) { id } } }`,
    { p },
    { headers }
  )
  t.match(viaInline.body.errors?.[0]?.extensions, { code: 'idempotency.one_mutation' })
  t.equal(await count('Two through a fragment'), 0, 'nothing was created')
  const one = await gql(
    `mutation($p: IncidentPayloadInput!) { ...One } fragment One on Mutation { createIncident(payload: $p) { id } }`,
    { p: { ...p, title: 'One through a fragment' } },
    { headers: { 'idempotency-key': 'gql-fragment-one' } }
  )
  t.ok(one.body.data.createIncident.id, 'one mutation field through a fragment takes the key')
})

t.test(
  'a document nested thousands deep is refused as too deep before it is parsed, not with a stack overflow',
  async (t) => {
    for (const [what, query] of [
      ['lists', `{ incidents(state: ${'['.repeat(20_000)}${']'.repeat(20_000)}) { nodes { id } } }`],
      ['objects', `{ incidents(filter: ${'{title: '.repeat(5_000)}"x"${'}'.repeat(5_000)}) { nodes { id } } }`],
      ['selections', `{ me ${'{ me '.repeat(10_000)}${'}'.repeat(10_001)}`]
    ] as const) {
      const r = await gql(query)
      t.equal(r.status, 400, what)
      t.notOk('data' in r.body)
      t.match(
        r.body.errors?.[0],
        { message: /nests \d+ levels|more than \d+ levels/, extensions: { code: 'graphql.too_deep', status: 400 } },
        what
      )
      t.notMatch(r.text, /call stack/)
    }
    const braces = await gql('{ me { tenantId } }', undefined)
    t.same(braces.body, { data: { me: { tenantId: 'acme' } } })
    const inString = await gql(`{ incidents(filter: { title: { eq: "${'['.repeat(5000)}" } }) { nodes { id } } }`)
    t.equal(inString.body.errors, undefined, 'brackets inside a string are text, not nesting')
  }
)

t.test('an `in` filter matches whole values: a value with a comma is not split into two', async (t) => {
  for (const title of ['Rita report', 'Smith, Rita report']) {
    const r = await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload({ title }) }
    })
    t.equal(r.status, 201)
  }
  const titles = (filter: Record<string, unknown>) =>
    gql('query($f: IncidentFilter) { incidents(filter: $f) { nodes { payload { title } } } }', { f: filter })
  const split = await titles({ title: { in: ['no-such,Rita report'] } })
  t.same(split.body.data.incidents.nodes, [], 'no record matched: the value is not split on its comma')
  const withComma = await titles({ title: { in: ['Smith, Rita report', 'Elsewhere'] } })
  t.same(
    withComma.body.data.incidents.nodes.map((n: any) => n.payload.title),
    ['Smith, Rita report'],
    'a listed value holding a comma matches itself'
  )
  const both = await titles({ title: { in: ['Rita report', 'Elsewhere'] } })
  t.same(
    both.body.data.incidents.nodes.map((n: any) => n.payload.title),
    ['Rita report']
  )
  const rest = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&payload[title][in][]=${encodeURIComponent('Smith, Rita report')}&payload[title][in][]=Elsewhere`
  )
  t.equal(rest.status, 200)
  t.same(
    rest.body.items.map((r: any) => r.payload.title),
    ['Smith, Rita report'],
    'REST takes the list form too'
  )
  const exact = await titles({ title: { eq: 'Smith, Rita report' } })
  t.same(
    exact.body.data.incidents.nodes.map((n: any) => n.payload.title),
    ['Smith, Rita report'],
    'eq matches a value with a comma'
  )
})

t.test(
  "the token count before parsing is a lower bound: it refuses only what GraphQL's own token limit would",
  async (t) => {
    const documents = [
      getIntrospectionQuery(),
      'query Q($a: [ID!]! = ["x", "y"], $b: Float = -1.5e3) @dir(x: 1) { ...F a: me { tenantId } ... on Query { me { __typename } } } fragment F on Query { me { tenantId } } # a comment { [ (',
      '{ incidents(filter: { title: { eq: """a block { string \\""" with \\""" escapes""" } }) { nodes { id } } }'
    ]
    for (const doc of documents) {
      const lexer = new Lexer(new Source(doc))
      let count = 0
      while (lexer.advance().kind !== TokenKind.EOF) count++
      const limits = { maxNesting: 64, maxTokens: count } as Parameters<typeof parseWithin>[1]
      t.doesNotThrow(() => parseWithin(doc, limits), `${count} tokens pass at a limit of ${count}`)
      let refusal: unknown
      try {
        parseWithin(doc, { ...limits, maxTokens: count - 1 })
      } catch (err) {
        refusal = err
      }
      t.match(refusal, { extensions: { code: 'graphql.too_large' } }, `and are refused at ${count - 1}`)
    }
  }
)

t.test(
  'only the operation that runs is measured: a costly operation beside it in the document neither refuses it nor is charged',
  async (t) => {
    const costly = `query Costly { ${Array.from({ length: 30 }, (_x, i) => `a${i}: incidents(first: 200) { nodes { id number state } }`).join(' ')} }`
    const doc = `${costly} query Cheap { me { tenantId } }`
    const cheap = await server.request('POST', '/api/graphql', { body: { query: doc, operationName: 'Cheap' } })
    t.same(cheap.body, { data: { me: { tenantId: 'acme' } } }, 'the cheap operation runs')
    const refused = await server.request('POST', '/api/graphql', { body: { query: doc, operationName: 'Costly' } })
    t.equal(
      refused.body.errors?.[0]?.extensions?.code,
      'graphql.too_costly',
      'the costly one is refused when it is the one to run'
    )
  }
)
