import { hostname } from 'node:os'
import { randomUUID } from 'node:crypto'
import type { Agenda, Job, JobStateNotification, JobWithId } from 'agenda'
import type pg from 'pg'
import { inTenant, systemScope } from '../db/tenant-scope.ts'
import { logger, type Level } from '../logger.ts'
import { tracedJob } from './trace.ts'

/**
 * What a running job is given.
 *
 * Shutdown contract: when the instance starts draining, `signal` is aborted. A job then stops at its
 * next safe point (after its last committed checkpoint) and returns or throws `handBack()`. The job is
 * then made runnable at once by another instance (or by this service's next start): its lock is
 * released and it is due now, no attempt is counted (it is not a failure), and this instance, which
 * stopped taking jobs before the signal fired, does not take it again. A job that ignores the signal
 * runs on until the shutdown deadline, after which its lock is released as the process exits.
 */
export interface JobContext {
  /** Keeps the job's lock alive during long work (a lock left to expire lets another instance take the job over). */
  touch(): Promise<void>
  /** Aborted when this instance starts draining: stop at the next checkpoint and `return handBack()`. */
  signal: AbortSignal
}

/** The marker a job returns (or throws) to give itself back to the queue; see JobContext. */
export class HandBack {
  constructor(readonly reason: string) {}
}

/** A job's way to give itself back, unfinished and not failed: `if (context.signal.aborted) return handBack()`. */
export function handBack(reason = 'instance draining'): HandBack {
  return new HandBack(reason)
}

export interface JobDefinition {
  /** `<area>.<action>`; data holds ids only, and the job is safe to run twice. A `tenantId` in data is the scope it runs in (else: every tenant's). */
  name: string
  every?: string
  /** How long a running job stays locked without a touch; after it, the job is run again (crash recovery). */
  lockLifetimeMs?: number
  /** Jobs of this name run at once per instance. */
  concurrency?: number
  run(data: Record<string, unknown>, context: JobContext): Promise<unknown>
}

/** Agenda's default NOTIFY channel, named here because a hand-back announces itself on it. */
const jobChannel = 'agenda:jobs'

interface JobsState {
  pool: pg.Pool
  names: string[]
  processing: boolean
  draining: AbortController
  /** Jobs this instance is running, by id: entered in the handler, left on Agenda's `complete` (after its state is saved). */
  running: Map<string, string>
  /** Handed-back jobs between the handler's return and Agenda's save, with the fail count Agenda's success path resets. */
  handedBack: Map<string, number | undefined>
  idle: Set<() => void>
  handedBackCount: number
}
const states = new WeakMap<Agenda, JobsState>()

/**
 * Agenda on PostgreSQL, sharing the app's pool; new jobs reach every instance at once
 * through the backend's LISTEN/NOTIFY. With `process: false` the instance only enqueues.
 * Stop it with stopJobs (hands running jobs back), not agenda.stop() or drain().
 */
export async function startJobs(
  pool: pg.Pool,
  jobs: JobDefinition[],
  options: { process: boolean; processEverySeconds?: number; logLevel?: Level } = { process: true }
): Promise<Agenda> {
  // Loaded on first use: an instance (or a CLI call) that never schedules a job never pays for them.
  const [{ Agenda }, { PostgresBackend }] = await Promise.all([import('agenda'), import('@agendajs/postgres-backend')])
  // New jobs arrive by NOTIFY; the periodic scan is what finds jobs whose lock expired (a dead instance's).
  const backend = new PostgresBackend({ pool, tableName: 'agenda_jobs', channelName: jobChannel })
  // The LISTEN connection reconnects by itself; unheard, its 'error' event would end the process.
  backend.notificationChannel?.on('error', (err: Error) =>
    logger.warn('job notification channel error; reconnecting', { error: err.message })
  )
  // A name of its own: Agenda writes it on every row it locks, so shutdown can find (and release) exactly its own locks.
  const name = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
  // The backend creates its table and replaces its trigger as it connects: instances starting together raced
  // (a duplicate type on a new database, then "tuple concurrently updated"), so they connect one at a time.
  const unlock = await lockAgendaSchema(pool)
  const agenda = new Agenda({ backend, name, processEvery: `${options.processEverySeconds ?? 30} seconds` })
  await agenda.ready.finally(unlock)
  const state: JobsState = {
    pool,
    names: jobs.map((j) => j.name),
    processing: options.process,
    draining: new AbortController(),
    running: new Map(),
    handedBack: new Map(),
    idle: new Set(),
    handedBackCount: 0
  }
  states.set(agenda, state)
  agenda.on('error', (err) => logger.error('job scheduler error', { error: err.message }))
  // Agenda's success path zeroes failCount before it saves; a hand-back is no success, so it keeps its count.
  // (Events relayed from other instances carry a notification, not a job: they are not ours.)
  agenda.on('success', (job: JobWithId | JobStateNotification) => {
    if (!('attrs' in job)) return
    const id = String(job.attrs._id)
    if (state.handedBack.has(id)) job.attrs.failCount = state.handedBack.get(id)
  })
  agenda.on('complete', (job: JobWithId | JobStateNotification) => {
    if (!('attrs' in job)) return
    const id = String(job.attrs._id)
    state.handedBack.delete(id)
    if (state.running.delete(id) && !state.running.size) for (const wake of state.idle) wake()
  })
  for (const job of jobs.map(tracedJob)) {
    agenda.define(
      job.name,
      async (j: Job<Record<string, unknown>>) => {
        const id = String(j.attrs._id)
        state.running.set(id, job.name)
        // One log line per run (config log.jobs; a failure is an error line).
        const started = performance.now()
        const logRun = (outcome: 'done' | 'handed back' | 'failed', fields: Record<string, unknown>) =>
          logger.log(outcome === 'failed' ? 'error' : (options.logLevel ?? 'info'), 'job', {
            job: job.name,
            id,
            outcome,
            ms: Math.round(performance.now() - started),
            failCount: j.attrs.failCount || undefined,
            ...fields
          })
        let result: unknown
        const data: Record<string, unknown> = j.attrs.data ?? {}
        const run = () => job.run(data, { touch: () => j.touch(), signal: state.draining.signal })
        try {
          // A job for one tenant sees that tenant's rows only; one without a tenant is a sweep across tenants, a named system action.
          result = await (typeof data.tenantId === 'string'
            ? inTenant(data.tenantId, run)
            : systemScope(`job ${job.name}`, run))
        } catch (err) {
          if (!(err instanceof HandBack)) {
            logRun('failed', { error: (err as Error)?.stack ?? String(err) })
            throw err
          }
          result = err
        }
        if (result instanceof HandBack) {
          // Due now and (once Agenda saves it, unlocked) free for any instance; this one has stopped taking jobs.
          j.attrs.nextRunAt = new Date()
          state.handedBack.set(id, j.attrs.failCount)
          state.handedBackCount++
          logRun('handed back', { reason: result.reason })
          return
        }
        logRun('done', { result })
      },
      {
        ...(job.lockLifetimeMs ? { lockLifetime: job.lockLifetimeMs } : {}),
        ...(job.concurrency ? { concurrency: job.concurrency, lockLimit: job.concurrency } : {})
      }
    )
  }
  if (options.process) {
    await agenda.start()
    for (const job of jobs) if (job.every) await agenda.every(job.every, job.name, {})
  } else {
    await agenda.ready
  }
  return agenda
}

/** Held while a scheduler connects (and its backend ensures its schema); returns the release. */
async function lockAgendaSchema(pool: pg.Pool): Promise<() => Promise<void>> {
  const client = await pool.connect()
  try {
    await client.query('SELECT pg_advisory_lock(7303)')
  } catch (err) {
    client.release()
    throw err
  }
  return async () => {
    await client.query('SELECT pg_advisory_unlock(7303)').catch(() => undefined)
    client.release()
  }
}

/** True while `agenda` processes jobs (started with `process: true` and not stopped): readiness reads it. */
export function jobsRunning(agenda: Agenda): boolean {
  const state = states.get(agenda)
  return !!state?.processing && !state.draining.signal.aborted
}

/**
 * Drains this instance's jobs: it takes no more (Agenda's stop(), which also unlocks jobs it had locked
 * but not started), aborts every running job's signal, and waits up to `timeoutMs` for them to finish or
 * hand back. Whatever still runs then is released: unlocked and due now, for another instance to resume
 * from its checkpoint; the caller is expected to exit right after (the pool must still be open here).
 * Other instances hear of the released jobs by NOTIFY instead of at their next scan.
 */
export async function stopJobs(
  agenda: Agenda,
  options: { timeoutMs: number }
): Promise<{ handedBack: number; released: string[] }> {
  const state = states.get(agenda)
  if (!state?.processing) return { handedBack: 0, released: [] }
  state.processing = false
  // stop() marks the processor stopped synchronously, before the abort below: nothing handed back is taken again here.
  const stopped = agenda.stop(false)
  state.draining.abort()
  await stopped
  if (state.running.size) {
    let wake!: () => void
    const idle = new Promise<void>((resolve) => (wake = resolve))
    state.idle.add(wake)
    const timer = setTimeout(wake, options.timeoutMs)
    await idle
    clearTimeout(timer)
    state.idle.delete(wake)
  }
  const released = [...state.running.values()]
  const name = agenda.attrs.name as string
  // Rows still locked under this instance's name: jobs that outran the deadline (due now, to resume elsewhere),
  // and any a scan locked while stop() ran (Agenda unlocks only those it had queued when it stopped).
  await state.pool.query(
    `UPDATE agenda_jobs SET locked_at = NULL, next_run_at = CASE WHEN id = ANY($2::uuid[]) THEN now() ELSE next_run_at END
      WHERE last_modified_by = $1 AND locked_at IS NOT NULL`,
    [name, [...state.running.keys()]]
  )
  for (const jobName of state.names) {
    const payload = JSON.stringify({
      jobName,
      nextRunAt: new Date().toISOString(),
      priority: 0,
      timestamp: new Date().toISOString(),
      source: name
    })
    await state.pool.query('SELECT pg_notify($1, $2)', [jobChannel, payload])
  }
  return { handedBack: state.handedBackCount, released }
}
