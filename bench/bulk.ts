/**
 * `npm run bench:bulk`: NDJSON bulk loading through the service against raw COPY, on one
 * fresh database (DATABASE_URL's server, or the embedded cluster in data/bench).
 *
 *  1. service: the real service in a child process (bench/service-server.ts); `--rows`
 *     incident rows per repeat over `POST /api/modules/incident/bulk`, in calls of
 *     `--per-call` rows made one after another, every outcome checked;
 *  2. floor: the same number of equivalent rows by COPY into `records` from this process
 *     (bench/bulk-copy.ts), in statements of the same size; service and COPY alternate
 *     which goes first per repeat; medians of rows/s and their ratio (target >= 0.8, issue 27);
 *  3. first-outcome latency of a slow writer (one row, 1 s pause, the rest);
 *  4. peak RSS of a fresh service child loading in calls of 1,000 and of 10,000 rows.
 *
 * A figure off its target is reported, never an error: exit 0 whenever the run completes.
 *
 * Options: --quick (20,000 rows, 1 repeat, 3 latency tries, 20,000 rows per RSS setting),
 * --rows N, --per-call N, --repeats N, --latency-tries N, --rss-rows N, --cpu-prof
 * (profiles the measured service into bench/results/profiles/), --keep-db,
 * --compare DIR (the service of another checkout, e.g. the tree before a change, loaded in
 * the same repeats on the same database, taking turns with the service and COPY).
 * --skip-extras leaves out the latency and RSS phases (for --compare runs).
 */
import { cpus, loadavg } from 'node:os'
import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { loadConfig } from '../core/config.ts'
import { loadModules } from '../core/modules/registry.ts'
import { projectRoot } from '../core/paths.ts'
import { copyLoad, type CopyRows } from './bulk-copy.ts'
import { bulkLoad, firstOutcomeMs, type Target } from './bulk-load.ts'
import {
  benchDatabase,
  cpuDelta,
  prepareRun,
  defaultTenant,
  fmt,
  median,
  pgBackendCpu,
  postgresVersion,
  startChild,
  table,
  type ChildServer
} from './common.ts'

const { values: opt } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rows: { type: 'string' },
    'per-call': { type: 'string' },
    repeats: { type: 'string' },
    'latency-tries': { type: 'string' },
    'rss-rows': { type: 'string' },
    'cpu-prof': { type: 'boolean', default: false },
    'keep-db': { type: 'boolean', default: false },
    compare: { type: 'string' },
    'skip-extras': { type: 'boolean', default: false }
  }
})

const settings = {
  rows: Number(opt.rows ?? (opt.quick ? 20_000 : 100_000)),
  perCall: Number(opt['per-call'] ?? 10_000),
  repeats: Number(opt.repeats ?? (opt.quick ? 1 : 3)),
  latencyTries: Number(opt['latency-tries'] ?? (opt.quick ? 3 : 5)),
  // V8 grows the heap lazily: the service's peak RSS settles only after ~100,000 rows.
  rssRows: Number(opt['rss-rows'] ?? (opt.quick ? 20_000 : 100_000)),
  rssPerCall: [1_000, 10_000],
  warmupRows: 1_000,
  ratioTarget: 0.8,
  latencyTargetMs: 200
}
const moduleKey = 'incident'
const resultsDir = join(projectRoot, 'bench', 'results')
const log = (line: string) => process.stderr.write(line + '\n')
const stamp = new Date().toISOString().replace(/[:.]/g, '-')
const mib = (kib: number) => `${fmt(kib / 1024)} MiB`

function startService(url: string, profile = false, root = projectRoot, name = 'service'): Promise<ChildServer> {
  const cpuProfDir = profile ? join(resultsDir, 'profiles', `${stamp}-bulk-${name}`) : undefined
  return startChild(
    name,
    join(root, 'bench', 'service-server.ts'),
    ['--database-url', url, '--tenant', defaultTenant],
    root,
    { cpuProfDir }
  )
}

interface Run {
  side: 'service' | 'copy' | 'compare'
  repeat: number
  rows: number
  ms: number
  rowsPerSec: number
  /** CPU of the service process per row (service side only). */
  serverCpuUsPerRow: number
  /** CPU of the PostgreSQL backends of the bench database per row. */
  pgCpuUsPerRow: number
  /** CPU of this process (generating the rows, reading outcomes) per row. */
  clientCpuUsPerRow: number
}

async function measured(
  side: Run['side'],
  repeat: number,
  database: string,
  service: ChildServer | undefined,
  work: () => Promise<{ rows: number; ms: number }>
): Promise<Run> {
  const svc0 = service ? await service.cpu() : NaN
  const pg0 = pgBackendCpu(database)
  const me0 = process.cpuUsage()
  const r = await work()
  const me = process.cpuUsage(me0)
  const pg1 = pgBackendCpu(database)
  const svc1 = service ? await service.cpu() : NaN
  const run: Run = {
    side,
    repeat,
    rows: r.rows,
    ms: r.ms,
    rowsPerSec: (r.rows * 1000) / r.ms,
    serverCpuUsPerRow: (svc1 - svc0) / r.rows,
    pgCpuUsPerRow: pg1.size ? cpuDelta(pg0, pg1) / r.rows : NaN,
    clientCpuUsPerRow: (me.user + me.system) / r.rows
  }
  log(
    `  #${repeat + 1} ${side.padEnd(7)} ${fmt(run.rowsPerSec).padStart(7)} rows/s  (${r.rows} rows in ${fmt(r.ms)} ms)  ` +
      `server CPU ${fmt(run.serverCpuUsPerRow)} µs/row  pg CPU ${fmt(run.pgCpuUsPerRow)} µs/row  client CPU ${fmt(run.clientCpuUsPerRow)} µs/row`
  )
  return run
}

/** A fresh service child: RSS once started, then after loading `rows` rows in calls of `perCall`. */
async function rssAt(url: string, perCall: number, rows: number) {
  const service = await startService(url)
  try {
    const start = await service.mem()
    const load = await bulkLoad({ url: service.url, token: service.token!, moduleKey }, `rss${perCall}`, rows, perCall)
    const end = await service.mem()
    const r = {
      perCall,
      rows,
      startRssKiB: start.rss,
      startMaxRssKiB: start.maxRSS,
      peakRssKiB: end.maxRSS,
      endRssKiB: end.rss,
      rowsPerSec: (rows * 1000) / load.ms
    }
    log(
      `  ${perCall} rows/call: RSS ${mib(r.startRssKiB)} at start (peak so far ${mib(r.startMaxRssKiB)}), peak ${mib(r.peakRssKiB)} (now ${mib(r.endRssKiB)}) after ${rows} rows (${fmt(r.rowsPerSec)} rows/s)`
    )
    return r
  } finally {
    await service.stop()
  }
}

async function main() {
  const { startedAt, loadBefore } = prepareRun(resultsDir, log)
  log(
    `bulk benchmark: ${settings.rows} rows per repeat in calls of ${settings.perCall}, ${settings.repeats} repeat(s)${opt.quick ? ' (quick)' : ''}`
  )

  const db = await benchDatabase()
  let service: ChildServer | undefined
  let compare: ChildServer | undefined
  let copyClient: pg.Client | undefined
  try {
    log(`database: ${db.name} on ${db.where === 'embedded' ? 'the embedded cluster (data/bench)' : 'DATABASE_URL'}`)
    const pgVersion = await postgresVersion(db.url)
    service = await startService(db.url, opt['cpu-prof'])
    const memAtStart = await service.mem()
    log(`service: ${service.url} (RSS ${mib(memAtStart.rss)})`)
    const target: Target = { url: service.url, token: service.token!, moduleKey }
    if (opt.compare) {
      compare = await startService(db.url, false, resolve(opt.compare), 'compare')
      log(`compare: ${compare.url} (the service of ${resolve(opt.compare)})`)
    }
    const compareTarget: Target | undefined = compare && { url: compare.url, token: compare.token!, moduleKey }

    // Warm-up of both sides (JIT, connections, plans); its first record tells COPY the actor the service writes.
    const warm = await bulkLoad(target, 'warm', settings.warmupRows, settings.perCall)
    copyClient = new pg.Client({ connectionString: db.url })
    await copyClient.connect()
    const { rows: actorRows } = await copyClient.query(
      'SELECT created_by::text AS actor FROM records WHERE tenant_id = $1 AND number = $2',
      [defaultTenant, warm.firstNumber]
    )
    const module = (await loadModules(loadConfig({ database: { url: db.url } }).modules)).get(moduleKey)
    if (!module || !actorRows[0]) throw new Error('bulk bench: no incident module or no warm-up record')
    const copyRows: CopyRows = {
      tenantId: defaultTenant,
      moduleKey,
      moduleVersion: module.definition.version,
      state: module.definition.workflow.initial,
      actor: actorRows[0].actor
    }
    await copyLoad(copyClient, copyRows, 'warm', settings.warmupRows, settings.perCall)
    if (compareTarget) await bulkLoad(compareTarget, 'cwarm', settings.warmupRows, settings.perCall)
    log(
      `warm-up: ${settings.warmupRows} rows each (service ${fmt((warm.rows * 1000) / warm.ms)} rows/s); COPY as ${copyRows.actor}`
    )

    const runs: Run[] = []
    for (let rep = 0; rep < settings.repeats; rep++) {
      // Alternate who goes first: the table and its indexes grow with every load.
      const order: Run['side'][] = compare ? ['copy', 'service', 'compare'] : ['copy', 'service']
      const sides = compare
        ? order.map((_, i) => order[(i + rep) % order.length])
        : rep % 2 === 0
          ? order
          : [...order].reverse()
      for (const side of sides) {
        if (side === 'service')
          runs.push(
            await measured('service', rep, db.name, service, () =>
              bulkLoad(target, `r${rep}`, settings.rows, settings.perCall)
            )
          )
        else if (side === 'compare')
          runs.push(
            await measured('compare', rep, db.name, compare, () =>
              bulkLoad(compareTarget!, `c${rep}`, settings.rows, settings.perCall)
            )
          )
        else
          runs.push(
            await measured('copy', rep, db.name, undefined, () =>
              copyLoad(copyClient!, copyRows, `${rep}`, settings.rows, settings.perCall)
            )
          )
      }
    }
    const memAfterLoad = await service.mem()

    if (!opt['skip-extras']) log(`first-outcome latency (1 row, 1 s pause, 99 rows), ${settings.latencyTries} tries:`)
    const latencies: number[] = []
    for (let i = 0; i < (opt['skip-extras'] ? 0 : settings.latencyTries); i++) {
      latencies.push(await firstOutcomeMs(target, `lat${i}`))
      log(`  #${i + 1} ${fmt(latencies[i], 1)} ms`)
    }
    await service.stop()
    service = undefined
    await compare?.stop()
    compare = undefined

    if (!opt['skip-extras']) log(`peak RSS of a fresh service per call size, ${settings.rssRows} rows each:`)
    const rss = []
    if (!opt['skip-extras'])
      for (const perCall of settings.rssPerCall) rss.push(await rssAt(db.url, perCall, settings.rssRows))

    const { rows: counts } = await copyClient.query(
      `SELECT (SELECT count(*) FROM records WHERE tenant_id = $1 AND number LIKE 'CPY-%')::int AS copied,
              (SELECT count(*) FROM records WHERE tenant_id = $1 AND number NOT LIKE 'CPY-%')::int AS service,
              (SELECT count(*) FROM record_activity WHERE tenant_id = $1)::int AS activity`,
      [defaultTenant]
    )
    log(
      `table: ${counts[0].service} records by the service (${counts[0].activity} activity rows), ${counts[0].copied} by COPY`
    )

    const side = (name: Run['side']) => {
      const r = runs.filter((x) => x.side === name)
      return {
        rowsPerSec: median(r.map((x) => x.rowsPerSec)),
        serverCpuUsPerRow: median(r.map((x) => x.serverCpuUsPerRow)),
        pgCpuUsPerRow: median(r.map((x) => x.pgCpuUsPerRow)),
        clientCpuUsPerRow: median(r.map((x) => x.clientCpuUsPerRow))
      }
    }
    const svc = side('service')
    const copy = side('copy')
    const ratio = svc.rowsPerSec / copy.rowsPerSec
    // Each repeat's own ratio to that repeat's COPY: the load other work puts on the machine moves both alike.
    const paired = (name: Run['side']) =>
      median(
        runs
          .filter((x) => x.side === name)
          .map((x) => x.rowsPerSec / runs.find((c) => c.side === 'copy' && c.repeat === x.repeat)!.rowsPerSec)
      )
    const cmp = compare || opt.compare ? { ...side('compare'), pairedRatio: paired('compare') } : undefined
    const latency = {
      medianMs: median(latencies),
      minMs: Math.min(...latencies),
      maxMs: Math.max(...latencies),
      tries: latencies,
      target: settings.latencyTargetMs
    }
    const summary = {
      service: svc,
      copy,
      ratio,
      pairedRatio: paired('service'),
      ...(cmp ? { compare: { ...cmp, ratio: cmp.rowsPerSec / copy.rowsPerSec, root: resolve(opt.compare!) } } : {}),
      ratioTarget: settings.ratioTarget,
      latency,
      rss,
      memory: { atStartKiB: memAtStart, afterLoadKiB: memAfterLoad }
    }

    const rows = [
      [
        'scenario',
        'service rows/s',
        'COPY rows/s',
        'ratio',
        'target',
        'svc CPU/row',
        'svc pg/row',
        'COPY pg/row',
        'client CPU/row svc | COPY'
      ],
      [
        `bulk create, ${settings.rows} rows in calls of ${settings.perCall}`,
        fmt(svc.rowsPerSec),
        fmt(copy.rowsPerSec),
        fmt(ratio, 2),
        `>= ${settings.ratioTarget} ${ratio >= settings.ratioTarget ? 'ok' : 'below'}`,
        `${fmt(svc.serverCpuUsPerRow)} µs`,
        `${fmt(svc.pgCpuUsPerRow)} µs`,
        `${fmt(copy.pgCpuUsPerRow)} µs`,
        `${fmt(svc.clientCpuUsPerRow)} | ${fmt(copy.clientCpuUsPerRow)} µs`
      ],
      ...(cmp
        ? [
            [
              `compare (${opt.compare}), same runs`,
              fmt(cmp.rowsPerSec),
              fmt(copy.rowsPerSec),
              fmt(cmp.rowsPerSec / copy.rowsPerSec, 2),
              '',
              `${fmt(cmp.serverCpuUsPerRow)} µs`,
              `${fmt(cmp.pgCpuUsPerRow)} µs`,
              `${fmt(copy.pgCpuUsPerRow)} µs`,
              `${fmt(cmp.clientCpuUsPerRow)} | ${fmt(copy.clientCpuUsPerRow)} µs`
            ]
          ]
        : [])
    ]
    const environment = {
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      postgres: pgVersion,
      database: db.where,
      loadAverageBefore: loadBefore,
      loadAverageAfter: loadavg()[0]
    }
    process.stdout.write(
      `\nmedian of ${settings.repeats} run(s) each; ${environment.cpus} CPU(s), node ${environment.node}, PostgreSQL ${pgVersion} (${environment.database})\n\n` +
        table(rows) +
        `\n\npaired ratio to COPY (median of each repeat's service rows/s over that repeat's COPY rows/s): service ${fmt(paired('service'), 2)}` +
        (cmp ? `, compare ${fmt(cmp.pairedRatio, 2)}` : '') +
        (latencies.length
          ? `\nfirst outcome (1 row written, 1 s before the rest): median ${fmt(latency.medianMs, 1)} ms of ${latencies.length} (min ${fmt(latency.minMs, 1)}, max ${fmt(latency.maxMs, 1)})  ` +
            `target <= ${settings.latencyTargetMs} ms ${latency.medianMs <= settings.latencyTargetMs ? 'ok' : 'above'}\n`
          : '\n') +
        rss
          .map(
            (r) =>
              `service RSS, ${r.perCall} rows/call: ${mib(r.startRssKiB)} at start (peak so far ${mib(r.startMaxRssKiB)}), peak ${mib(r.peakRssKiB)} after ${r.rows} rows\n`
          )
          .join('') +
        `measured service: RSS ${mib(memAtStart.rss)} at start, peak ${mib(memAfterLoad.maxRSS)} after warm-up + ${settings.repeats} x ${settings.rows} rows\n` +
        '\nCOPY writes the records table only: no validation, numbering counter, activity rows or outcomes.\n' +
        'CPU/row: CPU time of the service process per row; pg/row: CPU time of the PostgreSQL backends of the bench database per row; client: this process (rows out, outcomes in).\n'
    )
    const file = join(
      resultsDir,
      `bulk-${startedAt.toISOString().replace(/[:.]/g, '-')}${opt.quick ? '-quick' : ''}.json`
    )
    writeFileSync(
      file,
      JSON.stringify(
        {
          startedAt,
          finishedAt: new Date(),
          settings: { ...settings, quick: opt.quick },
          environment,
          summary,
          runs,
          tableCounts: counts[0]
        },
        null,
        2
      ) + '\n'
    )
    process.stdout.write(`results: ${file}\n`)
  } finally {
    await copyClient?.end().catch(() => undefined)
    await service?.stop().catch(() => undefined)
    await compare?.stop().catch(() => undefined)
    await db.close({ keep: opt['keep-db'], log })
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bulk benchmark failed: ${err?.stack ?? err}\n`)
    process.exit(1)
  }
)
