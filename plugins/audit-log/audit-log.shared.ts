export const auditLogPath = 'api/v1/audit-log'
export const auditLogMethods = ['find'] as const
