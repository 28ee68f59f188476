/**
 * What the benchmark scripts share: the tenant, its modules and the create payload; the
 * child side of a server process (serveAsChild); and the parent side that run.ts and
 * bulk.ts both use: a fresh database, server children, PostgreSQL backend CPU, tables.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { appendFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { GCProfiler } from 'node:v8'
import type { Result } from 'autocannon'
import pg from 'pg'
import { projectRoot } from '../core/paths.ts'

export const defaultTenant = 'bench'
export const benchModules = ['incident', 'corrective-action', 'inspection']

/** The payload every create request sends (a valid incident, as test/helpers/server.ts uses). */
export const createPayload = {
  title: 'Forklift clipped racking',
  description: 'A reversing forklift struck the end of aisle 4 racking; no one was hurt.',
  occurredAt: '2026-11-20T08:30:00Z',
  site: 'Leeds DC',
  category: 'near-miss',
  severity: 'medium'
}

export function median(values: number[]): number {
  if (!values.length) return NaN
  const s = [...values].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

/**
 * Runs a benchmark server as a child of run.ts or bulk.ts: answers CPU-usage ('cpu') and
 * memory ('mem': peak and current resident set size, both KiB) requests, stops on
 * 'stop', SIGTERM/SIGINT or a lost parent, and exits through process.exit so that
 * --cpu-prof can write its profile. `ready` is sent to the parent once listening.
 */
/**
 * The heap's high-water mark over a stretch of time: sampled every millisecond while the event
 * loop turns, and read from V8's GC profiler at every collection (the heap in use just before
 * it, where it is largest), so work that blocks the loop is still caught by the collections it causes.
 */
const heapPeak = (() => {
  let peak = 0
  let timer: NodeJS.Timeout | undefined
  let profiler: GCProfiler | undefined
  const sample = () => (peak = Math.max(peak, process.memoryUsage().heapUsed))
  return {
    start(): number {
      global.gc?.()
      peak = process.memoryUsage().heapUsed
      timer = setInterval(sample, 1)
      profiler = new GCProfiler()
      profiler.start()
      return peak
    },
    stop(): number {
      sample()
      clearInterval(timer)
      for (const gc of profiler?.stop()?.statistics ?? [])
        peak = Math.max(peak, gc.beforeGC.heapStatistics.usedHeapSize)
      return peak
    }
  }
})()

/**
 * `BENCH_MEMORY_TRACE=<file>`: the child appends `process.memoryUsage()` (MiB, by kind) to the file
 * every 250 ms, to tell apart what makes up a peak RSS (heap, external and array buffers, the rest).
 */
function traceMemory(file: string | undefined) {
  if (!file) return
  const t0 = Date.now()
  const mib = (n: number) => Math.round(n / 1048576)
  setInterval(() => {
    const m = process.memoryUsage()
    const line = {
      s: (Date.now() - t0) / 1000,
      rss: mib(m.rss),
      heapTotal: mib(m.heapTotal),
      heapUsed: mib(m.heapUsed)
    }
    appendFileSync(
      file,
      JSON.stringify({ ...line, external: mib(m.external), arrayBuffers: mib(m.arrayBuffers) }) + '\n'
    )
  }, 250).unref()
}

export function serveAsChild(close: () => Promise<void>, ready: Record<string, unknown>) {
  traceMemory(process.env.BENCH_MEMORY_TRACE)
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await close().catch(() => undefined)
    process.exit(0)
  }
  process.on('SIGTERM', () => void stop())
  process.on('SIGINT', () => void stop())
  if (process.send) {
    process.on('message', (msg: { type?: string }) => {
      if (msg?.type === 'cpu') process.send!({ type: 'cpu', usage: process.cpuUsage() })
      if (msg?.type === 'mem')
        process.send!({
          type: 'mem',
          maxRSS: process.resourceUsage().maxRSS,
          rss: Math.round(process.memoryUsage.rss() / 1024)
        })
      if (msg?.type === 'heap-start') process.send!({ type: 'heap-start', base: heapPeak.start() })
      if (msg?.type === 'heap-peak') process.send!({ type: 'heap-peak', peak: heapPeak.stop() })
      if (msg?.type === 'stop') void stop()
    })
    process.on('disconnect', () => void stop())
    process.send({ type: 'ready', ...ready })
  }
}

// ---------------------------------------------------------------- parent side

/**
 * The benchmarks' own embedded cluster: not the tests' (data/test), which `npm test`
 * stops when it ends, so that a benchmark can run beside the test suite.
 */
export const benchCluster = { dataDir: 'data/bench', port: Number(process.env.EMBEDDED_BENCH_PG_PORT ?? 54340) }

/** A fresh database for one benchmark run (DATABASE_URL's server, else the embedded cluster in data/bench). */
export interface BenchDatabase {
  url: string
  name: string
  where: 'embedded' | 'DATABASE_URL'
  /** Drops the database (unless `keep`) and stops the embedded cluster if this process started it. */
  close(options?: { keep?: boolean; log?: (line: string) => void }): Promise<void>
}

/** Creates the run's database as the tests do (`records_test_<pid>_<hex>`). */
export async function benchDatabase(): Promise<BenchDatabase> {
  // Imported here, not at the top: the server children import this file too and need neither.
  const { startEmbedded } = await import('../core/db/embedded.ts')
  const { freshDatabase } = await import('../test/helpers/database.ts')
  // freshDatabase would start the embedded cluster too; starting it here tells us whether we must stop it at the end.
  const embedded = process.env.DATABASE_URL ? undefined : await startEmbedded({ ...benchCluster, database: 'postgres' })
  const db = await freshDatabase(benchCluster)
  const name = new URL(db.url).pathname.slice(1)
  return {
    url: db.url,
    name,
    where: embedded ? 'embedded' : 'DATABASE_URL',
    async close({ keep = false, log = () => undefined } = {}) {
      if (!keep) await db.drop().catch((err) => log(`could not drop ${name}: ${err.message}`))
      else log(`kept database ${db.url}`)
      if (embedded?.startedHere) await embedded.stop().catch(() => undefined)
    }
  }
}

/** `SHOW server_version` of the server holding `url`. */
export async function postgresVersion(url: string): Promise<string> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    return (await c.query('SHOW server_version')).rows[0].server_version
  } finally {
    await c.end()
  }
}

/** A benchmark server running as a child process (serveAsChild on its side). */
export interface ChildServer<N extends string = string> {
  name: N
  child: ChildProcess
  url: string
  token?: string
  /** CPU microseconds (user + system) the child has used so far. */
  cpu(): Promise<number>
  /** The child's peak (`process.resourceUsage().maxRSS`) and current resident set size, KiB. */
  mem(): Promise<{ maxRSS: number; rss: number }>
  /** Starts tracking the child's heap high-water mark (after a GC); resolves the heap bytes in use then. */
  heapStart(): Promise<number>
  /** Stops tracking; resolves the highest heap bytes in use since heapStart. */
  heapPeak(): Promise<number>
  /** What the child sent with `ready` besides url and token. */
  ready: Record<string, unknown>
  stop(): Promise<void>
}

/**
 * The V8 flags `npm start` gives the service (package.json `scripts.start`, e.g. the heap
 * cap), so service children run with the same heap settings as the real thing.
 */
export function startScriptNodeFlags(): string[] {
  const start: string = JSON.parse(readFileSync(`${projectRoot}/package.json`, 'utf8')).scripts.start
  return start.split(/\s+/).filter((t) => /^--max-[a-z-]+=\d+$/.test(t))
}

/**
 * Forks `script` under tsx, with `npm start`'s heap flags, and resolves once it sends `ready`. With `cpuProfDir`, node
 * writes a CPU profile per thread (the main thread and tsx's loader thread) there on exit.
 */
export function startChild<N extends string>(
  name: N,
  script: string,
  args: string[],
  cwd: string,
  options: { cpuProfDir?: string; nodeFlags?: string[] } = {}
): Promise<ChildServer<N>> {
  const execArgv = ['--import', 'tsx', ...startScriptNodeFlags(), ...(options.nodeFlags ?? [])]
  if (options.cpuProfDir) {
    mkdirSync(options.cpuProfDir, { recursive: true })
    execArgv.push('--cpu-prof', '--cpu-prof-dir', options.cpuProfDir)
  }
  const child = fork(script, args, { cwd, execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  // Answers come back in the order asked, per message type.
  const waiting = new Map<string, Array<(msg: any) => void>>()
  const ask = <T>(type: string, pick: (msg: any) => T) =>
    new Promise<T>((done) => {
      waiting.set(type, [...(waiting.get(type) ?? []), (msg) => done(pick(msg))])
      child.send({ type })
    })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within 180 s`)), 180_000)
    child.once('exit', (code, signal) =>
      reject(new Error(`${name} exited before it was ready (code ${code}, signal ${signal})`))
    )
    child.on('message', (msg: any) => {
      if (msg?.type !== 'ready') {
        waiting.get(msg?.type)?.shift()?.(msg)
        return
      }
      clearTimeout(timer)
      resolve({
        name,
        child,
        url: msg.url,
        token: msg.token,
        cpu: () => ask('cpu', (m) => m.usage.user + m.usage.system),
        mem: () => ask('mem', (m) => ({ maxRSS: m.maxRSS, rss: m.rss })),
        heapStart: () => ask('heap-start', (m) => m.base as number),
        heapPeak: () => ask('heap-peak', (m) => m.peak as number),
        ready: msg,
        async stop() {
          if (child.exitCode !== null || child.signalCode !== null) return
          child.send({ type: 'stop' })
          const killer = setTimeout(() => child.kill('SIGKILL'), 15_000)
          await exited
          clearTimeout(killer)
        }
      })
    })
  })
}

const clockTick = 100 // USER_HZ on Linux
/** CPU microseconds used so far by the backends connected to `database`, by pid (empty where /proc is unreadable). */
export function pgBackendCpu(database: string): Map<number, number> {
  const out = new Map<number, number>()
  let pids: string[]
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d))
  } catch {
    return out
  }
  for (const pid of pids) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      if (!cmd.startsWith('postgres: ') || !cmd.includes(` ${database} `)) continue
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      out.set(Number(pid), ((Number(fields[11]) + Number(fields[12])) * 1e6) / clockTick)
    } catch {
      /* gone */
    }
  }
  return out
}

/** CPU microseconds the backends used between two pgBackendCpu readings (backends that started in between count from 0). */
export function cpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0
  for (const [pid, us] of after) sum += us - (before.get(pid) ?? 0)
  return sum
}

export const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '-')

/** A plain-text table: first row the header, first column left-aligned, the rest right-aligned. */
export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)))
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')
  return [line(rows[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n')
}

/** Start of a benchmark run: works from the project root, makes the results folder, warns when the machine is already busy. */
export function prepareRun(resultsDir: string, log: (line: string) => void): { startedAt: Date; loadBefore: number } {
  process.chdir(projectRoot)
  mkdirSync(resultsDir, { recursive: true })
  const loadBefore = loadavg()[0]
  if (loadBefore > 0.5 * cpus().length)
    log(
      `warning: load average ${loadBefore.toFixed(2)} on ${cpus().length} CPU(s) before start: other work on this machine will skew the figures`
    )
  return { startedAt: new Date(), loadBefore }
}

/** The options of a load benchmark that runs REST against something in one run (bench/run.ts, bench/graphql.ts). */
export const loadOptions = {
  quick: { type: 'boolean', default: false },
  repeats: { type: 'string' },
  duration: { type: 'string' },
  warmup: { type: 'string' },
  connections: { type: 'string' },
  records: { type: 'string' },
  only: { type: 'string' },
  'cpu-prof': { type: 'boolean', default: false },
  'service-root': { type: 'string' },
  'keep-db': { type: 'boolean', default: false }
} as const

/** Settings from those options: `--quick` is 1 s warm-up, 3 s runs, one repeat; otherwise the benchmark's own durations. */
export function loadSettings(
  opt: {
    quick?: boolean
    repeats?: string
    duration?: string
    warmup?: string
    connections?: string
    records?: string
  },
  full: { warmup: number; duration: number }
) {
  return {
    warmup: Number(opt.warmup ?? (opt.quick ? 1 : full.warmup)),
    duration: Number(opt.duration ?? (opt.quick ? 3 : full.duration)),
    repeats: Number(opt.repeats ?? (opt.quick ? 1 : 3)),
    connections: Number(opt.connections ?? 32),
    records: Number(opt.records ?? 100_000)
  }
}

/** One measured load of one side: throughput, latency, and CPU per request of the server and of the database's backends. */
export interface LoadRun {
  side: string
  repeat: number
  reqPerSec: number
  p50: number
  p99: number
  requests: number
  non2xx: number
  errors: number
  timeouts: number
  serverCpuUsPerReq: number
  pgCpuUsPerReq: number
}

/**
 * A warm-up (discarded), then the measured run of `load`, with the server's CPU (`cpu`, over
 * IPC) and the PostgreSQL backends' CPU of `database` read around it; logs one line per run.
 */
export async function measureLoad<S extends string>(o: {
  key: string
  side: S
  repeat: number
  database: string
  warmup: number
  duration: number
  load: (seconds: number) => Promise<Result>
  cpu: () => Promise<number>
  log: (line: string) => void
  pad?: number
}): Promise<LoadRun & { side: S }> {
  await o.load(o.warmup)
  const cpu0 = await o.cpu()
  const pg0 = pgBackendCpu(o.database)
  const r = await o.load(o.duration)
  const pg1 = pgBackendCpu(o.database)
  const cpu1 = await o.cpu()
  const total = r['2xx'] + r.non2xx
  const run = {
    side: o.side,
    repeat: o.repeat,
    reqPerSec: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: total,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    serverCpuUsPerReq: total ? (cpu1 - cpu0) / total : NaN,
    pgCpuUsPerReq: total && pg1.size ? cpuDelta(pg0, pg1) / total : NaN
  }
  const bad =
    run.non2xx || run.errors
      ? `  (${run.non2xx} non-2xx, ${run.errors} errors: ${JSON.stringify(r.statusCodeStats)})`
      : ''
  o.log(
    `  [${o.key}] #${o.repeat + 1} ${o.side.padEnd(o.pad ?? 8)} ${run.reqPerSec.toFixed(0).padStart(6)} req/s  p50 ${run.p50} ms  p99 ${run.p99} ms  ` +
      `server CPU ${run.serverCpuUsPerReq.toFixed(0)} µs/req  pg CPU ${run.pgCpuUsPerReq.toFixed(0)} µs/req${bad}`
  )
  return run
}

/**
 * Polls until PostgreSQL builds no index and analyzes nothing in this database for 3 consecutive seconds (the service's
 * index builder builds the declared indexes at start, then analyzes the table); returns how long it took.
 */
export async function waitForIndexBuilds(url: string, log: (line: string) => void): Promise<number> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const start = Date.now()
    let quiet = 0
    let lastSeen = ''
    while (quiet < 3) {
      const { rows } = await client.query(
        `SELECT p.index_relid::regclass::text AS idx, p.phase, p.blocks_done, p.blocks_total
           FROM pg_stat_progress_create_index p WHERE p.datid = (SELECT oid FROM pg_database WHERE datname = current_database())
         UNION ALL
         SELECT 'ANALYZE ' || a.relid::regclass::text, a.phase, a.sample_blks_scanned, a.sample_blks_total
           FROM pg_stat_progress_analyze a WHERE a.datid = (SELECT oid FROM pg_database WHERE datname = current_database())`
      )
      quiet = rows.length ? 0 : quiet + 1
      const seen = rows.map((r) => `${r.idx ?? '?'} (${r.phase}, ${r.blocks_done}/${r.blocks_total} blocks)`).join('; ')
      if (seen && seen !== lastSeen) log(`  building: ${seen}`)
      lastSeen = seen
      await new Promise((r) => setTimeout(r, 1000))
    }
    const waited = Date.now() - start
    const { rows } = await client.query(
      `SELECT indexrelid::regclass::text AS index, indisvalid AS valid, pg_size_pretty(pg_relation_size(indexrelid)) AS size
         FROM pg_index WHERE indrelid = 'records'::regclass ORDER BY 1`
    )
    log(`  no index build for 3 s after ${(waited / 1000).toFixed(1)} s; indexes of records:`)
    for (const r of rows) log(`    ${r.index}  valid=${r.valid}  ${r.size}`)
    return waited
  } finally {
    await client.end()
  }
}
