import { Type, type Static } from '@feathersjs/typebox'
import { compileQuery } from '../../core/validation.ts'

/** The feed's default page size (capped by pagination.maxLimit). */
export const feedDefaultLimit = 100

export const eventsFeedQuerySchema = (maxLimit: number) =>
  Type.Object(
    {
      after: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 1024,
          pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$',
          description:
            'The `nextCursor` of the previous page: the events after it. Without it, from the oldest event kept.'
        })
      ),
      limit: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: maxLimit,
          description: `Page size, 1 to ${maxLimit}; default ${Math.min(feedDefaultLimit, maxLimit)}.`
        })
      ),
      types: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 1024,
          pattern: '^[a-z]+\\.[a-z_]+(,[a-z]+\\.[a-z_]+)*$',
          description: 'Only events of these types, comma-separated (e.g. `record.created,record.updated`).'
        })
      ),
      moduleKey: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 200,
          pattern: '^[a-z][a-z0-9-]*$',
          description: 'Only events of this module (identity events have none).'
        })
      )
    },
    { title: 'EventsFeedQuery', additionalProperties: false }
  )
export type EventsFeedQuery = Static<ReturnType<typeof eventsFeedQuerySchema>>
export const eventsFeedQueryValidator = (maxLimit: number) => compileQuery(eventsFeedQuerySchema(maxLimit))
