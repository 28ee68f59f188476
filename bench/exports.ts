/**
 * `npm run bench:exports`: exports of the incident module through the service (CSV, XLSX,
 * PDF) against a bare CSV script, on one fresh database (DATABASE_URL's server, or the
 * embedded cluster in data/bench).
 *
 *  1. `--rows` incident records of the bench tenant seeded (bench/seed.ts);
 *  2. service: per format a fresh service child (bench/service-server.ts --jobs: Agenda runs
 *     the export jobs in it); `POST /api/v1/exports`, polled every 100 ms until it succeeds
 *     (bench/exports-service.ts); rows/s over the wall time (POST → succeeded) and over the
 *     job's own startedAt → finishedAt; the child's RSS at start, its peak (`maxRSS`) after
 *     the format's exports, then again after it served their downloads (each file checked);
 *  3. floor (CSV only): a bare `pg` script in its own child (bench/exports-baseline.ts)
 *     writing the same columns to a CSV file; it alternates with the service per repeat;
 *     ratio = service ÷ baseline rows/s (medians), target >= 0.5; peak RSS target < 300 MB.
 *
 * A figure off its target is reported, never an error: exit 0 whenever the run completes.
 * A failed export or a file that does not check out is an error.
 *
 * Options: --quick (20,000 rows), --rows N (100,000), --repeats N (CSV and baseline, 3;
 * XLSX and PDF run once each: they are several times slower and their figure is steady),
 * --formats csv,xlsx,pdf, --baseline-page N (5,000 rows per keyset page), --cpu-prof
 * (profiles each service child into bench/results/profiles/), --keep-db, --db-url URL (reuse a kept
 * database, topped up to --rows incidents), --node-flags '...' (added to the service children's node flags).
 */
import { cpus, loadavg, tmpdir } from 'node:os'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { loadConfig } from '../core/config.ts'
import { loadModules } from '../core/modules/registry.ts'
import { projectRoot } from '../core/paths.ts'
import {
  benchDatabase,
  cpuDelta,
  defaultTenant,
  fmt,
  median,
  pgBackendCpu,
  postgresVersion,
  prepareRun,
  startChild,
  table,
  type ChildServer
} from './common.ts'
import { baselineColumns, forkBaseline, type BaselineResult, type BaselineSpec } from './exports-baseline.ts'
import {
  compareFiles,
  csvHeader,
  downloadAndCheck,
  serviceExport,
  type Format,
  type ServiceExport,
  type Target
} from './exports-service.ts'
import { seedIncidents } from './seed.ts'

const { values: opt } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rows: { type: 'string' },
    repeats: { type: 'string' },
    formats: { type: 'string' },
    'baseline-page': { type: 'string' },
    'cpu-prof': { type: 'boolean', default: false },
    'keep-db': { type: 'boolean', default: false },
    'db-url': { type: 'string' },
    'node-flags': { type: 'string' }
  }
})

const settings = {
  rows: Number(opt.rows ?? (opt.quick ? 20_000 : 100_000)),
  csvRepeats: Number(opt.repeats ?? 3),
  otherRepeats: 1,
  formats: (opt.formats ?? 'csv,xlsx,pdf').split(',').map((f) => f.trim()) as Format[],
  baselinePage: Number(opt['baseline-page'] ?? 5_000),
  pollMs: 100,
  ratioTarget: 0.5,
  rssTargetMB: 300
}
for (const f of settings.formats)
  if (!['csv', 'xlsx', 'pdf'].includes(f)) throw new Error(`--formats: unknown format "${f}"`)
const moduleKey = 'incident'
const resultsDir = join(projectRoot, 'bench', 'results')
const log = (line: string) => process.stderr.write(line + '\n')
const stamp = new Date().toISOString().replace(/[:.]/g, '-')
const mib = (kib: number) => `${fmt(kib / 1024)} MiB`
const mb = (bytes: number) => `${fmt(bytes / 1e6, 1)} MB`

/** The incident module's field definitions (the baseline maps the service CSV's header labels onto them). */
async function moduleFields(url: string) {
  const module = (await loadModules(loadConfig({ database: { url } }).modules)).get(moduleKey)
  if (!module) throw new Error(`no module ${moduleKey}`)
  return module.definition.fields
}

/**
 * `--db-url`: a database of an earlier run (`--keep-db`), kept again at the end. It is topped up to `--rows`
 * incidents, so runs of two checkouts (or of a change) read the same rows without seeding a million each time.
 */
function keptDatabase(url: string) {
  return {
    url,
    name: new URL(url).pathname.slice(1),
    where: 'DATABASE_URL' as const,
    async close(options: { keep?: boolean; log?: (line: string) => void } = {}) {
      options.log?.(`kept database ${url}`)
    }
  }
}

async function incidentCount(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    const { rows } = await c.query(
      `SELECT count(*)::int AS n FROM records WHERE tenant_id = $1 AND module_key = $2 AND deleted_at IS NULL`,
      [defaultTenant, moduleKey]
    )
    return rows[0].n
  } finally {
    await c.end()
  }
}

const target = (service: ChildServer): Target => ({ url: service.url, token: service.token! })

function startService(url: string, filesDir: string, profileAs?: string): Promise<ChildServer> {
  const cpuProfDir = profileAs ? join(resultsDir, 'profiles', `${stamp}-exports-${profileAs}`) : undefined
  const args = ['--database-url', url, '--tenant', defaultTenant, '--jobs', '--attachments-dir', filesDir]
  // After npm start's own flags, so that e.g. `--node-flags=--max-old-space-size=192` overrides its heap cap.
  const nodeFlags = opt['node-flags']?.split(' ').filter(Boolean)
  return startChild('service', join(projectRoot, 'bench', 'service-server.ts'), args, projectRoot, {
    cpuProfDir,
    nodeFlags
  })
}

/** CPU microseconds the main thread of process `pid` has used (its task's utime + stime, Linux; NaN elsewhere). */
function mainThreadCpu(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100
  } catch {
    return NaN
  }
}

interface ServiceRun extends ServiceExport {
  side: 'service'
  format: Format
  repeat: number
  rowsPerSec: number
  jobRowsPerSec: number
  serverCpuUsPerRow: number
  /** CPU of the service's main thread alone (where the job reads, encodes and commits), per row. */
  mainCpuUsPerRow: number
  pgCpuUsPerRow: number
  downloadMs?: number
}
interface BaselineRun extends BaselineResult {
  side: 'baseline'
  format: 'csv'
  repeat: number
  rowsPerSec: number
  cpuUsPerRow: number
  pgCpuUsPerRow: number
}

async function measureService(
  service: ChildServer,
  database: string,
  format: Format,
  repeat: number
): Promise<ServiceRun> {
  const svc0 = await service.cpu()
  const main0 = mainThreadCpu(service.child.pid)
  const pg0 = pgBackendCpu(database)
  const e = await serviceExport(target(service), moduleKey, format, settings.rows, settings.pollMs)
  const pg1 = pgBackendCpu(database)
  const main1 = mainThreadCpu(service.child.pid)
  const svc1 = await service.cpu()
  const run: ServiceRun = {
    side: 'service',
    format,
    repeat,
    ...e,
    rowsPerSec: (e.rows * 1000) / e.wallMs,
    jobRowsPerSec: (e.rows * 1000) / e.jobMs,
    serverCpuUsPerRow: (svc1 - svc0) / e.rows,
    mainCpuUsPerRow: (main1 - main0) / e.rows,
    pgCpuUsPerRow: pg1.size ? cpuDelta(pg0, pg1) / e.rows : NaN
  }
  log(
    `  #${repeat + 1} service  ${format.padEnd(4)} ${fmt(run.rowsPerSec).padStart(7)} rows/s wall (${fmt(e.wallMs)} ms, queued ${fmt(e.queueMs)} ms, ${e.polls} polls)  ` +
      `job ${fmt(run.jobRowsPerSec)} rows/s (${fmt(e.jobMs)} ms)  ${mb(e.fileSize)}  server CPU ${fmt(run.serverCpuUsPerRow, 1)} µs/row (main thread ${fmt(run.mainCpuUsPerRow, 1)})  pg CPU ${fmt(run.pgCpuUsPerRow, 1)} µs/row`
  )
  return run
}

async function measureBaseline(spec: BaselineSpec, repeat: number): Promise<BaselineRun> {
  const r = await forkBaseline(spec)
  if (r.rows !== settings.rows) throw new Error(`baseline wrote ${r.rows} rows, expected ${settings.rows}`)
  const run: BaselineRun = {
    side: 'baseline',
    format: 'csv',
    repeat,
    ...r,
    rowsPerSec: (r.rows * 1000) / r.ms,
    cpuUsPerRow: r.cpuUs / r.rows,
    pgCpuUsPerRow: r.pgCpuUs / r.rows
  }
  log(
    `  #${repeat + 1} baseline csv  ${fmt(run.rowsPerSec).padStart(7)} rows/s (${fmt(r.ms)} ms)  ${mb(r.bytes)}  CPU ${fmt(run.cpuUsPerRow, 1)} µs/row  pg CPU ${fmt(run.pgCpuUsPerRow, 1)} µs/row  peak RSS ${mib(r.maxRssKiB)}`
  )
  return run
}

async function main() {
  const { startedAt, loadBefore } = prepareRun(resultsDir, log)
  log(
    `exports benchmark: ${settings.rows} rows, formats ${settings.formats.join(', ')}; CSV and baseline ${settings.csvRepeats} repeat(s), XLSX and PDF ${settings.otherRepeats}${opt.quick ? ' (quick)' : ''}`
  )
  const db = opt['db-url'] ? keptDatabase(opt['db-url']) : await benchDatabase()
  const work = mkdtempSync(join(tmpdir(), 'bench-exports-'))
  let service: ChildServer | undefined
  try {
    log(
      `database: ${db.name} on ${db.where === 'embedded' ? 'the embedded cluster (data/bench)' : 'DATABASE_URL'}; files under ${work}`
    )
    const pgVersion = await postgresVersion(db.url)
    // A first service migrates the database and creates the tenant the seed needs.
    service = await startService(db.url, join(work, 'store'))
    await service.stop()
    service = undefined
    const have = await incidentCount(db.url)
    if (have > settings.rows) throw new Error(`${db.name} holds ${have} incidents, more than --rows ${settings.rows}`)
    const seeded =
      have < settings.rows
        ? await seedIncidents(db.url, { tenantId: defaultTenant, count: settings.rows - have })
        : { count: 0, ms: 0 }
    log(`seeded ${seeded.count} incident records in ${seeded.ms} ms`)

    const serviceRuns: ServiceRun[] = []
    const baselineRuns: BaselineRun[] = []
    const memory: Record<
      string,
      {
        startRssKiB: number
        startMaxRssKiB: number
        peakRssKiB: number
        peakWithDownloadsRssKiB: number
        endRssKiB: number
      }
    > = {}
    let comparison: Awaited<ReturnType<typeof compareFiles>> | undefined
    let csvHeaderLine: string | undefined
    for (const format of settings.formats) {
      service = await startService(db.url, join(work, 'store'), opt['cpu-prof'] ? format : undefined)
      const start = await service.mem()
      log(`${format}: fresh service ${service.url} (RSS ${mib(start.rss)})`)
      const repeats = format === 'csv' ? settings.csvRepeats : settings.otherRepeats
      const runs: ServiceRun[] = []
      let spec: BaselineSpec | undefined
      const baselineFile = (rep: number) => join(work, `baseline-${rep}.csv`)
      const baseline = async (rep: number) => {
        baselineRuns.push(await measureBaseline({ ...spec!, out: baselineFile(rep) }, rep))
        if (rep > 0) rmSync(baselineFile(rep), { force: true }) // the first one is compared with the service's below
      }
      for (let rep = 0; rep < repeats; rep++) {
        // CSV: service and baseline alternate who goes first (after the first service run, whose header the baseline copies).
        const baselineFirst = format === 'csv' && rep % 2 === 1
        if (baselineFirst) await baseline(rep)
        runs.push(await measureService(service, db.name, format, rep))
        if (format === 'csv' && !spec) {
          csvHeaderLine = await csvHeader(target(service), runs[0].id)
          const columns = baselineColumns(csvHeaderLine, await moduleFields(db.url))
          spec = {
            url: db.url,
            tenantId: defaultTenant,
            moduleKey,
            out: '',
            header: csvHeaderLine,
            columns,
            pageSize: settings.baselinePage
          }
          log(
            `  service CSV: ${columns.length} columns (${columns.filter((c) => !c.system).length} payload fields); the baseline writes the same`
          )
        }
        if (format === 'csv' && !baselineFirst) await baseline(rep)
      }
      // Rendering's peak first; then the downloads, which the same process serves.
      const afterExports = await service.mem()
      for (const run of runs) {
        const file = join(work, `service-${run.repeat}.${format}`)
        run.downloadMs = (await downloadAndCheck(target(service), run, format, file)).downloadMs
        if (format === 'csv' && run.repeat === 0) {
          comparison = await compareFiles(file, baselineFile(0))
          log(
            `  baseline CSV vs service CSV: ${comparison.identical ? 'identical' : `first difference at line ${comparison.line}:\n    service  ${comparison.a}\n    baseline ${comparison.b}`}`
          )
          rmSync(baselineFile(0), { force: true })
        }
        rmSync(file, { force: true })
      }
      log(
        `  downloaded and checked ${runs.length} file(s): ${runs.map((r) => `${mb(r.fileSize)} in ${fmt(r.downloadMs!)} ms`).join(', ')}`
      )
      const end = await service.mem()
      memory[format] = {
        startRssKiB: start.rss,
        startMaxRssKiB: start.maxRSS,
        peakRssKiB: afterExports.maxRSS,
        peakWithDownloadsRssKiB: end.maxRSS,
        endRssKiB: end.rss
      }
      log(
        `  service RSS: ${mib(start.rss)} at start, peak ${mib(afterExports.maxRSS)} after ${repeats} export(s), ${mib(end.maxRSS)} after serving the download(s) (now ${mib(end.rss)})`
      )
      serviceRuns.push(...runs)
      await service.stop()
      service = undefined
    }

    const summary = settings.formats.map((format) => {
      const r = serviceRuns.filter((x) => x.format === format)
      const base = format === 'csv' ? baselineRuns : []
      const svcRate = median(r.map((x) => x.rowsPerSec))
      const baseRate = base.length ? median(base.map((x) => x.rowsPerSec)) : NaN
      return {
        format,
        repeats: r.length,
        serviceRowsPerSec: svcRate,
        serviceJobRowsPerSec: median(r.map((x) => x.jobRowsPerSec)),
        serviceWallMs: median(r.map((x) => x.wallMs)),
        serviceQueueMs: median(r.map((x) => x.queueMs)),
        serverCpuUsPerRow: median(r.map((x) => x.serverCpuUsPerRow)),
        mainCpuUsPerRow: median(r.map((x) => x.mainCpuUsPerRow)),
        pgCpuUsPerRow: median(r.map((x) => x.pgCpuUsPerRow)),
        baselineRowsPerSec: baseRate,
        baselineCpuUsPerRow: base.length ? median(base.map((x) => x.cpuUsPerRow)) : NaN,
        baselinePgCpuUsPerRow: base.length ? median(base.map((x) => x.pgCpuUsPerRow)) : NaN,
        baselinePeakRssKiB: base.length ? Math.max(...base.map((x) => x.maxRssKiB)) : NaN,
        ratio: svcRate / baseRate,
        fileBytes: r[r.length - 1].fileSize,
        baselineFileBytes: base.length ? base[base.length - 1].bytes : NaN,
        ...memory[format]
      }
    })

    const rows = [
      [
        'format',
        'service rows/s',
        'job rows/s',
        'baseline rows/s',
        'ratio',
        'target',
        'svc CPU/row',
        'main thread',
        'pg CPU/row',
        'RSS at start',
        'peak rendering',
        'peak RSS',
        'target',
        'file size'
      ],
      ...summary.map((s) => [
        `${s.format} (${s.repeats} run${s.repeats > 1 ? 's' : ''})`,
        fmt(s.serviceRowsPerSec),
        fmt(s.serviceJobRowsPerSec),
        fmt(s.baselineRowsPerSec),
        fmt(s.ratio, 2),
        s.format === 'csv' ? `>= ${settings.ratioTarget} ${s.ratio >= settings.ratioTarget ? 'ok' : 'below'}` : '',
        `${fmt(s.serverCpuUsPerRow, 1)} µs`,
        `${fmt(s.mainCpuUsPerRow, 1)} µs`,
        `${fmt(s.pgCpuUsPerRow, 1)} µs`,
        mib(s.startRssKiB),
        mib(s.peakRssKiB),
        mib(s.peakWithDownloadsRssKiB),
        `< ${settings.rssTargetMB} MB ${s.peakWithDownloadsRssKiB * 1024 < settings.rssTargetMB * 1e6 ? 'ok' : 'above'}`,
        mb(s.fileBytes)
      ])
    ]
    const csv = summary.find((s) => s.format === 'csv')
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
      `\n${settings.rows} incident rows; medians; ${environment.cpus} CPU(s), node ${environment.node}, PostgreSQL ${pgVersion} (${environment.database})\n\n` +
        table(rows) +
        '\n\nservice rows/s: rows ÷ wall time from POST to a poll seeing `succeeded` (100 ms polls); job rows/s: rows ÷ (finishedAt − startedAt) of the job.\n' +
        (csv
          ? `baseline (bare pg keyset pages of ${settings.baselinePage} → CSV file, own child): ${fmt(csv.baselineRowsPerSec)} rows/s, CPU ${fmt(csv.baselineCpuUsPerRow, 1)} µs/row, ` +
            `pg CPU ${fmt(csv.baselinePgCpuUsPerRow, 1)} µs/row, peak RSS ${mib(csv.baselinePeakRssKiB)}, ${mb(csv.baselineFileBytes)}; ` +
            `its file ${comparison?.identical ? 'is identical to the service CSV' : `differs from the service CSV at line ${comparison?.line}`}\n`
          : '') +
        'svc CPU/row: CPU time of the service process per row (main thread: its main thread alone, /proc); pg CPU/row: CPU time of the PostgreSQL backends of the bench database per row.\n' +
        'peak RSS: maxRSS of a fresh service child per format once it has also served the downloads; peak rendering: its maxRSS after the exports,\n' +
        'before any download. MiB = 1,048,576 bytes; the target is 300 MB = 286 MiB.\n'
    )
    const file = join(
      resultsDir,
      `exports-${startedAt.toISOString().replace(/[:.]/g, '-')}${opt.quick ? '-quick' : ''}.json`
    )
    writeFileSync(
      file,
      JSON.stringify(
        {
          startedAt,
          finishedAt: new Date(),
          settings: { ...settings, quick: opt.quick },
          environment,
          seeded,
          csvHeader: csvHeaderLine,
          comparison,
          summary,
          serviceRuns,
          baselineRuns
        },
        null,
        2
      ) + '\n'
    )
    process.stdout.write(`results: ${file}\n`)
  } finally {
    await service?.stop().catch(() => undefined)
    await db.close({ keep: opt['keep-db'], log })
    rmSync(work, { recursive: true, force: true })
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`exports benchmark failed: ${err?.stack ?? err}\n`)
    process.exit(1)
  }
)
