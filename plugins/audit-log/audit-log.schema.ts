import { Type, type Static } from '@feathersjs/typebox'
import { compileQuery } from '../../core/validation.ts'

export const auditLogQuerySchema = (maxLimit: number) =>
  Type.Object(
    {
      recordId: Type.Optional(
        Type.String({ format: 'uuid', description: 'One record, live or deleted: its last state and full activity' })
      ),
      moduleKey: Type.Optional(Type.String({ minLength: 1, description: 'Activity feed of a module, oldest first' })),
      action: Type.Optional(
        Type.Union([
          Type.Literal('created'),
          Type.Literal('updated'),
          Type.Literal('transitioned'),
          Type.Literal('deleted')
        ])
      ),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: maxLimit })),
      cursor: Type.Optional(Type.String({ minLength: 1 }))
    },
    { title: 'AuditLogQuery', additionalProperties: false }
  )
export type AuditLogQuery = Static<ReturnType<typeof auditLogQuerySchema>>
export const auditLogQueryValidator = (maxLimit: number) => compileQuery(auditLogQuerySchema(maxLimit))
