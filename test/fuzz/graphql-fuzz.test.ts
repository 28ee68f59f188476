// tap: own process (a fuzz campaign: its length follows FUZZ_RUNS and it sets its own timeout, which an area's shared process would cap)
import { getIntrospectionQuery, type IntrospectionQuery } from 'graphql'
import t from '../helpers/tap.ts'
import { document, fieldCases, GraphQLSchemaView, multiMutationCases, showCase, type GqlCase } from './graphql-cases.ts'
import { problemIssues } from './oracles.ts'
import { leaked, mediaType, parseJson, percentEncode, Probe, type Judgement, type ProbeCase } from './probe.ts'
import { fuzzEnv, fuzzProperty } from './property.ts'
import { seededFuzzServer } from './seed.ts'
import { jsonText, obj, type JsonLike, type WireReply, type WireRequest } from './wire.ts'

/**
 * Schema-driven GraphQL fuzzing (docs/fuzzing.md): the schema comes from introspection of
 * /api/graphql with the tenant's API key; every query and mutation field gets operations
 * built from its argument and output types, with hostile argument values, aliases,
 * fragments, introspection, and documents of several mutations. Every answer must be
 * GraphQL (200, or a 4xx in GraphQL's shape or as a problem) with a code on each error and
 * nothing internal in it, within the bound; an answer of errors only changed nothing. A
 * "cost" family of operations built to be expensive must be refused, fast.
 *
 * FUZZ_RUNS / 2 cases per root field (FUZZ_RUNS as for the OpenAPI fuzz, default 25),
 * FUZZ_SEED, FUZZ_OPS (a regex on field names, `multi-mutation` and `cost`).
 */
const runs = Math.max(1, Math.round(fuzzEnv.runs / 2))
// 2 s: an honest GraphQL answer here (a page of two records, a create) takes tens of
// milliseconds even on a busy 2-core machine; a cost or parser blow-up takes seconds.
const boundMs = fuzzEnv.boundMs(2_000)
// A slow answer is waited for this long, so its repro says how slow it was.
const patienceMs = 30_000
const selected = (name: string) => !fuzzEnv.only || fuzzEnv.only.test(name)

const { server, token, snapshots, pools } = await seededFuzzServer(t)
const introspection = await server.request('POST', '/api/graphql', { token, body: { query: getIntrospectionQuery() } })
if (introspection.status !== 200 || !introspection.body?.data)
  throw new Error(`introspection answered ${introspection.status}: ${introspection.text.slice(0, 300)}`)
const view = new GraphQLSchemaView((introspection.body.data as IntrospectionQuery).__schema)
const probe = new Probe({ server, snapshots, boundMs, tokens: { 'api-key': token } })

const encode = percentEncode

function wire(
  c: Pick<GqlCase, 'transport' | 'quirk'>,
  query: string,
  variables: Record<string, JsonLike>,
  operationName: string | undefined,
  notes: string[]
): WireRequest {
  const accept = c.transport === 'json' ? 'application/json' : 'application/graphql-response+json'
  const headers: Array<[string, string]> = [
    ['Authorization', `Bearer ${token}`],
    ['Accept', accept]
  ]
  const vars: JsonLike = c.quirk === 'variables-array' ? [variables] : variables
  if (c.transport === 'get') {
    const target = `/api/graphql?query=${encode(query)}&variables=${encode(jsonText(vars))}${operationName ? `&operationName=${operationName}` : ''}`
    if (target.length <= 8_000) return { method: 'GET', target, headers }
    notes.push('sent as POST: too long for a GET')
  }
  const body = obj([
    ['query', query],
    ['variables', vars]
  ])
  if (operationName) body.operationName = operationName
  return {
    method: 'POST',
    target: '/api/graphql',
    headers: [...headers, ['Content-Type', 'application/json']],
    body: Buffer.from(jsonText(body), 'utf8')
  }
}

const stacky = (v: unknown): boolean =>
  !!v &&
  typeof v === 'object' &&
  Object.keys(v).some(
    (k) => k === 'stack' || k === 'stacktrace' || k === 'exception' || stacky((v as Record<string, unknown>)[k])
  )

/** The GraphQL oracle: the shape of the answer, codes on errors, nothing internal; whether it answered errors only. */
function judgeGraphQL(reply: WireReply, acceptsGraphQLResponse: boolean, expectedCodes?: RegExp): Judgement {
  const issues: string[] = [...leaked(reply.text)]
  const type = mediaType(reply)
  if (reply.status >= 400 && reply.status < 500) {
    issues.push(...problemIssues(reply))
    if (type === 'application/graphql-response+json' && reply.status !== 400)
      issues.push(`a GraphQL response with status ${reply.status}; GraphQL over HTTP answers a request error 400`)
  } else if (reply.status !== 200) issues.push(`answered ${reply.status}, not 200 or a 4xx`)
  const parsed = parseJson(reply.text)
  let errorsOnly = reply.status >= 400
  const codes: string[] = []
  if (reply.status === 200) {
    if (!['application/json', 'application/graphql-response+json'].includes(type))
      issues.push(`a 200 with Content-Type ${JSON.stringify(reply.headers['content-type'] ?? '(none)')}`)
    const body = parsed.ok ? parsed.value : undefined
    if (!body || typeof body !== 'object' || Array.isArray(body)) issues.push('a 200 whose body is not a JSON object')
    else {
      const extra = Object.keys(body).filter((k) => !['data', 'errors', 'extensions'].includes(k))
      if (extra.length) issues.push(`a GraphQL response with member(s) ${extra.join(', ')}`)
      if (!('data' in body) && !('errors' in body)) issues.push('a GraphQL response with neither data nor errors')
      if ('errors' in body && (!Array.isArray(body.errors) || !body.errors.length))
        issues.push(`"errors" is ${JSON.stringify(body.errors)?.slice(0, 100)}, not a non-empty list`)
      if (!('data' in body) && acceptsGraphQLResponse)
        issues.push(
          'a request error (no data) answered 200 under application/graphql-response+json; GraphQL over HTTP wants 400'
        )
      const data = body.data
      errorsOnly =
        Array.isArray(body.errors) &&
        (data === null ||
          data === undefined ||
          (typeof data === 'object' && Object.values(data).every((v) => v === null)))
    }
  }
  const body = parsed.ok ? parsed.value : undefined
  if (Array.isArray(body?.errors))
    for (const e of body.errors) {
      const code = e?.extensions?.code
      if (typeof e?.message !== 'string' || !e.message)
        issues.push(`an error without a message: ${JSON.stringify(e).slice(0, 200)}`)
      if (typeof code !== 'string' || !code)
        issues.push(`an error without extensions.code: ${JSON.stringify(e).slice(0, 200)}`)
      else codes.push(code)
      if (code === 'internal.error')
        issues.push(`an internal error at ${JSON.stringify(e.path ?? '(request)')}: ${String(e.message).slice(0, 200)}`)
      if (stacky(e?.extensions)) issues.push('an error whose extensions carry a stack')
    }
  if (body && typeof body === 'object' && typeof body.code === 'string') codes.push(body.code)
  if (expectedCodes) {
    if (!errorsOnly) issues.push('answered with data: an operation this costly must be refused before it runs')
    else if (!codes.some((c) => expectedCodes.test(c)))
      issues.push(
        `refused with code(s) ${JSON.stringify([...new Set(codes)].slice(0, 5))}, none matching ${expectedCodes}`
      )
  }
  return { refused: errorsOnly, issues: [...new Set(issues)] }
}

async function runCase(c: GqlCase) {
  const d = document(view, pools, c)
  const notes = [...d.notes]
  const w = wire(c, d.query, d.variables, d.operationName, notes)
  const label = `${c.parts.map((p) => p.root.field.name).join(' + ')} via ${w.method}${c.transport === 'json' ? ' (Accept: application/json)' : ''}`
  const pc: ProbeCase = {
    family: c.family,
    label,
    notes: [
      ...notes,
      `document: ${d.query.length > 600 ? `${d.query.slice(0, 600)}…(${d.query.length} chars)` : d.query}`
    ],
    wire: w
  }
  const reply = await probe.run({ ...pc, patienceMs }, (r) => judgeGraphQL(r, c.transport !== 'json'))
  // A write that went through may have used up a seeded record: made again for the next case.
  if (d.mutation && reply && reply.status === 200) await pools.replenish('deleteRecord', [])
}

const planned =
  view.roots.filter((r) => selected(r.field.name)).length * runs + (selected('multi-mutation') ? runs * 2 : 0) + 8
// ~40 ms a case on a busy machine; 500 ms leaves room for shrinking a bad day's failures.
t.setTimeout(Number(process.env.FUZZ_TIMEOUT_MS ?? Math.max(180_000, planned * 500)))
const started = performance.now()
t.comment(
  `fuzzing ${view.roots.length} GraphQL root fields (${view.roots.filter((r) => r.kind === 'mutation').length} mutations), ${runs} cases each; seed ${fuzzEnv.seed}, bound ${boundMs} ms per answer`
)

for (const [i, root] of view.roots.entries()) {
  if (!selected(root.field.name)) continue
  await t.test(
    `${root.kind} ${root.field.name} answers hostile operations with data or coded GraphQL errors, in time, changing nothing when it only errs`,
    async (t) => {
      if (await fuzzProperty(t, fieldCases(root), { seed: fuzzEnv.seed + i, numRuns: runs, show: showCase }, runCase))
        t.pass(`${probe.sent.get(root.field.name) ?? 0} requests to ${root.field.name}`)
    }
  )
}

if (selected('multi-mutation'))
  await t.test(
    'documents of several mutations, some hostile, write all or answer errors that changed nothing',
    async (t) => {
      if (
        await fuzzProperty(
          t,
          multiMutationCases(view.roots),
          { seed: fuzzEnv.seed + view.roots.length, numRuns: runs * 2, show: showCase },
          runCase
        )
      )
        t.pass(`${probe.sent.get('multi-mutation') ?? 0} multi-mutation documents`)
    }
  )

/** Operations built to be expensive, from the schema: each must be refused with a cost code, in time, having changed nothing. */
function costCases(): Array<{ label: string; query: string }> {
  const query = view.roots.filter((r) => r.kind === 'query')
  const connection = query.find((r) => view.fields(r.field.type).some((f) => f.name === 'nodes'))!
  const node = view.type(view.fields(connection.field.type).find((f) => f.name === 'nodes')!.type)
  const lookup = query.find(
    (r) => r.field.args.length === 1 && r.field.args[0].name === 'id' && view.type(r.field.type).kind === 'OBJECT'
  )!
  const lookupId = pools.id(
    `record:${pools.modules.find((m) => lookup.field.name === m.replace(/-(.)/g, (_x, c: string) => c.toUpperCase())) ?? 'incident'}:0`
  )
  const schemaSelection =
    '__schema { types { name kind description fields(includeDeprecated: true) { name description args { name type { name kind ofType { name kind } } } type { name kind ofType { name kind ofType { name } } } } } }'
  const cycle = view.cycle()
  const deep = cycle
    ? [...cycle.prefix, ...Array.from({ length: Math.ceil(2_000 / cycle.loop.length) }, () => cycle.loop).flat()].slice(
        0,
        2_000
      )
    : []
  const bomb = Array.from({ length: 22 }, (_x, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`).join('\n')
  return [
    {
      label: '100 aliases of a full __schema',
      query: `{ ${Array.from({ length: 100 }, (_x, i) => `s${i}: ${schemaSelection}`).join(' ')} }`
    },
    {
      label: 'a fragment bomb: F0 spreads F1 twice, … F21 spreads F22 twice (4 million spreads)',
      query: `{ ...F0 }\n${bomb}\nfragment F22 on Query { __typename }`
    },
    {
      label: 'a fragment bomb whose leaf is a field: F22 { me { __typename } }',
      query: `{ ...F0 }\n${bomb}\nfragment F22 on Query { me { __typename } }`
    },
    {
      label: `300 aliases of ${connection.field.name}, its list reached through inline fragments (no "first")`,
      query: `{ ${Array.from({ length: 300 }, (_x, i) => `c${i}: ${connection.field.name} { ... on ${view.type(connection.field.type).name} { nodes { ... on ${node.name} { ${view.select(node.name, 2)} } } } }`).join(' ')} }`
    },
    {
      label: `12,000 aliased ${lookup.field.name}(id:) lookups`,
      query: `{ ${Array.from({ length: 12_000 }, (_x, i) => `l${i}: ${lookup.field.name}(id: "${lookupId}") { id }`).join(' ')} }`
    },
    {
      label: '12,000 aliased me { __typename }',
      query: `{ ${Array.from({ length: 12_000 }, (_x, i) => `m${i}: me { __typename }`).join(' ')} }`
    },
    {
      label: `${connection.field.name}(first: 200) with every node's lists, 50 aliases`,
      query: `{ ${Array.from({ length: 50 }, (_x, i) => `p${i}: ${connection.field.name}(first: 200) { nodes { ${view.select(node.name, 3)} } }`).join(' ')} }`
    },
    ...(cycle
      ? [
          {
            label: `a selection nested 2,000 levels through ${[...cycle.prefix, ...cycle.loop].join('.')}…`,
            query: `{ ${deep.join(' { ')} { __typename }${' }'.repeat(deep.length - 1)} }`
          }
        ]
      : [])
  ]
}

if (selected('cost'))
  await t.test(
    'costly operations (aliased introspection, fragment bombs, lists behind inline fragments, 12,000 aliases) are refused fast with a cost code',
    async (t) => {
      for (const [n, k] of costCases().entries()) {
        // Each once, the Accept header alternating: a case the service does not refuse can take many seconds.
        const transport = n % 2 ? 'json' : 'graphql-response'
        const notes = [`cost: ${k.label}`]
        const w = wire({ transport, quirk: 'none' }, k.query, {}, undefined, notes)
        try {
          await probe.run(
            {
              family: 'cost',
              label: `${k.label} (Accept: ${transport === 'json' ? 'application/json' : 'application/graphql-response+json'})`,
              notes: [...notes, `document: ${k.query.slice(0, 300)}…(${k.query.length} chars)`],
              wire: w,
              patienceMs
            },
            (r) => judgeGraphQL(r, transport !== 'json', /^(graphql|request)\.too_/)
          )
          t.pass(k.label)
        } catch (err) {
          t.fail((err as Error).message.split('\n').slice(0, 2).join(' '), { repro: (err as Error).message, stack: '' })
        }
      }
    }
  )

await t.test('every answer the GraphQL fuzzer got is one the OpenAPI document describes', async (t) => {
  await probe.settle()
  for (const [what, repro] of probe.contract) t.fail(what, { repro, stack: '' })
  if (!probe.contract.size) t.pass('no answer broke the document')
  server.violations.length = 0
})

t.comment(`graphql requests sent per family: ${[...probe.sent].map(([id, n]) => `${id} ${n}`).join(', ')}`)
t.comment(
  `graphql fuzz requests sent in total: ${probe.total()} in ${((performance.now() - started) / 1000).toFixed(1)} s; slowest answer ${probe.slowest.label}`
)
