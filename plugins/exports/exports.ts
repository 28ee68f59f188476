import type { HookContext, NextFunction } from '@feathersjs/feathers'
import type { App, Platform } from '../../core/declarations.ts'
import type { JobDefinition } from '../../core/jobs/index.ts'
import { observeExport } from '../../core/telemetry/metrics.ts'
import { idempotencyFor } from '../idempotency/idempotency.shared.ts'
import { ExportsService } from './exports.class.ts'
import { purgeExpiredExports, renderExport } from './exports.job.ts'
import { exportsMethods, exportsPath } from './exports.shared.ts'
import type { Plugin } from '../../core/plugin.ts'
import { exportsMigrations } from './migrations/index.ts'
import { describeExports } from './exports.openapi.ts'
import { exportsGraphQL } from './exports.graphql.ts'

declare module '../../core/declarations.ts' {
  interface ServiceTypes {
    [exportsPath]: ExportsService
  }
}

/** Status and headers of a started export: 202, Location the job to follow. */
export function exportResponse(
  _method: string,
  result: { id?: string }
): { status: number; headers: Record<string, string> } {
  return { status: 202, headers: result?.id ? { Location: `/${exportsPath}/${result.id}` } : {} }
}

const accepted = async (context: HookContext, next: NextFunction) => {
  await next()
  const { status, headers } = exportResponse(context.method, context.result)
  context.http = { ...context.http, status, headers: { ...context.http?.headers, ...headers } }
}

/** Export jobs of a module's records to CSV, XLSX or PDF. */
export function configureExports(app: App) {
  const platform = app.get('platform')
  app.use(exportsPath, new ExportsService(app, platform), { methods: [...exportsMethods] })
  const idempotent = idempotencyFor(app, exportResponse)
  // Idempotency outermost: a replay answers with the stored status and headers and runs nothing inside it.
  app.service(exportsPath).hooks({ around: { create: [idempotent, accepted] } })
}

/** The jobs behind exports, for the scheduler. */
export function exportJobs(app: App, platform: Platform): JobDefinition[] {
  return [
    {
      name: 'exports.render',
      lockLifetimeMs: platform.config.exports.lockSeconds * 1000,
      concurrency: 20,
      run: (data, job) => observeExport(platform.metrics, () => renderExport(app, platform, data, job))
    },
    { name: 'exports.purge', every: '1 hour', run: async () => ({ expired: await purgeExpiredExports(platform) }) }
  ]
}

/** Exports, with their render and purge jobs. */
export const exportsPlugin: Plugin = {
  name: 'exports',
  dependsOn: ['records', 'idempotency', 'attachments'],
  migrations: exportsMigrations,
  configure: configureExports,
  jobs: (app) => exportJobs(app, app.get('platform')),
  describe: describeExports,
  graphql: exportsGraphQL
}
