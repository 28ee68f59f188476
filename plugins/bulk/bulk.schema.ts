import { Type, type Static } from '@feathersjs/typebox'
import { compileData, compileQuery } from '../../core/validation.ts'
import { externalRefSchema } from '../records/records.shared.ts'

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

/** The largest `firstLine`: far past any file split into calls, and well inside the 32-bit line numbers outcomes are stored under. */
export const maxFirstLine = 1_000_000_000

export const bulkQuerySchema = Type.Object(
  {
    dryRun: Type.Optional(Type.Boolean({ description: 'Check every row and report what would happen, writing nothing' })),
    firstLine: Type.Optional(Type.Integer({ minimum: 1, maximum: maxFirstLine, description: 'The number of the body\'s first line in the client\'s file; outcomes number lines from it' }))
  },
  { $id: 'BulkQuery', additionalProperties: false }
)
export type BulkQuery = Static<typeof bulkQuerySchema>
export const bulkQueryValidator = compileQuery(bulkQuerySchema)
