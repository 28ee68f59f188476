import type { HookContext, NextFunction } from '@feathersjs/feathers'
import type { App, Platform } from '../../core/declarations.ts'
import { logger } from '../../core/logger.ts'
import { LocalStorage } from '../../core/storage/local.ts'
import { idempotencyFor } from '../idempotency/idempotency.shared.ts'
import { AttachmentsService } from './attachments.class.ts'
import { deleteAttachment, stalePending } from './attachments.repository.ts'
import { attachmentsMethods, attachmentsPath } from './attachments.shared.ts'
import { localStorageRoutes } from './attachments.storage-routes.ts'
import type { Plugin } from '../../core/plugin.ts'
import { describeAttachments } from './attachments.openapi.ts'
import { attachmentsGraphQL } from './attachments.graphql.ts'
import { systemScope, tenantPool } from '../../core/db/tenant-scope.ts'

declare module '../../core/declarations.ts' {
  interface ServiceTypes {
    [attachmentsPath]: AttachmentsService
  }
}

/** Status and headers of an attachments write: create answers 201, and its signed upload URL is never cached. */
export function attachmentResponse(method: string): { status: number; headers: Record<string, string> } {
  return method === 'create' ? { status: 201, headers: { 'Cache-Control': 'no-store' } } : { status: 200, headers: {} }
}

const setResponse = async (context: HookContext, next: NextFunction) => {
  await next()
  const { status, headers } = attachmentResponse(context.method)
  context.http = { ...context.http, status, headers: { ...context.http?.headers, ...headers } }
}

/** Attachments of records through signed URLs; with the local driver, the service also serves the signed storage URLs. */
export function attachments(app: App) {
  const { db, tenants, storage, limiter, config, limitsFor } = app.get('platform')
  const a = config.attachments
  app.use(
    attachmentsPath,
    new AttachmentsService({
      pool: db.pool,
      tenants,
      storage,
      limiter,
      urlsPerMinute: (tenantId) => limitsFor(tenantId).attachmentUrlsPerMinute,
      maxBytes: a.maxBytes,
      contentTypes: a.contentTypes,
      uploadUrlSeconds: a.uploadUrlSeconds,
      downloadUrlSeconds: a.downloadUrlSeconds
    }),
    { methods: [...attachmentsMethods] }
  )
  const idempotent = idempotencyFor(app, attachmentResponse)
  // Both POSTs change state; idempotency outermost, so a replay runs nothing inside it.
  app
    .service(attachmentsPath)
    .hooks({ around: Object.fromEntries(['create', 'complete'].map((m) => [m, [idempotent, setResponse]])) })
  if (storage instanceof LocalStorage) app.use(localStorageRoutes(storage, db.pool))
}

/** The attachments.purge job: pending uploads older than `attachments.pendingHours` go, with any bytes stored for them. */
export async function purgePendingAttachments(platform: Platform): Promise<number> {
  const stale = await systemScope('attachments.purge', () =>
    stalePending(platform.db.pool, platform.config.attachments.pendingHours)
  )
  for (const a of stale) {
    await platform.storage
      .delete(a.storage_key)
      .catch((err) => logger.warn('could not delete a stale upload', { key: a.storage_key, error: err.message }))
    await deleteAttachment(tenantPool(platform.db.pool, a.tenant_id), a.tenant_id, a.id)
  }
  return stale.length
}

/** Attachments: `POST /api/v1/attachments/{id}:complete`, and the hourly purge of uploads never completed. */
export const attachmentsPlugin: Plugin = {
  name: 'attachments',
  dependsOn: ['records', 'idempotency'],
  configure: attachments,
  colonMethods: [attachmentsPath],
  jobs: (app) => [
    {
      name: 'attachments.purge',
      every: '1 hour',
      run: async () => ({ removed: await purgePendingAttachments(app.get('platform')) })
    }
  ],
  describe: describeAttachments,
  graphql: attachmentsGraphQL
}
