import t, { type Test } from '../helpers/tap.ts'
import fc from 'fast-check'
import { startTestServer } from '../helpers/server.ts'
import { basesOf, type Workflow } from './bases.ts'
import { caseArbitrary, type Case, type Mutation } from './cases.ts'
import { Exchange } from './exchange.ts'
import { framingDefects } from './framing.ts'
import { operationsOf } from './operations.ts'
import { PayloadCheck, type Me } from './oracles.ts'
import { fuzzEnv, fuzzProperty } from './property.ts'
import { Pools } from './seed.ts'
import { Snapshots } from './snapshot.ts'
import type { WireRequest } from './wire.ts'

/**
 * Spec-driven fuzzing: every operation of the live tenant OpenAPI document gets valid
 * requests derived from its schemas, mutated with hostile values (see hostile.ts and
 * docs/fuzzing.md). Every answer must be a success, or a refusal that is an RFC 7807
 * problem and changed nothing; never a 5xx; within FUZZ_BOUND_MS. Answers outside the
 * OpenAPI document are collected and reported by one test of their own at the end.
 *
 * FUZZ_RUNS (cases per operation, twice that for one that takes a JSON or NDJSON body: it has
 * more places to attack), FUZZ_SEED and FUZZ_OPS (a regex on operation ids) come from the
 * environment; `npm run fuzz -- --runs N --seed S` sets them for a long run.
 */
const { runs, seed, only } = fuzzEnv
// 5 s: the slowest honest answer here (a 1 MiB body parsed and validated, the tenant document
// built once) takes well under a second even on a busy 2-core machine; 5 s leaves room for GC
// pauses and a neighbour's load while still catching validation that takes tens of seconds.
const boundMs = fuzzEnv.boundMs(5_000)

const server = await startTestServer({ limits: { attachmentUrlsPerMinute: 1_000_000 } })
let snapshots: Snapshots | undefined
t.teardown(async () => {
  await snapshots?.close()
  await server.close()
})

const spec = await server.request('GET', '/api/docs/spec.json', { token: server.keys.acme })
if (spec.status !== 200) throw new Error(`GET /api/docs/spec.json answered ${spec.status}`)
const doc = spec.body
// Each operation's seed is FUZZ_SEED plus its place in the whole document, so FUZZ_OPS replays it.
const allOperations = operationsOf(doc)
const operations = allOperations.filter((op) => !only || only.test(op.id))

const modules: string[] = (await server.request('GET', '/api/v1/modules')).body.items.map((m: { key: string }) => m.key)
const workflows: Record<string, Workflow> = {}
for (const m of modules) workflows[m] = (await server.request('GET', `/api/v1/modules/${m}`)).body.workflow

const pools = new Pools(server, doc, server.keys.globex)
await pools.seed(modules)
// After seeding, so tables made on first use (the job queue) are known.
snapshots = await Snapshots.open(server.platform.config.database.url!)

// A narrowed admin service account: what it mints must never exceed what it may do itself.
const narrow = (
  await server.platform.credentials.create({
    tenantId: 'acme',
    kind: 'service_account',
    name: 'fuzz narrow',
    scopes: ['tokens:write', 'records:read:incident', 'records:write:incident', 'modules:read'],
    roles: ['admin', 'reporter']
  })
).token
const tokens = { 'api-key': server.keys.acme, narrow }
const me: Record<string, Me> = {}
for (const [who, token] of Object.entries(tokens)) me[who] = (await server.request('GET', '/api/v1/me', { token })).body

const exchange = new Exchange({
  server,
  pools,
  snapshots,
  workflows,
  tokens,
  me,
  payloads: new PayloadCheck(doc),
  doc,
  boundMs
})

/** A case as the request it becomes (fast-check shows it as the counterexample). */
const show = (c: Case) =>
  `${c.base.op.method} ${c.base.op.path} [${c.base.label}] as ${String(c.caller)} with ${JSON.stringify(c.mutations)}${'defect' in c ? ` and framing defect ${String(c.defect)}` : ''}`

/** Runs cases under fast-check (property.ts: shrinking within a budget, a failure reported with its repro). */
const fuzz = (
  t: Test,
  arbitrary: fc.Arbitrary<Case>,
  index: number,
  send: (c: Case) => Promise<void>,
  numRuns = runs
) => fuzzProperty(t, arbitrary, { seed: seed + index, numRuns, show }, send)

// A case takes 20-60 ms on a busy 2-core machine (~950 cases by default: ~20-60 s in all);
// 250 ms a case leaves room for a slower machine and for shrinking the failures of a bad day.
const planned =
  operations.reduce((n, op) => n + (op.body?.schema ? 2 : 1) * runs, 0) + Math.max(framingDefects.length, runs)
t.setTimeout(Number(process.env.FUZZ_TIMEOUT_MS ?? Math.max(240_000, planned * 250)))

const started = performance.now()
t.comment(
  `fuzzing ${operations.length} operations, ${runs} cases each (${2 * runs} with a JSON or NDJSON body), ${planned} in all before shrinking; seed ${seed}, bound ${boundMs} ms per answer`
)

for (const op of operations) {
  const index = allOperations.indexOf(op)
  await t.test(
    `${op.method} ${op.path} answers hostile requests with a success or a problem, in time, changing nothing when it refuses`,
    async (t) => {
      const bases = basesOf(op, doc, pools, workflows)
      const numRuns = op.body?.schema ? 2 * runs : runs
      if (await fuzz(t, caseArbitrary(bases), index, (c) => exchange.run(c), numRuns))
        t.pass(`${exchange.sent.get(op.id) ?? 0} requests to ${op.id}`)
    }
  )
}

await t.test(
  'malformed HTTP framing (control bytes in headers, raw bytes in the target, a head past 16 KiB) is answered with a problem too',
  async (t) => {
    const targets = allOperations.filter((op) =>
      ['getMe', 'createRecord', 'updateRecord', 'listRecords'].includes(op.id)
    )
    const bases = targets.flatMap((op) => basesOf(op, doc, pools, workflows).slice(0, 1))
    const arbitrary: fc.Arbitrary<Case & { defect: number }> = fc.record({
      base: fc.constantFrom(...bases),
      caller: fc.constant('api-key' as const),
      key: fc.constant('none' as const),
      mutations: fc.constant([] as Mutation[]),
      defect: fc.nat({ max: framingDefects.length - 1 })
    })
    const damage = (c: Case) => (w: WireRequest) => {
      const d = framingDefects[(c as Case & { defect: number }).defect]
      d.apply(w)
      return `framing: ${d.label}`
    }
    if (
      await fuzz(
        t,
        arbitrary,
        allOperations.length,
        (c) => exchange.run(c, damage(c)),
        Math.max(framingDefects.length, runs)
      )
    )
      t.pass(`${exchange.sent.get('framing')} requests with damaged framing`)
  }
)

await t.test('every answer the fuzzer got is one the OpenAPI document describes', async (t) => {
  for (const [what, repro] of exchange.contract) t.fail(what, { repro, stack: '' })
  if (!exchange.contract.size) t.pass('no answer broke the document')
  // Reported here, with their repros; the server's own check at close() would only list them again.
  server.violations.length = 0
})

t.comment(`requests sent per operation: ${[...exchange.sent].map(([id, n]) => `${id} ${n}`).join(', ')}`)
t.comment(
  `fuzz requests sent in total: ${exchange.total()} in ${((performance.now() - started) / 1000).toFixed(1)} s (plus ${exchange.oracleRequests} oracle requests); slowest answer ${exchange.slowest.label}`
)
