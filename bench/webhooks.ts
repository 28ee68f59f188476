/**
 * `npm run bench:webhooks`: how soon a webhook leaves after its commit, and how many deliveries
 * one instance sends per second, against a bare signed-POST loop in the same run (the issue's
 * targets: p95 commit-to-delivery <= 1 s; >= 200 deliveries/s for one instance).
 *
 *  1. a fresh database (DATABASE_URL's server, or the embedded cluster in data/bench);
 *  2. three children, each with its own event loop: the receiver (bench/webhook-receiver.ts,
 *     node:http answering 204, noting each arrival's time), the service (bench/service-server.ts
 *     --local-webhooks: the dispatcher on, plain http to 127.0.0.1 allowed) and the baseline
 *     sender (bench/webhook-baseline.ts);
 *  3. latency: one subscription to record.created, then creates (POST /api/v1/records) one at a
 *     time, paced at --rate per second for --duration seconds after a warm-up; latency = the
 *     receiver's arrival - the moment the 201 arrived (the commit is before the answer), and
 *     against the moment the request was sent (an upper bound); matched by subject id;
 *  4. throughput, per repeat: --rows rows bulk-loaded (POST /api/modules/incident/bulk) with 1
 *     subscription, then with 4 (each an ordered lane), deliveries/s from the first arrival to the
 *     last, each record checked delivered exactly once per subscription; and the baseline: as many
 *     signed POSTs of the same size, one at a time over keep-alive, to the same receiver.
 *     ratio = 1-subscription deliveries/s ÷ baseline/s (medians).
 *
 * A figure off its target is reported, never an error: exit 0 whenever the run completes.
 *
 * Options: --quick (1,000 rows, 1 s warm-up + 3 s of creates, 1 repeat), --rows N (5,000),
 * --rate N (creates/s, 20), --duration S (10), --warmup S (2), --repeats N (3), --cpu-prof
 * (profiles the service into bench/results/profiles/), --service-root DIR (the service of DIR, e.g. a
 * patched scratch copy of the project, against the same receiver and baseline), --keep-db.
 */
import http from 'node:http'
import { writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { Webhook } from 'standardwebhooks'
import { projectRoot } from '../core/paths.ts'
import { bulkLoad } from './bulk-load.ts'
import {
  benchDatabase,
  cpuDelta,
  createPayload,
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
import type { Arrival } from './webhook-receiver.ts'
import { wallClock } from './wall-clock.ts'

const { values: opt } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rows: { type: 'string' },
    rate: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    repeats: { type: 'string' },
    'cpu-prof': { type: 'boolean', default: false },
    'service-root': { type: 'string' },
    'keep-db': { type: 'boolean', default: false }
  }
})

const settings = {
  rows: Number(opt.rows ?? (opt.quick ? 1_000 : 5_000)),
  rate: Number(opt.rate ?? 20),
  duration: Number(opt.duration ?? (opt.quick ? 3 : 10)),
  warmup: Number(opt.warmup ?? (opt.quick ? 1 : 2)),
  repeats: Number(opt.repeats ?? (opt.quick ? 1 : 3)),
  subscriptions: [1, 4],
  /** A phase with no new arrival for this long is over, complete or not. */
  stallMs: 30_000,
  latencyTargetMs: 1000,
  rateTarget: 200
}
const resultsDir = join(projectRoot, 'bench', 'results')
const log = (line: string) => process.stderr.write(line + '\n')
const now = wallClock()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

type Child = ChildServer

/** Asks a child over IPC and waits for the answer of that type. */
function askChild<T = any>(child: Child, msg: Record<string, unknown>, answer = String(msg.type)): Promise<T> {
  return new Promise((resolve) => {
    const on = (m: any) => {
      if (m?.type !== answer) return
      child.child.off('message', on)
      resolve(m)
    }
    child.child.on('message', on)
    child.child.send(msg)
  })
}

// ---------------------------------------------------------------- the service over HTTP

const agent = new http.Agent({ keepAlive: true })

/** One request to the service; the wall-clock moments it was sent and its answer's head arrived. */
function request(
  service: Child,
  method: string,
  path: string,
  body?: unknown
): Promise<{ status: number; json: any; sent: number; answered: number }> {
  const url = new URL(path, service.url)
  const text = body === undefined ? undefined : JSON.stringify(body)
  return new Promise((resolve, reject) => {
    const req = http.request({
      hostname: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      method,
      agent,
      headers: {
        authorization: `Bearer ${service.token}`,
        ...(text ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) } : {})
      }
    })
    let answered = 0
    req.on('error', reject)
    req.on('response', (res) => {
      answered = now()
      let data = ''
      res.setEncoding('utf8')
      res.on('data', (d) => (data += d))
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, json: data ? JSON.parse(data) : undefined, sent, answered })
      )
    })
    const sent = now()
    req.end(text)
  })
}

async function subscribe(service: Child, url: string): Promise<{ id: string; secret: string }> {
  const r = await request(service, 'POST', '/api/v1/webhooks', { url, kinds: ['record.created'] })
  if (r.status !== 201) throw new Error(`subscribe ${url}: ${r.status} ${JSON.stringify(r.json)}`)
  return r.json
}

async function unsubscribe(service: Child, id: string) {
  const r = await request(service, 'DELETE', `/api/v1/webhooks/${id}`)
  if (r.status !== 200) throw new Error(`delete subscription ${id}: ${r.status} ${JSON.stringify(r.json)}`)
}

/** Until `expected` arrivals since the last take, or none new for settings.stallMs; then a short settle for late duplicates. */
async function awaitArrivals(receiver: Child, expected: number): Promise<void> {
  let last = -1
  let progressAt = Date.now()
  for (;;) {
    const { n } = await askChild<{ n: number }>(receiver, { type: 'count' })
    if (n >= expected) break
    if (n !== last) [last, progressAt] = [n, Date.now()]
    else if (Date.now() - progressAt > settings.stallMs) {
      log(`  ! ${n} of ${expected} deliveries arrived; none for ${settings.stallMs / 1000} s: giving up`)
      break
    }
    await sleep(100)
  }
  await sleep(500)
}

const take = (receiver: Child) =>
  askChild<{ arrivals: Arrival[]; first?: { headers: Record<string, string>; body: string } }>(receiver, {
    type: 'take'
  })

// ---------------------------------------------------------------- figures

/** Nearest-rank percentile of ascending `sorted`. */
function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]
}

function spread(values: number[]) {
  const s = [...values].sort((a, b) => a - b)
  return { n: s.length, p50: percentile(s, 50), p95: percentile(s, 95), p99: percentile(s, 99), max: s.at(-1) ?? NaN }
}

/** Deliveries per second from the first arrival to the last ((n - 1) intervals). */
function ratePerSec(arrivals: Arrival[]): number {
  if (arrivals.length < 2) return NaN
  let first = Infinity
  let last = -Infinity
  for (const a of arrivals) [first, last] = [Math.min(first, a.at), Math.max(last, a.at)]
  return ((arrivals.length - 1) * 1000) / (last - first)
}

/** Per path: arrivals, distinct webhook-ids, duplicates and the ids expected but missing. */
function exactlyOnce(arrivals: Arrival[], paths: string[], expected: number) {
  return paths.map((path) => {
    const mine = arrivals.filter((a) => a.path === path)
    const distinct = new Set(mine.map((a) => a.id)).size
    return {
      path,
      arrivals: mine.length,
      distinct,
      duplicates: mine.length - distinct,
      missing: Math.max(0, expected - distinct),
      rate: ratePerSec(mine)
    }
  })
}

// ---------------------------------------------------------------- phases

/** Creates one at a time at `rate` per second (the next waits for the previous answer if late). */
async function pacedCreates(service: Child, count: number, rate: number, tag: string) {
  const out: Array<{ id: string; sent: number; answered: number }> = []
  const start = performance.now()
  for (let i = 0; i < count; i++) {
    const wait = start + (i * 1000) / rate - performance.now()
    if (wait > 0) await sleep(wait)
    const r = await request(service, 'POST', '/api/v1/records', {
      moduleKey: 'incident',
      payload: { ...createPayload, title: `${createPayload.title} (${tag} #${i + 1})` }
    })
    if (r.status !== 201) throw new Error(`create answered ${r.status}: ${JSON.stringify(r.json).slice(0, 300)}`)
    out.push({ id: r.json.id, sent: r.sent, answered: r.answered })
  }
  return out
}

async function latencyPhase(service: Child, receiver: Child, db: pg.Client) {
  const sub = await subscribe(service, `${receiver.url}/latency`)
  await take(receiver)
  const warm = await pacedCreates(
    service,
    Math.max(1, Math.round(settings.warmup * settings.rate)),
    settings.rate,
    'warm-up'
  )
  await awaitArrivals(receiver, warm.length)
  const warmed = await take(receiver)
  // Sanity: the first delivery verifies with the subscription's secret (standardwebhooks) and names the record.
  const first = warmed.first!
  const verified = new Webhook(sub.secret).verify(first.body, first.headers) as any
  if (verified.type !== 'record.created' || verified.subject?.id !== warm[0].id)
    throw new Error(`first delivery is not the first create's: ${first.body}`)
  log(
    `  sanity check: ${warmed.arrivals.length} warm-up deliveries; the first verifies with the subscription secret (${Buffer.byteLength(first.body)} B, ${verified.type})`
  )

  const creates = await pacedCreates(service, Math.round(settings.duration * settings.rate), settings.rate, 'latency')
  await awaitArrivals(receiver, creates.length)
  const { arrivals } = await take(receiver)
  const bySubject = new Map<string, Arrival[]>()
  for (const a of arrivals) bySubject.set(a.subject ?? '', [...(bySubject.get(a.subject ?? '') ?? []), a])
  const fromAnswer: number[] = []
  const fromSent: number[] = []
  let missing = 0
  let duplicates = 0
  for (const c of creates) {
    const got = bySubject.get(c.id)
    if (!got?.length) {
      missing++
      continue
    }
    duplicates += got.length - 1
    const at = Math.min(...got.map((a) => a.at))
    fromAnswer.push(at - c.answered)
    fromSent.push(at - c.sent)
  }
  // Where the time went, per delivery: the fan-out transaction's start (webhook_deliveries.created_at, now()) and the
  // attempt's start (webhook_attempts.at, the dispatcher's clock) between the answer and the arrival.
  const { rows } = await db.query(
    `SELECT d.subject_id::text AS subject, extract(epoch FROM d.created_at) * 1000 AS queued, extract(epoch FROM a.at) * 1000 AS attempt
       FROM webhook_deliveries d JOIN webhook_attempts a ON a.tenant_id = d.tenant_id AND a.subscription_id = d.subscription_id AND a.event_id = d.event_id AND a.attempt = 1
      WHERE d.tenant_id = $1 AND d.subscription_id = $2`,
    [defaultTenant, sub.id]
  )
  const stages = { answerToFanOut: [] as number[], fanOutToAttempt: [] as number[], attemptToArrival: [] as number[] }
  const dbBySubject = new Map(rows.map((r) => [r.subject, r]))
  for (const c of creates) {
    const r = dbBySubject.get(c.id)
    const a = bySubject.get(c.id)?.[0]
    if (!r || !a) continue
    stages.answerToFanOut.push(Number(r.queued) - c.answered)
    stages.fanOutToAttempt.push(Number(r.attempt) - Number(r.queued))
    stages.attemptToArrival.push(a.at - Number(r.attempt))
  }
  await unsubscribe(service, sub.id)
  const result = {
    creates: creates.length,
    delivered: fromAnswer.length,
    missing,
    duplicates,
    fromAnswer: spread(fromAnswer),
    fromSent: spread(fromSent),
    createMs: spread(creates.map((c) => c.answered - c.sent)),
    stages: {
      answerToFanOut: spread(stages.answerToFanOut),
      fanOutToAttempt: spread(stages.fanOutToAttempt),
      attemptToArrival: spread(stages.attemptToArrival)
    },
    bodyBytes: Buffer.byteLength(first.body),
    template: JSON.parse(first.body)
  }
  log(
    `  ${result.delivered} of ${result.creates} creates delivered (${missing} missing, ${duplicates} duplicates); from the 201: p50 ${fmt(result.fromAnswer.p50, 1)} ms, ` +
      `p95 ${fmt(result.fromAnswer.p95, 1)} ms, p99 ${fmt(result.fromAnswer.p99, 1)} ms, max ${fmt(result.fromAnswer.max, 1)} ms`
  )
  return result
}

interface ThroughputRun {
  side: 'service' | 'baseline'
  subscriptions: number
  repeat: number
  deliveries: number
  expected: number
  ratePerSec: number
  /** From the start of the bulk call (service) or of the loop (baseline) to the last arrival. */
  endToEndPerSec: number
  lanes: ReturnType<typeof exactlyOnce>
  /** CPU of the sending process per delivery (the service's includes loading the rows). */
  senderCpuUsPerDelivery: number
  pgCpuUsPerDelivery: number
  receiverCpuUsPerDelivery: number
}

async function servicePhase(
  service: Child,
  receiver: Child,
  database: string,
  subscriptions: number,
  repeat: number
): Promise<ThroughputRun> {
  const paths = Array.from({ length: subscriptions }, (_, i) => `/r${repeat}-k${subscriptions}/s${i}`)
  const subs = []
  for (const p of paths) subs.push(await subscribe(service, receiver.url + p))
  await take(receiver)
  const expected = settings.rows * subscriptions
  const [svc0, rcv0, pg0] = [await service.cpu(), await receiver.cpu(), pgBackendCpu(database)]
  const started = now()
  await bulkLoad(
    { url: service.url, token: service.token!, moduleKey: 'incident' },
    `r${repeat}k${subscriptions}`,
    settings.rows,
    Math.min(settings.rows, 10_000)
  )
  const loadedMs = now() - started
  await awaitArrivals(receiver, expected)
  const [svc1, rcv1, pg1] = [await service.cpu(), await receiver.cpu(), pgBackendCpu(database)]
  const { arrivals } = await take(receiver)
  for (const s of subs) await unsubscribe(service, s.id)
  const lastAt = Math.max(...arrivals.map((a) => a.at))
  const run: ThroughputRun = {
    side: 'service',
    subscriptions,
    repeat,
    deliveries: arrivals.length,
    expected,
    ratePerSec: ratePerSec(arrivals),
    endToEndPerSec: (arrivals.length * 1000) / (lastAt - started),
    lanes: exactlyOnce(arrivals, paths, settings.rows),
    senderCpuUsPerDelivery: (svc1 - svc0) / arrivals.length,
    pgCpuUsPerDelivery: pg1.size ? cpuDelta(pg0, pg1) / arrivals.length : NaN,
    receiverCpuUsPerDelivery: (rcv1 - rcv0) / arrivals.length
  }
  const wrong = run.lanes.filter((l) => l.duplicates || l.missing)
  log(
    `  #${repeat + 1} service, ${subscriptions} subscription(s): ${fmt(run.ratePerSec)} deliveries/s (${run.deliveries} of ${expected}; rows loaded in ${fmt(loadedMs)} ms; ` +
      `lanes ${run.lanes.map((l) => fmt(l.rate)).join(' / ')}/s)  service CPU ${fmt(run.senderCpuUsPerDelivery)} µs  pg CPU ${fmt(run.pgCpuUsPerDelivery)} µs per delivery` +
      (wrong.length
        ? `  ! ${wrong.map((l) => `${l.path}: ${l.duplicates} duplicates, ${l.missing} missing`).join('; ')}`
        : '  exactly once')
  )
  return run
}

async function baselinePhase(
  baseline: Child,
  receiver: Child,
  template: unknown,
  secret: string,
  repeat: number
): Promise<ThroughputRun> {
  await take(receiver)
  const [snd0, rcv0] = [await baseline.cpu(), await receiver.cpu()]
  const started = now()
  const done = await askChild<{ ms: number; failed: number }>(
    baseline,
    { type: 'run', url: `${receiver.url}/baseline`, count: settings.rows, template, secret },
    'done'
  )
  await awaitArrivals(receiver, settings.rows)
  const [snd1, rcv1] = [await baseline.cpu(), await receiver.cpu()]
  const { arrivals } = await take(receiver)
  const lastAt = Math.max(...arrivals.map((a) => a.at))
  const run: ThroughputRun = {
    side: 'baseline',
    subscriptions: 1,
    repeat,
    deliveries: arrivals.length,
    expected: settings.rows,
    ratePerSec: ratePerSec(arrivals),
    endToEndPerSec: (arrivals.length * 1000) / (lastAt - started),
    lanes: exactlyOnce(arrivals, ['/baseline'], settings.rows),
    senderCpuUsPerDelivery: (snd1 - snd0) / arrivals.length,
    pgCpuUsPerDelivery: NaN,
    receiverCpuUsPerDelivery: (rcv1 - rcv0) / arrivals.length
  }
  log(
    `  #${repeat + 1} baseline: ${fmt(run.ratePerSec)} POSTs/s (${run.deliveries} of ${settings.rows} in ${fmt(done.ms)} ms, ${done.failed} failed)  sender CPU ${fmt(run.senderCpuUsPerDelivery)} µs per POST`
  )
  return run
}

// ---------------------------------------------------------------- main

async function main() {
  const { startedAt, loadBefore } = prepareRun(resultsDir, log)
  log(
    `webhooks benchmark: latency ${settings.rate} creates/s for ${settings.duration} s (+${settings.warmup} s warm-up); throughput ${settings.rows} rows x ` +
      `${settings.subscriptions.join(' and ')} subscription(s), ${settings.repeats} repeat(s)${opt.quick ? ' (quick)' : ''}`
  )
  const db = await benchDatabase()
  const children: Child[] = []
  let client: pg.Client | undefined
  try {
    log(`database: ${db.name} on ${db.where === 'embedded' ? 'the embedded cluster (data/bench)' : 'DATABASE_URL'}`)
    const pgVersion = await postgresVersion(db.url)
    const profileDir = opt['cpu-prof']
      ? join(resultsDir, 'profiles', `${startedAt.toISOString().replace(/[:.]/g, '-')}-webhooks-service`)
      : undefined
    const receiver = await startChild('receiver', join(projectRoot, 'bench', 'webhook-receiver.ts'), [], projectRoot)
    children.push(receiver)
    const serviceRoot = resolve(opt['service-root'] ?? projectRoot)
    const service = await startChild(
      'service',
      join(serviceRoot, 'bench', 'service-server.ts'),
      ['--database-url', db.url, '--tenant', defaultTenant, '--local-webhooks'],
      serviceRoot,
      { cpuProfDir: profileDir }
    )
    children.push(service)
    const baseline = await startChild('baseline', join(projectRoot, 'bench', 'webhook-baseline.ts'), [], projectRoot)
    children.push(baseline)
    log(
      `receiver ${receiver.url}; service ${service.url}${opt['service-root'] ? ` (from ${serviceRoot})` : ''}${profileDir ? ` (profiling into ${profileDir})` : ''}`
    )
    client = new pg.Client({ connectionString: db.url })
    await client.connect()

    log(`latency: ${settings.rate} creates/s, one at a time, 1 subscription:`)
    const latency = await latencyPhase(service, receiver, client)

    log(`throughput: ${settings.rows} rows bulk-loaded per run:`)
    const runs: ThroughputRun[] = []
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`
    for (let rep = 0; rep < settings.repeats; rep++) {
      // Alternate who goes first; the tables grow with every load.
      const one = () => servicePhase(service, receiver, db.name, 1, rep)
      const base = () => baselinePhase(baseline, receiver, latency.template, secret, rep)
      for (const phase of rep % 2 === 0 ? [base, one] : [one, base]) runs.push(await phase())
      for (const k of settings.subscriptions.filter((k) => k > 1))
        runs.push(await servicePhase(service, receiver, db.name, k, rep))
    }

    const pick = (side: ThroughputRun['side'], k: number) => {
      const r = runs.filter((x) => x.side === side && x.subscriptions === k)
      return {
        runs: r.length,
        ratePerSec: median(r.map((x) => x.ratePerSec)),
        endToEndPerSec: median(r.map((x) => x.endToEndPerSec)),
        laneRatePerSec: median(r.flatMap((x) => x.lanes.map((l) => l.rate))),
        senderCpuUsPerDelivery: median(r.map((x) => x.senderCpuUsPerDelivery)),
        pgCpuUsPerDelivery: median(r.map((x) => x.pgCpuUsPerDelivery)),
        receiverCpuUsPerDelivery: median(r.map((x) => x.receiverCpuUsPerDelivery)),
        deliveries: r.reduce((a, x) => a + x.deliveries, 0),
        expected: r.reduce((a, x) => a + x.expected, 0),
        duplicates: r.reduce((a, x) => a + x.lanes.reduce((b, l) => b + l.duplicates, 0), 0),
        missing: r.reduce((a, x) => a + x.lanes.reduce((b, l) => b + l.missing, 0), 0)
      }
    }
    const baseFig = pick('baseline', 1)
    const service1 = pick('service', 1)
    const service4 = settings.subscriptions.filter((k) => k > 1).map((k) => ({ k, fig: pick('service', k) }))
    const ratio = service1.ratePerSec / baseFig.ratePerSec
    const summary = {
      latency: {
        ...latency,
        template: undefined,
        target: { p95Ms: settings.latencyTargetMs, ok: latency.fromAnswer.p95 <= settings.latencyTargetMs }
      },
      throughput: {
        baseline: baseFig,
        service: [{ k: 1, fig: service1 }, ...service4],
        ratio,
        target: { perSec: settings.rateTarget, ok: service1.ratePerSec >= settings.rateTarget }
      }
    }

    const environment = {
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      postgres: pgVersion,
      database: db.where,
      loadAverageBefore: loadBefore,
      loadAverageAfter: loadavg()[0]
    }
    const ms = (n: number) => `${fmt(n, 1)} ms`
    const once = (f: ReturnType<typeof pick>) =>
      f.duplicates || f.missing ? `! ${f.duplicates} dup, ${f.missing} missing` : `yes (${f.deliveries})`
    const latencyRows = [
      ['commit-to-delivery latency', 'p50', 'p95', 'p99', 'max', 'target'],
      [
        'from the 201 answer',
        ms(latency.fromAnswer.p50),
        ms(latency.fromAnswer.p95),
        ms(latency.fromAnswer.p99),
        ms(latency.fromAnswer.max),
        `p95 <= ${settings.latencyTargetMs} ms ${summary.latency.target.ok ? 'ok' : 'above'}`
      ],
      [
        'from the request sent (upper bound)',
        ms(latency.fromSent.p50),
        ms(latency.fromSent.p95),
        ms(latency.fromSent.p99),
        ms(latency.fromSent.max),
        ''
      ],
      [
        '  create request itself',
        ms(latency.createMs.p50),
        ms(latency.createMs.p95),
        ms(latency.createMs.p99),
        ms(latency.createMs.max),
        ''
      ],
      [
        '  201 -> fan-out transaction start',
        ms(latency.stages.answerToFanOut.p50),
        ms(latency.stages.answerToFanOut.p95),
        ms(latency.stages.answerToFanOut.p99),
        ms(latency.stages.answerToFanOut.max),
        ''
      ],
      [
        '  fan-out start -> attempt start',
        ms(latency.stages.fanOutToAttempt.p50),
        ms(latency.stages.fanOutToAttempt.p95),
        ms(latency.stages.fanOutToAttempt.p99),
        ms(latency.stages.fanOutToAttempt.max),
        ''
      ],
      [
        '  attempt start -> arrival',
        ms(latency.stages.attemptToArrival.p50),
        ms(latency.stages.attemptToArrival.p95),
        ms(latency.stages.attemptToArrival.p99),
        ms(latency.stages.attemptToArrival.max),
        ''
      ]
    ]
    const tpRows = [
      [
        'deliveries',
        'per s',
        'per lane /s',
        'baseline /s',
        'ratio',
        'target',
        'load to last /s',
        'sender CPU/dl',
        'pg CPU/dl',
        'receiver CPU/dl',
        'exactly once'
      ],
      [
        `1 subscription, ${settings.rows} rows`,
        fmt(service1.ratePerSec),
        fmt(service1.laneRatePerSec),
        fmt(baseFig.ratePerSec),
        fmt(ratio, 2),
        `>= ${settings.rateTarget}/s ${summary.throughput.target.ok ? 'ok' : 'below'}`,
        fmt(service1.endToEndPerSec),
        `${fmt(service1.senderCpuUsPerDelivery)} µs`,
        `${fmt(service1.pgCpuUsPerDelivery)} µs`,
        `${fmt(service1.receiverCpuUsPerDelivery)} µs`,
        once(service1)
      ],
      ...service4.map(({ k, fig }) => [
        `${k} subscriptions, ${k} x ${settings.rows}`,
        fmt(fig.ratePerSec),
        fmt(fig.laneRatePerSec),
        '',
        '',
        '',
        fmt(fig.endToEndPerSec),
        `${fmt(fig.senderCpuUsPerDelivery)} µs`,
        `${fmt(fig.pgCpuUsPerDelivery)} µs`,
        `${fmt(fig.receiverCpuUsPerDelivery)} µs`,
        once(fig)
      ]),
      [
        `baseline: bare signed POSTs, 1 at a time`,
        fmt(baseFig.ratePerSec),
        fmt(baseFig.laneRatePerSec),
        '',
        '',
        '',
        fmt(baseFig.endToEndPerSec),
        `${fmt(baseFig.senderCpuUsPerDelivery)} µs`,
        '-',
        `${fmt(baseFig.receiverCpuUsPerDelivery)} µs`,
        once(baseFig)
      ]
    ]
    process.stdout.write(
      `\n${environment.cpus} CPU(s), node ${environment.node}, PostgreSQL ${pgVersion} (${environment.database})\n\n` +
        `latency: ${latency.delivered} of ${latency.creates} creates at ${settings.rate}/s delivered (${latency.missing} missing, ${latency.duplicates} duplicates), body ${latency.bodyBytes} B\n\n` +
        table(latencyRows) +
        `\n\nthroughput: median of ${settings.repeats} run(s) each\n\n` +
        table(tpRows) +
        '\n\nper s: deliveries ÷ time from the first arrival to the last; load to last: from the start of the bulk call (or of the loop) to the last arrival.\n' +
        "ratio: 1-subscription deliveries/s ÷ baseline POSTs/s. CPU/dl: CPU per delivery of the sending process (the service's includes loading the rows), " +
        'of the PostgreSQL backends of the bench database and of the receiver.\n' +
        'The stages under the latency come from webhook_deliveries.created_at (now() of the fan-out transaction) and webhook_attempts.at (ms).\n'
    )
    const file = join(
      resultsDir,
      `webhooks-${startedAt.toISOString().replace(/[:.]/g, '-')}${opt.quick ? '-quick' : ''}.json`
    )
    writeFileSync(
      file,
      JSON.stringify(
        {
          startedAt,
          finishedAt: new Date(),
          settings: { ...settings, quick: opt.quick, serviceRoot: opt['service-root'] ?? null },
          environment,
          summary,
          runs
        },
        null,
        2
      ) + '\n'
    )
    process.stdout.write(`results: ${file}\n`)
  } finally {
    await client?.end().catch(() => undefined)
    for (const c of children.reverse()) await c.stop().catch(() => undefined)
    await db.close({ keep: opt['keep-db'], log })
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`webhooks benchmark failed: ${err?.stack ?? err}\n`)
    process.exit(1)
  }
)
