import { Type, type Static } from '@feathersjs/typebox'
import { compileQuery } from '../../core/validation.ts'
import { activityActions } from '../records/records.shared.ts'

export const auditLogQuerySchema = (maxLimit: number) =>
  Type.Object(
    {
      recordId: Type.Optional(
        Type.String({ format: 'uuid', description: 'One record, live or deleted: its last state and full activity' })
      ),
      moduleKey: Type.Optional(Type.String({ minLength: 1, description: 'Activity feed of a module, oldest first' })),
      action: Type.Optional(Type.Union(activityActions.map((a) => Type.Literal(a)))),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: maxLimit })),
      cursor: Type.Optional(Type.String({ minLength: 1 }))
    },
    { title: 'AuditLogQuery', additionalProperties: false }
  )
export type AuditLogQuery = Static<ReturnType<typeof auditLogQuerySchema>>
export const auditLogQueryValidator = (maxLimit: number) => compileQuery(auditLogQuerySchema(maxLimit))
