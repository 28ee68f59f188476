import type { HookContext, NextFunction } from '@feathersjs/feathers'
import type { App, Platform } from '../../core/declarations.ts'
import type { JobDefinition } from '../../core/jobs/index.ts'
import { ExportsService } from './exports.class.ts'
import { purgeExpiredExports, renderExport } from './exports.job.ts'
import { exportsMethods, exportsPath } from './exports.shared.ts'

const accepted = async (context: HookContext, next: NextFunction) => {
  await next()
  if (context.method === 'create') context.http = { ...context.http, status: 202, headers: { ...context.http?.headers, Location: `/${exportsPath}/${context.result.id}` } }
}

/** Export jobs of a module's records to CSV, XLSX or PDF. */
export function exportsPlugin(app: App) {
  app.use(exportsPath, new ExportsService(app, app.get('platform')), { methods: [...exportsMethods] })
  app.service(exportsPath).hooks({ around: { create: [accepted] } })
}

/** The jobs behind exports, for the scheduler. */
export function exportJobs(app: App, platform: Platform): JobDefinition[] {
  return [
    { name: 'exports.render', lockLifetimeMs: platform.config.exports.lockSeconds * 1000, concurrency: 20, run: (data, job) => renderExport(app, platform, data, job) },
    { name: 'exports.purge', every: '1 hour', run: async () => ({ expired: await purgeExpiredExports(platform) }) }
  ]
}
