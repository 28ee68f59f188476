import { Type, type Static } from '@feathersjs/typebox'
import { compileData, queryAjv } from '../../core/validation.ts'
import { externalRefSchema } from '../records/records.schema.ts'

/** One NDJSON input line: the payload of a record, and optionally the source system's reference (upsert key). */
export const bulkLineSchema = Type.Object(
  {
    payload: Type.Object({}, { additionalProperties: true, description: 'The record payload, as for POST /api/v1/records' }),
    externalRef: Type.Optional(externalRefSchema)
  },
  { $id: 'BulkLine', additionalProperties: false }
)
export type BulkLine = Static<typeof bulkLineSchema>
export const bulkLineValidator = compileData(bulkLineSchema)

export const bulkQuerySchema = Type.Object(
  { dryRun: Type.Optional(Type.Boolean({ description: 'Check every row and report what would happen, writing nothing' })) },
  { $id: 'BulkQuery', additionalProperties: false }
)
export type BulkQuery = Static<typeof bulkQuerySchema>
export const bulkQueryValidator = queryAjv.compile(bulkQuerySchema)
