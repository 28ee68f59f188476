import type pg from 'pg'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { logger } from '../logger.ts'

/**
 * The service's Prometheus instruments, one set (and one Registry) per platform: tests run
 * many servers in one process, and each scrape shows its own server's counts. Served on a
 * listener of its own (core/telemetry/metrics-server.ts, config `metrics`), never on the API port.
 *
 * Who counts what (names are `records_*`; README "Metrics" lists them for operators):
 * - HTTP (core/telemetry/http-metrics.ts): `httpRequests`, `httpDuration` by method, route
 *   template (core/http/route-template.ts) and status; `rateLimitRefusals` by problem code
 *   (every 429 of the API, and the sign-in throttle's `sign_in.throttled`).
 * - Bulk (plugins/bulk): `bulkRows.inc({ outcome })`, outcome one of bulkOutcomes.
 * - Exports (plugins/exports): `exportRows.inc(n)`, `exportDuration.observe({ outcome }, seconds)`,
 *   outcome `succeeded` or `failed`; observeExport() does both from the render job's result.
 * - Webhooks (plugins/webhooks): `webhookDeliveries.inc({ outcome })` (succeeded, retrying,
 *   failed, skipped), `webhookLag.observe(seconds)` from the event to its first attempt,
 *   `webhookDuration.observe(seconds)` of each request to a receiver.
 * - At scrape time: the job queue (`agenda_jobs`, one query with a statement timeout) and
 *   the database pool; prom-client's default process metrics are added by the listener.
 */
export interface Metrics {
  registry: Registry
  httpRequests: Counter<'method' | 'route' | 'status'>
  httpDuration: Histogram<'method' | 'route' | 'status'>
  rateLimitRefusals: Counter<'code'>
  bulkRows: Counter<'outcome'>
  exportRows: Counter<string>
  exportDuration: Histogram<'outcome'>
  webhookDeliveries: Counter<'outcome'>
  webhookLag: Histogram<string>
  webhookDuration: Histogram<string>
  /** The jobs this service defines (set when the server starts): each has its queue series, 0 when idle. */
  jobNames: string[]
}

/** The outcomes bulk rows are counted by: a row's status, or `error` (a final refusal), or `not_attempted` (past the row limit, the budget, or in a failed batch). */
export const bulkOutcomes = ['created', 'updated', 'unchanged', 'valid', 'error', 'not_attempted'] as const

/** Seconds; requests and deliveries from a millisecond to a minute. */
const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
/** Seconds; an export or a webhook's lag, from a tenth of a second to an hour. */
const longBuckets = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600]

/** How long the scrape-time job-queue query may run before PostgreSQL cancels it (the scrape then shows no queue series). */
export const queueQueryTimeoutMs = 2000

/** The instruments of one platform, with the job queue and `pool` read at each scrape. */
export function createMetrics(pool: pg.Pool): Metrics {
  const registry = new Registry()
  const registers = [registry]
  const queue = memo(() => readQueue(pool), 1000)
  const perJob = (gauge: Gauge<'job'>, value: (j: QueueRow) => number) => async () => {
    const rows = await queue()
    gauge.reset()
    for (const name of metrics.jobNames) gauge.set({ job: name }, 0)
    for (const j of rows) gauge.set({ job: j.name }, value(j))
  }
  // Read before the queue query takes a connection of its own.
  const poolGauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect(this: Gauge) {
        this.set(read())
      }
    })
  poolGauge(
    'records_db_pool_connections',
    'Connections the database pool holds (in use and idle).',
    () => pool.totalCount
  )
  poolGauge('records_db_pool_idle', 'Idle connections of the database pool.', () => pool.idleCount)
  poolGauge(
    'records_db_pool_waiting',
    'Queries waiting for a connection of the database pool.',
    () => pool.waitingCount
  )
  poolGauge(
    'records_db_pool_max',
    'Connections the database pool may open (database.poolSize).',
    () => pool.options.max ?? 10
  )
  new Gauge({
    name: 'records_jobs_queued',
    help: 'Jobs due and waiting for a worker, by job name (the whole database: every instance reports the same).',
    labelNames: ['job'],
    registers,
    collect: async function (this: Gauge<'job'>) {
      await perJob(this, (j) => j.queued)()
    }
  })
  new Gauge({
    name: 'records_jobs_locked',
    help: 'Jobs locked by a worker (running, or about to run), by job name.',
    labelNames: ['job'],
    registers,
    collect: async function (this: Gauge<'job'>) {
      await perJob(this, (j) => j.locked)()
    }
  })
  new Gauge({
    name: 'records_jobs_oldest_queued_age_seconds',
    help: 'How long the oldest due job has waited for a worker, by job name (0 when none waits).',
    labelNames: ['job'],
    registers,
    collect: async function (this: Gauge<'job'>) {
      await perJob(this, (j) => j.oldestSeconds)()
    }
  })
  const metrics: Metrics = {
    registry,
    jobNames: [],
    httpRequests: new Counter({
      name: 'records_http_requests_total',
      help: 'HTTP requests answered, by method, route template and status.',
      labelNames: ['method', 'route', 'status'],
      registers
    }),
    httpDuration: new Histogram({
      name: 'records_http_request_duration_seconds',
      help: 'Time from a request to the end of its response, by method, route template and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: latencyBuckets,
      registers
    }),
    rateLimitRefusals: new Counter({
      name: 'records_rate_limit_refusals_total',
      help: 'Requests refused with 429 by a rate or concurrency limit, by problem code (sign_in.throttled: the sign-in throttle).',
      labelNames: ['code'],
      registers
    }),
    bulkRows: new Counter({
      name: 'records_bulk_rows_total',
      help: `Bulk rows by outcome (${bulkOutcomes.join(', ')}).`,
      labelNames: ['outcome'],
      registers
    }),
    exportRows: new Counter({
      name: 'records_export_rows_total',
      help: 'Rows written by export runs that finished.',
      registers
    }),
    exportDuration: new Histogram({
      name: 'records_export_duration_seconds',
      help: 'Time an export run took, by outcome (succeeded, failed).',
      labelNames: ['outcome'],
      buckets: longBuckets,
      registers
    }),
    webhookDeliveries: new Counter({
      name: 'records_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome (succeeded, retrying, failed, skipped).',
      labelNames: ['outcome'],
      registers
    }),
    webhookLag: new Histogram({
      name: 'records_webhook_delivery_lag_seconds',
      help: "Time from an event to its delivery's first attempt.",
      buckets: longBuckets,
      registers
    }),
    webhookDuration: new Histogram({
      name: 'records_webhook_delivery_duration_seconds',
      help: 'Time a receiver took to answer a delivery.',
      buckets: latencyBuckets,
      registers
    })
  }
  return metrics
}

/**
 * Counts one run of the export job from what it returned: `{ rows }` a file written,
 * `{ failed }` a failure; a run that only waited for a slot or found nothing to do is not counted.
 */
export async function observeExport<T>(metrics: Metrics, run: () => Promise<T>): Promise<T> {
  const started = performance.now()
  const result = await run()
  const r = (result ?? {}) as { rows?: unknown; failed?: unknown }
  const seconds = (performance.now() - started) / 1000
  if (typeof r.rows === 'number') {
    metrics.exportRows.inc(r.rows)
    metrics.exportDuration.observe({ outcome: 'succeeded' }, seconds)
  } else if (r.failed !== undefined) metrics.exportDuration.observe({ outcome: 'failed' }, seconds)
  return result
}

let processRegistry: Registry | undefined

/** prom-client's process metrics (CPU, memory, event loop, GC), once per process: its observers are never stopped. */
export function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

interface QueueRow {
  name: string
  queued: number
  locked: number
  oldestSeconds: number
}

/** The job queue by job name, in one query PostgreSQL stops after queueQueryTimeoutMs; none when the table is not there yet (no scheduler has started). */
async function readQueue(pool: pg.Pool): Promise<QueueRow[]> {
  // A pool with no connection free must not hold the scrape past Prometheus' timeout: no queue series then.
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<QueueRow[]>((resolve) => (timer = setTimeout(() => resolve([]), queueQueryTimeoutMs * 2)))
  return Promise.race([queryQueue(pool), late]).finally(() => clearTimeout(timer))
}

async function queryQueue(pool: pg.Pool): Promise<QueueRow[]> {
  let client: pg.PoolClient
  try {
    client = await pool.connect()
  } catch (err) {
    logger.warn('metrics: the job queue could not be read', { error: (err as Error).message })
    return []
  }
  try {
    await client.query(`BEGIN; SET LOCAL statement_timeout = ${queueQueryTimeoutMs}`)
    const { rows } = await client.query<QueueRow>(
      `SELECT name,
              count(*) FILTER (WHERE locked_at IS NULL AND next_run_at <= now())::int AS queued,
              count(*) FILTER (WHERE locked_at IS NOT NULL)::int AS locked,
              coalesce(extract(epoch FROM now() - min(next_run_at) FILTER (WHERE locked_at IS NULL AND next_run_at <= now())), 0)::float8 AS "oldestSeconds"
         FROM agenda_jobs
        WHERE disabled = false AND (next_run_at <= now() OR locked_at IS NOT NULL)
        GROUP BY name`
    )
    await client.query('COMMIT')
    return rows
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined)
    if ((err as { code?: string }).code !== '42P01')
      logger.warn('metrics: the job queue could not be read', { error: (err as Error).message })
    return []
  } finally {
    client.release()
  }
}

/** One call in flight (and its answer for `ms`) shared by the gauges a scrape collects at once. */
function memo<T>(fn: () => Promise<T>, ms: number): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined
  return () => {
    if (!last || performance.now() - last.at > ms) last = { at: performance.now(), value: fn() }
    return last.value
  }
}
