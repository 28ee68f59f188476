import type { App } from '../../core/declarations.ts'
import { AuditLogService } from './audit-log.class.ts'
import { auditLogMethods, auditLogPath } from './audit-log.shared.ts'
import { describeAuditLog } from './audit-log.openapi.ts'
import type { Plugin } from '../../core/plugin.ts'

declare module '../../core/declarations.ts' {
  interface ServiceTypes {
    [auditLogPath]: AuditLogService
  }
}

export function auditLog(app: App) {
  const { db, tenants, cursors, config, storage } = app.get('platform')
  app.use(
    auditLogPath,
    new AuditLogService({
      pool: db.pool,
      tenants,
      cursors,
      defaultLimit: config.pagination.defaultLimit,
      maxLimit: config.pagination.maxLimit,
      storage,
      downloadUrlSeconds: config.attachments.downloadUrlSeconds
    }),
    {
      methods: [...auditLogMethods]
    }
  )
}

export const auditLogPlugin: Plugin = {
  name: 'audit-log',
  dependsOn: ['records', 'attachments'],
  configure: auditLog,
  describe: describeAuditLog
}
