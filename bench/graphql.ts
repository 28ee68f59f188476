/**
 * `npm run bench:graphql`: GraphQL against REST on the same service, in one run (issue 15).
 *
 *  1. a fresh database (DATABASE_URL's server, or the embedded cluster in data/bench);
 *  2. the service in a child process: this file with `--serve`, which records the SQL
 *     statements the process sends when asked (every `pg` Client query: the pool,
 *     transactions and knex-built statements all pass there) and then is
 *     bench/service-server.ts (createPlatform + startServer, a real API key);
 *  3. incidents seeded (bench/seed.ts, 100,000), then 200 corrective actions, each
 *     referencing another incident, loaded through the bulk endpoint;
 *  4. the SQL statements one GraphQL request sends for a page of corrective actions with
 *     their incidents, at page sizes 20 and 200 (and REST's for comparison);
 *  5. per scenario (GET one, list 50), REST and GraphQL measured alternately with
 *     autocannon in this process, as `npm run bench` measures service and baseline;
 *  6. a table of medians and GraphQL ÷ REST ratios (target >= 0.6, issue 15), and every
 *     run as JSON in bench/results/. A figure off target is reported, never an error.
 *
 * Options: --quick (1 s warm-up, 3 s runs, 1 repeat), --repeats N, --duration S, --warmup S,
 * --connections N, --records N, --only get,list,sql, --cpu-prof (profiles the service into
 * bench/results/profiles/), --show-sql (prints each counted request's statements), --service-root DIR
 * (the service of DIR, e.g. a patched scratch copy of the project), --keep-db.
 */
import { writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import autocannon, { type Request, type Result } from 'autocannon'
import pg from 'pg'
import { projectRoot } from '../core/paths.ts'
import {
  benchDatabase,
  defaultTenant,
  loadOptions,
  loadSettings,
  fmt,
  median,
  measureLoad,
  postgresVersion,
  prepareRun,
  startChild,
  table,
  type ChildServer,
  type LoadRun
} from './common.ts'
import { randomRecordIds, seedIncidents } from './seed.ts'

// ---------------------------------------------------------------- child: the service, counting statements

/** This file run with `--serve --database-url URL [--tenant ID]`: statement recording, then bench/service-server.ts. */
async function serve() {
  const { values } = parseArgs({
    args: process.argv.slice(3),
    options: { 'database-url': { type: 'string' }, tenant: { type: 'string' } }
  })
  // service-server.ts parses argv strictly: its settings go through the environment it also reads.
  process.env.BENCH_DATABASE_URL = values['database-url']
  if (values.tenant) process.env.BENCH_TENANT = values.tenant
  process.argv.length = 2
  let recording: string[] | null = null
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown
  ;(pg.Client.prototype as { query: unknown }).query = function (this: pg.Client, ...args: unknown[]) {
    if (recording) {
      const q = args[0] as string | { text?: string; name?: string }
      recording.push(typeof q === 'string' ? q : (q?.text ?? q?.name ?? '?'))
    }
    return query.apply(this, args)
  }
  process.on('message', (msg: { type?: string }) => {
    if (msg?.type === 'sql-start') {
      recording = []
      process.send!({ type: 'sql-started' })
    } else if (msg?.type === 'sql-stop') {
      process.send!({ type: 'sql', statements: recording ?? [] })
      recording = null
    }
  })
  await import('./service-server.ts')
}

// ---------------------------------------------------------------- parent

const { values: opt } = parseArgs({
  args: process.argv[2] === '--serve' ? [] : process.argv.slice(2),
  options: { ...loadOptions, 'show-sql': { type: 'boolean', default: false } }
})

const settings = {
  ...loadSettings(opt, { warmup: 2, duration: 8 }),
  idCount: 1000,
  correctiveActions: 200,
  pageSizes: [20, 200]
}
const target = 0.6
const resultsDir = join(projectRoot, 'bench', 'results')
const log = (line: string) => process.stderr.write(line + '\n')

type Service = ChildServer<'service'>

/** The statements the service sent to PostgreSQL while `work` ran (nothing else may be talking to it meanwhile). */
async function statementsDuring(service: Service, work: () => Promise<unknown>): Promise<string[]> {
  const reply = (type: string) =>
    new Promise<any>((resolve) => {
      const on = (msg: any) => {
        if (msg?.type !== type) return
        service.child.off('message', on)
        resolve(msg)
      }
      service.child.on('message', on)
    })
  const started = reply('sql-started')
  service.child.send({ type: 'sql-start' })
  await started
  await work()
  const done = reply('sql')
  service.child.send({ type: 'sql-stop' })
  return (await done).statements
}

// The fields REST's record carries, as GraphQL selects them: the envelope and every payload field of an incident.
const actor = '{ type id name }'
const incidentPayload =
  'payload { title description occurredAt site location { latitude longitude label accuracyMeters } category severity injuredPeople bodyParts lostTimeDays ' +
  'medicalDetails immediateActions investigationLead { id } rootCause regulatorNotified regulatorNotifiedOn closureNote }'
const envelope = `id moduleKey moduleVersion number state version externalRef createdAt updatedAt createdBy ${actor} updatedBy ${actor}`
const getQuery =
  `query Record($id: ID!) { record(id: $id) { ${envelope} ... on Incident { ${incidentPayload} } ` +
  `activity { id at actor ${actor} action changes { field from to } transition { key from to } comment } ` +
  'attachments { id fileName contentType size sha256 uploadedBy { type id name } uploadedAt } availableTransitions { key label to missingFields } } }'
const listQuery = `{ incidents(first: 50) { edges { node { ${envelope} ${incidentPayload} } } pageInfo { hasNextPage endCursor } } }`
const actionsQuery = (first: number) =>
  `{ correctiveActions(first: ${first}) { nodes { number payload { incident { number payload { title } } } } } }`

interface Side {
  name: 'REST' | 'GraphQL'
  requests: Request[]
}
interface Scenario {
  key: 'get' | 'list'
  label: string
  rest: Side
  graphql: Side
}

function scenarios(ids: string[]): Scenario[] {
  const gql = (body: string): Request => ({
    method: 'POST',
    path: '/api/graphql',
    headers: { 'content-type': 'application/json' },
    body
  })
  const getBodies = ids.map((id) => JSON.stringify({ query: getQuery, variables: { id } }))
  let nextRest = 0
  let nextGql = 0
  return [
    {
      key: 'get',
      label: 'GET one record',
      rest: {
        name: 'REST',
        requests: [
          {
            method: 'GET',
            setupRequest: (req) => ({ ...req, path: `/api/v1/records/${ids[nextRest++ % ids.length]}` })
          }
        ]
      },
      graphql: {
        name: 'GraphQL',
        requests: [
          { ...gql(getBodies[0]), setupRequest: (req) => ({ ...req, body: getBodies[nextGql++ % getBodies.length] }) }
        ]
      }
    },
    {
      key: 'list',
      label: 'list 50',
      rest: { name: 'REST', requests: [{ method: 'GET', path: '/api/v1/records?moduleKey=incident&limit=50' }] },
      graphql: { name: 'GraphQL', requests: [gql(JSON.stringify({ query: listQuery }))] }
    }
  ]
}

type Run = LoadRun & { side: Side['name'] }

function measure(service: Service, scenario: Scenario, side: Side, repeat: number, database: string): Promise<Run> {
  const load = async (seconds: number): Promise<Result> =>
    autocannon({
      url: service.url,
      connections: settings.connections,
      duration: seconds,
      headers: { authorization: `Bearer ${service.token}` },
      requests: side.requests
    })
  return measureLoad({
    key: scenario.key,
    side: side.name,
    repeat,
    database,
    warmup: settings.warmup,
    duration: settings.duration,
    load,
    cpu: () => service.cpu(),
    log,
    pad: 7
  })
}

/** One HTTP call to the service; GraphQL answers must carry data and no errors. */
async function call(
  service: Service,
  path: string,
  init: { method?: string; body?: string; type?: string } = {}
): Promise<{ status: number; text: string; json: any }> {
  const res = await fetch(service.url + path, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${service.token}`, ...(init.type ? { 'content-type': init.type } : {}) },
    body: init.body
  })
  const text = await res.text()
  const json =
    text && /^application\/(json|problem\+json|graphql-response\+json)/.test(res.headers.get('content-type') ?? '')
      ? JSON.parse(text)
      : undefined
  if (res.status >= 300)
    throw new Error(`${init.method ?? 'GET'} ${path} answered ${res.status}: ${text.slice(0, 500)}`)
  return { status: res.status, text, json }
}

async function graphql(service: Service, query: string, variables?: Record<string, unknown>) {
  const r = await call(service, '/api/graphql', {
    method: 'POST',
    type: 'application/json',
    body: JSON.stringify({ query, variables })
  })
  if (r.json?.errors?.length || !r.json?.data) throw new Error(`GraphQL answered errors: ${r.text.slice(0, 800)}`)
  return r
}

/** 200 corrective actions, each referencing another of the seeded incidents, in one bulk call (its outcomes must all be `created`). */
async function seedActions(service: Service, incidentIds: string[], count: number) {
  const rows = incidentIds
    .slice(0, count)
    .map((incident, i) =>
      JSON.stringify({ payload: { title: `Bench action ${i + 1}`, incident, kind: 'corrective', priority: 'medium' } })
    )
  const { text } = await call(service, '/api/modules/corrective-action/bulk', {
    method: 'POST',
    type: 'application/x-ndjson',
    body: rows.join('\n') + '\n'
  })
  const summary = JSON.parse(text.trim().split('\n').at(-1) ?? '{}').summary
  if (summary?.created !== count || !summary.complete)
    throw new Error(`bulk load of corrective actions: ${text.slice(0, 800)}`)
}

function sanityLine(label: string, r: { text: string }, keys: string[]) {
  log(`  ${label}: ${r.text.length} B [${keys.join(',')}]`)
}

async function main() {
  const { startedAt, loadBefore } = prepareRun(resultsDir, log)
  const only = opt.only ? opt.only.split(',').map((s) => s.trim()) : ['get', 'list', 'sql']
  log(
    `benchmark graphql: ${settings.connections} connections, ${settings.warmup} s warm-up + ${settings.duration} s per run, ` +
      `${settings.repeats} repeat(s), ${settings.records} records${opt.quick ? ' (quick)' : ''}`
  )
  const db = await benchDatabase()
  let service: Service | undefined
  try {
    log(`database: ${db.name} on ${db.where === 'embedded' ? 'the embedded cluster (data/bench)' : 'DATABASE_URL'}`)
    const profileDir = opt['cpu-prof']
      ? join(resultsDir, 'profiles', `${startedAt.toISOString().replace(/[:.]/g, '-')}-graphql-service`)
      : undefined
    // --service-root: DIR/bench/graphql.ts --serve, i.e. the service of a patched copy of the project, to measure a change before making it.
    const serviceRoot = resolve(opt['service-root'] ?? projectRoot)
    service = await startChild(
      'service',
      join(serviceRoot, 'bench', 'graphql.ts'),
      ['--serve', '--database-url', db.url, '--tenant', defaultTenant],
      serviceRoot,
      { cpuProfDir: profileDir }
    )
    log(
      `service: ${service.url}${opt['service-root'] ? ` (from ${serviceRoot})` : ''}${profileDir ? ` (profiling into ${profileDir})` : ''}`
    )
    const seeded = await seedIncidents(db.url, { tenantId: defaultTenant, count: settings.records })
    log(`seeded ${seeded.count} incident records in ${seeded.ms} ms (last number ${seeded.lastNumber})`)
    const ids = await randomRecordIds(db.url, settings.idCount)
    await seedActions(service, ids, settings.correctiveActions)
    log(
      `loaded ${settings.correctiveActions} corrective actions through the bulk endpoint, each referencing another incident`
    )
    const pgVersion = await postgresVersion(db.url)

    log('sanity check (one request each):')
    const restGet = await call(service, `/api/v1/records/${ids[0]}`)
    const gqlGet = await graphql(service, getQuery, { id: ids[0] })
    if (gqlGet.json.data.record?.id !== ids[0])
      throw new Error(`GraphQL record(id:) answered another record: ${gqlGet.text.slice(0, 300)}`)
    sanityLine('get REST   ', restGet, Object.keys(restGet.json))
    sanityLine('get GraphQL', gqlGet, Object.keys(gqlGet.json.data.record))
    const restList = await call(service, '/api/v1/records?moduleKey=incident&limit=50')
    const gqlList = await graphql(service, listQuery)
    if (gqlList.json.data.incidents.edges.length !== 50 || restList.json.items.length !== 50)
      throw new Error('list: expected 50 items on both sides')
    sanityLine('list REST   ', restList, Object.keys(restList.json.items[0]))
    sanityLine('list GraphQL', gqlList, Object.keys(gqlList.json.data.incidents.edges[0].node))

    // ------------------------------------------------ statements per request
    const statements: Array<{ request: string; records: number; statements: number; list: string[] }> = []
    if (only.includes('sql')) {
      const count = async (request: string, records: number, send: () => Promise<unknown>) => {
        await send() // warm: token cache, schema, prepared statements
        const list = await statementsDuring(service!, send)
        statements.push({ request, records, statements: list.length, list })
      }
      for (const first of settings.pageSizes) {
        await count(`GraphQL correctiveActions(first: ${first}) with incidents`, first, async () => {
          const r = await graphql(service!, actionsQuery(first))
          const nodes = r.json.data.correctiveActions.nodes as Array<{
            payload: { incident: { number: string } | null }
          }>
          if (nodes.length !== first || nodes.some((n) => !n.payload.incident?.number))
            throw new Error(`correctiveActions(first: ${first}): ${r.text.slice(0, 300)}`)
        })
      }
      await count('GraphQL record(id:) as above', 1, () => graphql(service!, getQuery, { id: ids[0] }))
      await count('GraphQL incidents(first: 50) as above', 50, () => graphql(service!, listQuery))
      await count('REST GET /api/v1/records/{id}', 1, () => call(service!, `/api/v1/records/${ids[0]}`))
      await count('REST list 200 corrective actions', 200, () =>
        call(service!, '/api/v1/records?moduleKey=corrective-action&limit=200')
      )
      if (opt['show-sql']) {
        // The column lists are long and alike: what tells the statements apart is from FROM on.
        const brief = (t: string) =>
          t
            .replace(/\s+/g, ' ')
            .replace(/^(select) .*? (from ")/i, '$1 … $2')
            .slice(0, 220)
        for (const s of statements)
          log(`  ${s.request}: ${s.statements}\n${s.list.map((t) => `    ${brief(t)}`).join('\n')}`)
      }
    }

    // ------------------------------------------------ throughput
    const results: Array<{ scenario: Scenario; runs: Run[] }> = []
    for (const s of scenarios(ids).filter((x) => only.includes(x.key))) {
      log(`${s.label}:`)
      const runs: Run[] = []
      for (let rep = 0; rep < settings.repeats; rep++) {
        // Alternate who goes first, so neither side always inherits the other's after-effects.
        for (const side of rep % 2 === 0 ? [s.rest, s.graphql] : [s.graphql, s.rest])
          runs.push(await measure(service, s, side, rep, db.name))
      }
      results.push({ scenario: s, runs })
    }

    const summary = results.map(({ scenario, runs }) => {
      const side = (name: Side['name']) => {
        const r = runs.filter((x) => x.side === name)
        return {
          reqPerSec: median(r.map((x) => x.reqPerSec)),
          p50: median(r.map((x) => x.p50)),
          p99: median(r.map((x) => x.p99)),
          serverCpuUsPerReq: median(r.map((x) => x.serverCpuUsPerReq)),
          pgCpuUsPerReq: median(r.map((x) => x.pgCpuUsPerReq)),
          non2xx: r.reduce((a, x) => a + x.non2xx + x.errors, 0)
        }
      }
      const rest = side('REST')
      const gql = side('GraphQL')
      return { key: scenario.key, label: scenario.label, rest, graphql: gql, ratio: gql.reqPerSec / rest.reqPerSec }
    })

    const environment = {
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      postgres: pgVersion,
      database: db.where,
      records: seeded.count,
      loadAverageBefore: loadBefore,
      loadAverageAfter: loadavg()[0]
    }
    let report = ''
    if (summary.length) {
      const rows = [
        [
          'scenario',
          'REST req/s',
          'GraphQL req/s',
          'ratio',
          'target',
          'REST p99',
          'GraphQL p99',
          'REST CPU/req',
          'GraphQL CPU/req',
          'REST pg/req',
          'GraphQL pg/req'
        ]
      ]
      for (const s of summary) {
        const warn = s.rest.non2xx || s.graphql.non2xx ? ' !' : ''
        rows.push([
          s.label + warn,
          fmt(s.rest.reqPerSec),
          fmt(s.graphql.reqPerSec),
          fmt(s.ratio, 2),
          `>= ${target} ${s.ratio >= target ? 'ok' : 'below'}`,
          `${fmt(s.rest.p99)} ms`,
          `${fmt(s.graphql.p99)} ms`,
          `${fmt(s.rest.serverCpuUsPerReq)} µs`,
          `${fmt(s.graphql.serverCpuUsPerReq)} µs`,
          `${fmt(s.rest.pgCpuUsPerReq)} µs`,
          `${fmt(s.graphql.pgCpuUsPerReq)} µs`
        ])
      }
      report +=
        `\nmedian of ${settings.repeats} run(s) each; ${settings.duration} s, ${settings.connections} connections; ` +
        `${environment.cpus} CPU(s), node ${environment.node}, PostgreSQL ${pgVersion} (${environment.database})\n\n` +
        table(rows) +
        '\n\nratio: GraphQL req/s ÷ REST req/s, same service, same run. CPU/req: CPU time of the service process per request; ' +
        'pg/req: CPU time of the PostgreSQL backends of the bench database per request.\n' +
        (summary.some((s) => s.rest.non2xx || s.graphql.non2xx)
          ? '! some responses were not 2xx or failed: see the runs above and the JSON.\n'
          : '')
    }
    if (statements.length) {
      report +=
        '\nSQL statements the service sent for one request (warm; counted on its pg clients):\n\n' +
        table([
          ['request', 'records', 'statements'],
          ...statements.map((s) => [s.request, String(s.records), String(s.statements)])
        ]) +
        '\n'
      const pages = statements.filter((s) => s.request.includes('correctiveActions'))
      if (pages.length > 1) {
        const constant = pages.every((p) => p.statements === pages[0].statements)
        report += `correctiveActions with incidents: ${constant ? `${pages[0].statements} statements at every page size (constant)` : `${pages.map((p) => p.statements).join(' / ')} statements: grows with the page`}; one per record would be ${pages.at(-1)!.records + 1}.\n`
      }
    }
    process.stdout.write(report)
    const file = join(
      resultsDir,
      `graphql-${startedAt.toISOString().replace(/[:.]/g, '-')}${opt.quick ? '-quick' : ''}.json`
    )
    writeFileSync(
      file,
      JSON.stringify(
        {
          startedAt,
          finishedAt: new Date(),
          settings: { ...settings, quick: opt.quick, only, serviceRoot: opt['service-root'] ?? null },
          environment,
          queries: { get: getQuery, list: listQuery, correctiveActions: actionsQuery(settings.pageSizes.at(-1)!) },
          summary,
          statements,
          runs: results.map(({ scenario, runs }) => ({ key: scenario.key, runs }))
        },
        null,
        2
      ) + '\n'
    )
    process.stdout.write(`results: ${file}\n`)
  } finally {
    await service?.stop().catch(() => undefined)
    await db.close({ keep: opt['keep-db'], log })
  }
}

if (process.argv[2] === '--serve') await serve()
else
  await main().then(
    () => process.exit(0),
    (err) => {
      process.stderr.write(`benchmark failed: ${err?.stack ?? err}\n`)
      process.exit(1)
    }
  )
