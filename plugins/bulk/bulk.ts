import type { HookContext, NextFunction } from '@feathersjs/feathers'
import type { App } from '../../core/declarations.ts'
import { BulkService } from './bulk.class.ts'
import { bulkMethods, bulkPath } from './bulk.shared.ts'
import type { Plugin } from '../../core/plugin.ts'
import { bulkMigrations } from './migrations/index.ts'
import { bulkPathPattern } from './bulk.shared.ts'
import { describeBulk } from './bulk.openapi.ts'

declare module '../../core/declarations.ts' {
  interface ServiceTypes {
    [bulkPath]: BulkService
  }
}

/** The outcome stream is NDJSON, never cached; 200 once the call is accepted (each row then has its own status). */
const streamHeaders = async (context: HookContext, next: NextFunction) => {
  await next()
  context.http = {
    status: 200,
    headers: {
      'Content-Type': 'application/x-ndjson; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff'
    }
  }
}

/** Bulk loading of a module's records from NDJSON. */
export function bulk(app: App) {
  const { db, tenants, limiter, config, limitsFor, metrics, shutdown } = app.get('platform')
  app.use(
    bulkPath,
    new BulkService({
      pool: db.pool,
      tenants,
      limiter,
      concurrencyFor: (tenantId) => limitsFor(tenantId).bulkConcurrency,
      maxRows: config.bulk.maxRows,
      maxLineBytes: config.http.maxJsonBytes,
      batchSize: config.bulk.batchSize,
      flushAfterMs: config.bulk.flushAfterMs,
      retentionHours: config.idempotency.retentionHours,
      inFlightTimeoutSeconds: config.idempotency.inFlightTimeoutSeconds,
      metrics,
      shutdown: shutdown.signal
    }),
    { methods: [...bulkMethods] }
  )
  app.service(bulkPath).hooks({ around: { create: [streamHeaders] } })
}

/** Bulk loads read their NDJSON bodies themselves, as a stream. */
export const bulkPlugin: Plugin = {
  name: 'bulk',
  dependsOn: ['records', 'idempotency'],
  migrations: bulkMigrations,
  configure: bulk,
  bodies: [{ paths: bulkPathPattern, stream: true }],
  describe: describeBulk
}
