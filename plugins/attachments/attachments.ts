import type { HookContext, NextFunction } from '@feathersjs/feathers'
import type { App, Platform } from '../../core/declarations.ts'
import { logger } from '../../core/logger.ts'
import { LocalStorage } from '../../core/storage/local.ts'
import { AttachmentsService } from './attachments.class.ts'
import { deleteAttachment, stalePending } from './attachments.repository.ts'
import { attachmentsMethods, attachmentsPath } from './attachments.shared.ts'
import { localStorageRoutes } from './attachments.storage-routes.ts'

const created = async (context: HookContext, next: NextFunction) => {
  await next()
  if (context.method === 'create') context.http = { ...context.http, status: 201, headers: { ...context.http?.headers, 'Cache-Control': 'no-store' } }
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
  app.service(attachmentsPath).hooks({ around: { create: [created] } })
  if (storage instanceof LocalStorage) app.use(localStorageRoutes(storage, db.pool))
}

/** The attachments.purge job: pending uploads older than `attachments.pendingHours` go, with any bytes stored for them. */
export async function purgePendingAttachments(platform: Platform): Promise<number> {
  const stale = await stalePending(platform.db.pool, platform.config.attachments.pendingHours)
  for (const a of stale) {
    await platform.storage.delete(a.storage_key).catch((err) => logger.warn('could not delete a stale upload', { key: a.storage_key, error: err.message }))
    await deleteAttachment(platform.db.pool, a.tenant_id, a.id)
  }
  return stale.length
}
