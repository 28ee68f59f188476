/**
 * `npm run bench`: the records service against its physical floor, on loopback.
 *
 *  1. a fresh database (DATABASE_URL's server, or the embedded cluster in data/bench);
 *  2. the service in a child process (createPlatform + startServer: auth, tenancy, hooks on)
 *     with a real API key, and the baseline (bench/baseline-server.ts) in another;
 *  3. 100,000 incident records seeded for the bench tenant;
 *  4. per scenario (GET one, list 50, create), baseline and service measured alternately
 *     with autocannon in this process: a warm-up, then a measured run, each repeat;
 *  5. a table of medians, and every run as JSON in bench/results/.
 *
 * A ratio below its target is reported, never an error: exit 0 whenever the run completes.
 *
 * Options: --quick (1 s warm-up, 3 s runs, 1 repeat), --repeats N, --duration S, --warmup S,
 * --connections N, --records N, --only get,list,create, --cpu-prof (profiles both servers
 * into bench/results/profiles/), --service-root DIR (run DIR/bench/service-server.ts, e.g. a
 * patched scratch copy of the project, against the same baseline), --keep-db.
 * --tracing: the service traces every request to an in-memory exporter (bench/service-server.ts).
 * --compare tracing|DIR: a third server measured in the same rounds, alternating with the other two:
 * the service with tracing on, or DIR's service (e.g. a worktree of an earlier commit); the table
 * adds its throughput and its ratio to the service's.
 */
import { cpus, loadavg } from 'node:os'
import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import autocannon, { type Request, type Result } from 'autocannon'
import { projectRoot } from '../core/paths.ts'
import {
  benchDatabase,
  loadOptions,
  loadSettings,
  prepareRun,
  createPayload,
  defaultTenant,
  fmt,
  median,
  postgresVersion,
  startChild as forkServer,
  measureLoad,
  type LoadRun,
  table,
  type ChildServer
} from './common.ts'
import { randomRecordIds, seedIncidents } from './seed.ts'

const { values: opt } = parseArgs({
  options: { ...loadOptions, tracing: { type: 'boolean', default: false }, compare: { type: 'string' } }
})

const settings = {
  ...loadSettings(opt, { warmup: 3, duration: 10 }),
  idCount: 1000
}
const resultsDir = join(projectRoot, 'bench', 'results')
const log = (line: string) => process.stderr.write(line + '\n')
const profileStamp = new Date().toISOString().replace(/[:.]/g, '-')

// ---------------------------------------------------------------- child processes

type ServerProcess = ChildServer<'service' | 'baseline' | 'compare'>

function startChild(name: ServerProcess['name'], script: string, args: string[], cwd: string): Promise<ServerProcess> {
  // One folder per server: node writes a profile per thread (the main thread and tsx's loader thread).
  return forkServer(name, script, args, cwd, {
    cpuProfDir: opt['cpu-prof'] ? join(resultsDir, 'profiles', `${profileStamp}-${name}`) : undefined
  })
}

// ---------------------------------------------------------------- scenarios

interface Scenario {
  key: 'get' | 'list' | 'create'
  label: string
  target: number
  status: number
  requests: Request[]
}

function scenarios(ids: string[]): Scenario[] {
  let next = 0
  const body = JSON.stringify({ moduleKey: 'incident', payload: createPayload })
  return [
    {
      key: 'get',
      label: 'GET one record',
      // Issue 27 (0.6 before it, issue 14).
      target: 0.8,
      status: 200,
      requests: [
        { method: 'GET', setupRequest: (req) => ({ ...req, path: `/api/v1/records/${ids[next++ % ids.length]}` }) }
      ]
    },
    {
      key: 'list',
      label: 'list 50',
      // Issue 27 (0.8 before it).
      target: 0.9,
      status: 200,
      requests: [{ method: 'GET', path: '/api/v1/records?moduleKey=incident&limit=50' }]
    },
    {
      key: 'create',
      label: 'create',
      target: 0.4,
      status: 201,
      requests: [{ method: 'POST', path: '/api/v1/records', headers: { 'content-type': 'application/json' }, body }]
    }
  ]
}

type Run = LoadRun & { side: ServerProcess['name'] }

async function load(server: ServerProcess, s: Scenario, seconds: number): Promise<Result> {
  const headers: Record<string, string> = server.token
    ? { authorization: `Bearer ${server.token}` }
    : { authorization: 'Bearer none' }
  return autocannon({
    url: server.url,
    connections: settings.connections,
    duration: seconds,
    headers,
    requests: s.requests
  })
}

function measure(server: ServerProcess, s: Scenario, repeat: number, database: string): Promise<Run> {
  return measureLoad({
    key: s.key,
    side: server.name,
    repeat,
    database,
    warmup: settings.warmup,
    duration: settings.duration,
    load: (seconds) => load(server, s, seconds),
    cpu: () => server.cpu(),
    log
  })
}

/** One request per scenario to each server, so a broken setup shows before minutes of load. */
async function sanityCheck(servers: ServerProcess[], list: Scenario[], ids: string[]) {
  for (const s of list) {
    const shapes: string[] = []
    for (const server of servers) {
      const req = s.requests[0]
      const path = s.key === 'get' ? `/api/v1/records/${ids[0]}` : req.path!
      const res = await fetch(server.url + path, {
        method: req.method,
        headers: { ...(req.headers ?? {}), authorization: `Bearer ${server.token ?? 'none'}` },
        body: req.body as string | undefined
      })
      const text = await res.text()
      if (res.status !== s.status)
        throw new Error(
          `${server.name} answered ${s.key} with ${res.status} (expected ${s.status}): ${text.slice(0, 500)}`
        )
      const json = JSON.parse(text)
      const sample = s.key === 'list' ? json.items[0] : json
      shapes.push(
        `${server.name} ${text.length} B${s.key === 'list' ? ` (${json.items.length} items)` : ''} [${Object.keys(sample).join(',')}]`
      )
    }
    log(`  ${s.key}: ${shapes.join(' | ')}`)
  }
}

// ---------------------------------------------------------------- report

interface Spread {
  median: number
  min: number
  max: number
}

const spreadOf = (values: number[]): Spread => ({
  median: median(values),
  min: Math.min(...values),
  max: Math.max(...values)
})
const spread = (s: Spread) => `${fmt(s.median, 2)} (${fmt(s.min, 2)}–${fmt(s.max, 2)})`

/**
 * With --compare, the three servers of one round ran back to back under the same load from the
 * rest of the machine: each round's own ratios, then their median, move far less than the ratio
 * of the medians when other work comes and goes.
 */
function pairedRounds(runs: Run[]) {
  const rounds = [...new Set(runs.map((r) => r.repeat))].flatMap((repeat) => {
    const of = (side: Run['side']) => runs.find((r) => r.repeat === repeat && r.side === side)
    const svc = of('service')
    const base = of('baseline')
    const cmp = of('compare')
    return svc && base && cmp ? [{ svc, base, cmp }] : []
  })
  return {
    serviceToBaseline: spreadOf(rounds.map((r) => r.svc.reqPerSec / r.base.reqPerSec)),
    compareToBaseline: spreadOf(rounds.map((r) => r.cmp.reqPerSec / r.base.reqPerSec)),
    compareToService: spreadOf(rounds.map((r) => r.cmp.reqPerSec / r.svc.reqPerSec)),
    cpuCompareToService: spreadOf(rounds.map((r) => r.cmp.serverCpuUsPerReq / r.svc.serverCpuUsPerReq))
  }
}

// ---------------------------------------------------------------- main

async function main() {
  const { startedAt, loadBefore } = prepareRun(resultsDir, log)
  log(
    `benchmark: ${settings.connections} connections, ${settings.warmup} s warm-up + ${settings.duration} s per run, ` +
      `${settings.repeats} repeat(s), ${settings.records} records${opt.quick ? ' (quick)' : ''}`
  )

  const db = await benchDatabase()
  const database = db.name
  const servers: ServerProcess[] = []
  let pgVersion: string
  try {
    log(`database: ${database} on ${db.where === 'embedded' ? 'the embedded cluster (data/bench)' : 'DATABASE_URL'}`)
    const serviceRoot = resolve(opt['service-root'] ?? projectRoot)
    const serviceArgs = ['--database-url', db.url, '--tenant', defaultTenant]
    const service = await startChild(
      'service',
      join(serviceRoot, 'bench', 'service-server.ts'),
      [...serviceArgs, ...(opt.tracing ? ['--tracing'] : [])],
      serviceRoot
    )
    servers.push(service)
    log(
      `service: ${service.url}${opt['service-root'] ? ` (from ${serviceRoot})` : ''}${opt.tracing ? ' tracing to memory' : ''}`
    )
    let compare: ServerProcess | undefined
    if (opt.compare) {
      const root = opt.compare === 'tracing' ? serviceRoot : resolve(opt.compare)
      compare = await startChild(
        'compare',
        join(root, 'bench', 'service-server.ts'),
        [...serviceArgs, ...(opt.compare === 'tracing' ? ['--tracing'] : [])],
        root
      )
      servers.push(compare)
      log(`compare: ${compare.url} (${opt.compare === 'tracing' ? 'the service tracing to memory' : `from ${root}`})`)
    }

    const seeded = await seedIncidents(db.url, { tenantId: defaultTenant, count: settings.records })
    log(`seeded ${seeded.count} incident records in ${seeded.ms} ms (last number ${seeded.lastNumber})`)
    const ids = await randomRecordIds(db.url, settings.idCount)

    const baseline = await startChild(
      'baseline',
      join(projectRoot, 'bench', 'baseline-server.ts'),
      ['--database-url', db.url, '--tenant', defaultTenant],
      projectRoot
    )
    servers.push(baseline)
    log(`baseline: ${baseline.url}`)

    pgVersion = await postgresVersion(db.url)

    const only = opt.only ? opt.only.split(',').map((s) => s.trim()) : undefined
    const list = scenarios(ids).filter((s) => !only || only.includes(s.key))
    log('sanity check (one request each):')
    await sanityCheck([service, baseline, ...(compare ? [compare] : [])], list, ids)

    const results: Array<{ scenario: Scenario; runs: Run[] }> = []
    for (const s of list) {
      log(`${s.label}:`)
      const runs: Run[] = []
      for (let rep = 0; rep < settings.repeats; rep++) {
        // Alternate who goes first, so neither side always inherits the other's after-effects.
        const sides = compare ? [baseline, service, compare] : [baseline, service]
        const order = sides.map((_, i) => sides[(i + rep) % sides.length])
        for (const server of order) runs.push(await measure(server, s, rep, database))
      }
      results.push({ scenario: s, runs })
    }

    const summary = results.map(({ scenario, runs }) => {
      const side = (name: Run['side']) => {
        const r = runs.filter((x) => x.side === name)
        return {
          reqPerSec: median(r.map((x) => x.reqPerSec)),
          p99: median(r.map((x) => x.p99)),
          p50: median(r.map((x) => x.p50)),
          serverCpuUsPerReq: median(r.map((x) => x.serverCpuUsPerReq)),
          pgCpuUsPerReq: median(r.map((x) => x.pgCpuUsPerReq)),
          non2xx: r.reduce((a, x) => a + x.non2xx + x.errors, 0)
        }
      }
      const svc = side('service')
      const base = side('baseline')
      const other = compare ? side('compare') : undefined
      return {
        key: scenario.key,
        label: scenario.label,
        target: scenario.target,
        service: svc,
        baseline: base,
        ratio: svc.reqPerSec / base.reqPerSec,
        compare: other && { ...other, ratioToService: other.reqPerSec / svc.reqPerSec },
        paired: compare ? pairedRounds(runs) : undefined
      }
    })

    const rows = [
      [
        'scenario',
        'service req/s',
        'baseline req/s',
        'ratio',
        'target',
        'service p99',
        'baseline p99',
        'svc CPU/req',
        'base CPU/req',
        'svc pg/req',
        'base pg/req',
        ...(compare ? ['compare req/s', 'cmp/svc', 'cmp p99', 'cmp CPU/req'] : [])
      ]
    ]
    for (const s of summary) {
      const mark = s.ratio >= s.target ? 'ok' : 'below'
      const warn = s.service.non2xx || s.baseline.non2xx ? ' !' : ''
      rows.push([
        s.label + warn,
        fmt(s.service.reqPerSec),
        fmt(s.baseline.reqPerSec),
        fmt(s.ratio, 2),
        `>= ${s.target} ${mark}`,
        `${fmt(s.service.p99)} ms`,
        `${fmt(s.baseline.p99)} ms`,
        `${fmt(s.service.serverCpuUsPerReq)} µs`,
        `${fmt(s.baseline.serverCpuUsPerReq)} µs`,
        `${fmt(s.service.pgCpuUsPerReq)} µs`,
        `${fmt(s.baseline.pgCpuUsPerReq)} µs`,
        ...(s.compare
          ? [
              fmt(s.compare.reqPerSec),
              fmt(s.compare.ratioToService, 2),
              `${fmt(s.compare.p99)} ms`,
              `${fmt(s.compare.serverCpuUsPerReq)} µs`
            ]
          : [])
      ])
    }
    const paired = summary.filter((s) => s.paired)
    const pairedTable = paired.length
      ? "\n\npaired by round (median over the rounds of each round's own figure, range in brackets):\n\n" +
        table([
          ['scenario', 'svc/base req/s', 'cmp/base req/s', 'cmp/svc req/s', 'cmp/svc CPU/req'],
          ...paired.map((s) => [
            s.label,
            spread(s.paired!.serviceToBaseline),
            spread(s.paired!.compareToBaseline),
            spread(s.paired!.compareToService),
            spread(s.paired!.cpuCompareToService)
          ])
        ])
      : ''
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
    process.stdout.write(
      `\nmedian of ${settings.repeats} run(s) each; ${settings.duration} s, ${settings.connections} connections; ` +
        `${environment.cpus} CPU(s), node ${environment.node}, PostgreSQL ${pgVersion} (${environment.database})\n\n` +
        table(rows) +
        pairedTable +
        '\n\nCPU/req: CPU time of the server process per request; pg/req: CPU time of the PostgreSQL backends of the bench database per request.\n' +
        (summary.some((s) => s.service.non2xx || s.baseline.non2xx)
          ? '! some responses were not 2xx or failed: see the runs above and the JSON.\n'
          : '')
    )
    const file = join(
      resultsDir,
      `bench-${startedAt.toISOString().replace(/[:.]/g, '-')}${opt.quick ? '-quick' : ''}.json`
    )
    writeFileSync(
      file,
      JSON.stringify(
        {
          startedAt,
          finishedAt: new Date(),
          settings: {
            ...settings,
            quick: opt.quick,
            serviceRoot: opt['service-root'] ?? null,
            tracing: opt.tracing,
            compare: opt.compare ?? null
          },
          environment,
          summary,
          runs: results.map(({ scenario, runs }) => ({ key: scenario.key, runs }))
        },
        null,
        2
      ) + '\n'
    )
    process.stdout.write(`results: ${file}\n`)
  } finally {
    for (const s of servers.reverse()) await s.stop().catch(() => undefined)
    await db.close({ keep: opt['keep-db'], log })
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`benchmark failed: ${err?.stack ?? err}\n`)
    process.exit(1)
  }
)
