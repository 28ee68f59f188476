import type { HookContext, NextFunction } from '@feathersjs/feathers'
import type { App } from '../../core/declarations.ts'
import { entityTag } from '../../core/http/entity-tag.ts'
import { idempotencyFor } from '../idempotency/idempotency.shared.ts'
import { RecordsService } from './records.class.ts'
import { WordFrequencies } from './records.search.ts'
import type { RecordOut } from './records.schema.ts'
import { recordsMethods, recordsPath, recordsWriteMethods } from './records.shared.ts'
import type { Plugin } from '../../core/plugin.ts'
import { recordsMigrations } from './migrations/index.ts'
import { describeRecords } from './records.openapi.ts'
import { recordsGraphQL } from './records.graphql.ts'
import { migrationJob } from './records.migrate.ts'
import { dateJobs } from './records.due.ts'
import { migrationCli } from './records.migrate-cli.ts'
import { declaredIndexes, indexesCli, IndexBuilder, installedModules } from './records.indexes.ts'

declare module '../../core/declarations.ts' {
  interface ServiceTypes {
    [recordsPath]: RecordsService
  }
}

/** Status and headers of a records response: ETag carries the version for If-Match; create answers 201 with Location. */
export function recordResponse(method: string, result: RecordOut): { status: number; headers: Record<string, string> } {
  const headers: Record<string, string> = {}
  if (result && typeof result.version === 'number') headers.ETag = entityTag(result.version)
  if (method === 'create' && result?.id) headers.Location = `/${recordsPath}/${result.id}`
  return { status: method === 'create' ? 201 : 200, headers }
}

const setResponse = async (context: HookContext, next: NextFunction) => {
  await next()
  if (context.method === 'find' || context.http?.headers?.['Idempotent-Replayed']) return
  const { status, headers } = recordResponse(context.method, context.result)
  context.http = { ...context.http, status, headers: { ...context.http?.headers, ...headers } }
}

/** Records of every installed module: one service behind REST, bulk and GraphQL. */
export function records(app: App) {
  const { db, tenants, cursors, config } = app.get('platform')
  app.use(
    recordsPath,
    new RecordsService({
      pool: db.pool,
      tenants,
      cursors,
      defaultLimit: config.pagination.defaultLimit,
      maxLimit: config.pagination.maxLimit,
      words: new WordFrequencies()
    }),
    { methods: [...recordsMethods] }
  )
  const write = [idempotencyFor(app, recordResponse), setResponse]
  app.service(recordsPath).hooks({
    around: Object.fromEntries([...recordsWriteMethods.map((m) => [m, write]), ['get', [setResponse]]])
  })
}

/** Records: a colon method per item (`POST /api/v1/records/{id}:transition`). */
export const recordsPlugin: Plugin = {
  name: 'records',
  dependsOn: ['idempotency'],
  migrations: recordsMigrations,
  configure: records,
  colonMethods: [recordsPath],
  describe: describeRecords,
  graphql: recordsGraphQL,
  jobs: (app) => [migrationJob(app.get('platform')), ...dateJobs(app.get('platform'))],
  background: (app) => {
    const { db, tenants } = app.get('platform')
    const { words } = app.service(recordsPath)
    return new IndexBuilder(db.url, () => declaredIndexes(installedModules(tenants)), words)
  },
  cli: [...migrationCli, ...indexesCli]
}
