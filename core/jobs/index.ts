import { Agenda } from 'agenda'
import { PostgresBackend } from '@agendajs/postgres-backend'
import type pg from 'pg'
import { logger } from '../logger.ts'

export interface JobDefinition {
  /** `<area>.<action>`; data holds ids only, and the job is safe to run twice. */
  name: string
  every?: string
  run(data: Record<string, unknown>): Promise<unknown>
}

/** Agenda on PostgreSQL, sharing the app's pool. */
export async function startJobs(pool: pg.Pool, jobs: JobDefinition[]): Promise<Agenda> {
  const agenda = new Agenda({ backend: new PostgresBackend({ pool, tableName: 'agenda_jobs' }), processEvery: '30 seconds' } as any)
  agenda.on('error', (err) => logger.error('job scheduler error', { error: err.message }))
  agenda.on('fail', (err: any, job: any) => logger.error('job failed', { job: job?.attrs?.name, error: err?.message ?? String(err) }))
  for (const job of jobs) {
    agenda.define(job.name, async (j: any) => {
      const result = await job.run(j.attrs.data ?? {})
      logger.debug('job done', { job: job.name, result })
    })
  }
  await agenda.start()
  for (const job of jobs) if (job.every) await agenda.every(job.every, job.name, {})
  return agenda
}
