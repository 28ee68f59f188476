import type { App } from '../../core/declarations.ts'
import type { Plugin } from '../../core/plugin.ts'
import { recurrenceMigrations } from './migrations/index.ts'
import { SeriesService } from './recurrence.class.ts'
import { recurrenceJob } from './recurrence.job.ts'
import { describeRecurrence } from './recurrence.openapi.ts'
import { seriesMethods, seriesPath } from './recurrence.shared.ts'

declare module '../../core/declarations.ts' {
  interface ServiceTypes {
    [seriesPath]: SeriesService
  }
}

/** Recurring records: a module's `recurrence` makes records on a schedule (job `recurrence.create`); its series are listed, paused, resumed and ended at /api/v1/record-series. */
export const recurrencePlugin: Plugin = {
  name: 'recurrence',
  dependsOn: ['records'],
  migrations: recurrenceMigrations,
  configure: (app: App) => {
    const { db, tenants } = app.get('platform')
    app.use(seriesPath, new SeriesService(db.pool, tenants), { methods: [...seriesMethods] })
  },
  jobs: (app) => [recurrenceJob(app.get('platform'))],
  describe: describeRecurrence
}
