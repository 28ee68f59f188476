/**
 * `npm run bench:validation`: the service's CPU per request for the worst bodies a client
 * can send within the 1 MiB body cap (huge invalid arrays, tens of thousands of unknown
 * keys, deep nesting, NUL-laden strings), against a valid create and an ordinary 400 in
 * the same run. The target: every such body answered within 100 ms of the service's CPU.
 * The service runs in its own process (bench/service-server.ts); its CPU is read over IPC
 * before and after each request, so the client's work does not count. A figure, never a failure.
 *
 * Usage: DATABASE_URL=postgres://… npm run bench:validation [-- --runs N]
 */
import { parseArgs } from 'node:util'
import { projectRoot } from '../core/paths.ts'
import { benchDatabase, createPayload, fmt, median, startChild, table } from './common.ts'

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '7' } } })
const runs = Number(args.runs)
const maxBytes = 1_048_576

const db = await benchDatabase()
const service = await startChild('service', 'bench/service-server.ts', ['--database-url', db.url], projectRoot)

const json = (value: unknown) => JSON.stringify(value)
const create = (payload: unknown) => json({ moduleKey: 'incident', payload })
/** The largest n (by doubling then bisecting) whose body still fits the cap. */
function fill(make: (n: number) => string): string {
  let lo = 1
  let hi = 2
  while (make(hi).length <= maxBytes) hi *= 2
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1
    if (make(mid).length <= maxBytes) lo = mid
    else hi = mid
  }
  return make(lo)
}
const many = <T>(n: number, f: (i: number) => T) => Array.from({ length: n }, (_, i) => f(i))

const recordId = (await (await fetch(`${service.url}/api/v1/records`, { method: 'POST', headers: { authorization: `Bearer ${service.token}`, 'content-type': 'application/json' }, body: create(createPayload) })).json()).id

interface Case {
  name: string
  method?: string
  path?: string
  contentType?: string
  body: () => string
}
const cases: Case[] = [
  { name: 'baseline: valid create (201)', body: () => create(createPayload) },
  { name: 'baseline: one invalid field (400)', body: () => create({ ...createPayload, severity: 'extreme' }) },
  { name: '60,000 invalid bodyParts', body: () => create({ ...createPayload, bodyParts: many(60_000, (i) => `part-${i}`) }) },
  { name: 'bodyParts of invalid strings, filling 1 MiB', body: () => fill((n) => create({ ...createPayload, bodyParts: many(n, (i) => `p${i}`) })) },
  { name: 'bodyParts of zeros, filling 1 MiB', body: () => fill((n) => create({ ...createPayload, bodyParts: many(n, () => 0) })) },
  { name: 'bodyParts of empty objects, filling 1 MiB', body: () => fill((n) => create({ ...createPayload, bodyParts: many(n, () => ({})) })) },
  { name: '60,000 unknown payload keys', body: () => create({ ...createPayload, ...Object.fromEntries(many(60_000, (i) => [`k${i}`, 1])) }) },
  { name: 'unknown payload keys, filling 1 MiB', body: () => fill((n) => create({ ...createPayload, ...Object.fromEntries(many(n, (i) => [`k${i}`, 0])) })) },
  { name: 'strings with NUL, filling 1 MiB', body: () => fill((n) => create({ ...createPayload, bodyParts: many(n, () => 'a\u0000') })) },
  { name: '49 objects of 1,000 distinct members', body: () => create({ ...createPayload, title: many(49, (j) => Object.fromEntries(many(1_000, (i) => [`k${j}_${i}`, 'x']))) }) },
  // Past no size limit (1,000 members an object, 10,000 items an array, 50,000 values and 25,000 members in all): parsed, walked and validated.
  { name: 'within the limits: 24 objects of 1,000 distinct members', body: () => create({ ...createPayload, title: many(24, (j) => Object.fromEntries(many(1_000, (i) => [`k${j}_${i}`, 'x']))) }) },
  { name: 'within the limits: 5 arrays of 9,900 strings', body: () => create({ ...createPayload, bodyParts: many(9_900, (i) => `part-${i}`), title: many(4, () => many(9_900, (i) => `s${i}`)) }) },
  { name: 'nesting 100,000 deep', body: () => `{"moduleKey":"incident","payload":{"title":${'['.repeat(100_000)}${']'.repeat(100_000)}}}` },
  { name: 'PATCH, 60,000 invalid bodyParts', method: 'PATCH', path: `/api/v1/records/${recordId}`, body: () => json({ payload: { bodyParts: many(60_000, (i) => `part-${i}`) } }) },
  {
    name: 'export filters, unknown fields filling 1 MiB',
    path: '/api/v1/exports',
    body: () => fill((n) => json({ moduleKey: 'incident', format: 'csv', filters: { payload: Object.fromEntries(many(n, (i) => [`f${i}`, 'x'])) } }))
  },
  {
    name: 'bulk dry run, three rows of 60,000 invalid bodyParts',
    path: '/api/modules/incident/bulk?dryRun=true',
    contentType: 'application/x-ndjson',
    body: () => many(3, () => json({ payload: { ...createPayload, bodyParts: many(60_000, (i) => `part-${i}`) } })).join('\n') + '\n'
  }
]

const rows: string[][] = []
let baseline = NaN
for (const c of cases) {
  const body = c.body()
  const cpu: number[] = []
  const wall: number[] = []
  let status = 0
  let answer = 0
  for (let i = 0; i < runs; i++) {
    const before = await service.cpu()
    const started = performance.now()
    const res = await fetch(service.url + (c.path ?? '/api/v1/records'), {
      method: c.method ?? 'POST',
      headers: { authorization: `Bearer ${service.token}`, 'content-type': c.contentType ?? 'application/json' },
      body
    })
    answer = (await res.arrayBuffer()).byteLength
    wall.push(performance.now() - started)
    cpu.push(((await service.cpu()) - before) / 1000)
    status = res.status
  }
  const ms = median(cpu)
  if (Number.isNaN(baseline)) baseline = ms
  rows.push([c.name, fmt(body.length / 1024, 0), String(status), fmt(ms, 1), fmt(Math.max(...cpu), 1), fmt(median(wall), 1), fmt(ms / baseline, 1), fmt(answer / 1024, 1)])
}
await service.stop()
await db.close()

console.log(table([['body', 'KiB sent', 'status', 'service CPU ms (median)', 'CPU ms (max)', 'wall ms (median)', '× valid create', 'answer KiB'], ...rows]))
console.log(`${runs} requests per body, one at a time; service CPU read from the service process before and after each (includes its IPC answer, ~0.1 ms). Target: every body ≤ 100 ms of CPU. node ${process.version}`)
