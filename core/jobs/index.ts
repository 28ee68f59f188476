import type { Agenda } from 'agenda'
import type pg from 'pg'
import { logger } from '../logger.ts'
import { tracedJob } from './trace.ts'

export interface JobContext {
  /** Keeps the job's lock alive during long work (a lock left to expire lets another instance take the job over). */
  touch(): Promise<void>
}

export interface JobDefinition {
  /** `<area>.<action>`; data holds ids only, and the job is safe to run twice. */
  name: string
  every?: string
  /** How long a running job stays locked without a touch; after it, the job is run again (crash recovery). */
  lockLifetimeMs?: number
  /** Jobs of this name run at once per instance. */
  concurrency?: number
  run(data: Record<string, unknown>, context: JobContext): Promise<unknown>
}

/**
 * Agenda on PostgreSQL, sharing the app's pool; new jobs reach every instance at once
 * through the backend's LISTEN/NOTIFY. With `process: false` the instance only enqueues.
 */
export async function startJobs(pool: pg.Pool, jobs: JobDefinition[], options: { process: boolean; processEverySeconds?: number } = { process: true }): Promise<Agenda> {
  // Loaded on first use: an instance (or a CLI call) that never schedules a job never pays for them.
  const [{ Agenda }, { PostgresBackend }] = await Promise.all([import('agenda'), import('@agendajs/postgres-backend')])
  // New jobs arrive by NOTIFY; the periodic scan is what finds jobs whose lock expired (a dead instance's).
  const backend = new PostgresBackend({ pool, tableName: 'agenda_jobs' })
  // The LISTEN connection reconnects by itself; unheard, its 'error' event would end the process.
  backend.notificationChannel?.on('error', (err: Error) => logger.warn('job notification channel error; reconnecting', { error: err.message }))
  const agenda = new Agenda({ backend, processEvery: `${options.processEverySeconds ?? 30} seconds` } as any)
  agenda.on('error', (err) => logger.error('job scheduler error', { error: err.message }))
  agenda.on('fail', (err: any, job: any) => logger.error('job failed', { job: job?.attrs?.name, error: err?.message ?? String(err) }))
  for (const job of jobs.map(tracedJob)) {
    agenda.define(
      job.name,
      async (j: any) => {
        const result = await job.run(j.attrs.data ?? {}, { touch: () => j.touch() })
        logger.debug('job done', { job: job.name, result })
      },
      { ...(job.lockLifetimeMs ? { lockLifetime: job.lockLifetimeMs } : {}), ...(job.concurrency ? { concurrency: job.concurrency, lockLimit: job.concurrency } : {}) }
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
