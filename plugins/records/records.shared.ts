export const recordsPath = 'api/v1/records'
export const recordsMethods = ['find', 'get', 'create', 'patch', 'remove', 'transition'] as const
/** Methods that change data and so accept Idempotency-Key. */
export const recordsWriteMethods = ['create', 'patch', 'remove', 'transition'] as const

// What other plugins use of records (the one door the layering rules allow, .dependency-cruiser.cjs).
// Bulk applies the same write rules (records.rules.ts) to many rows and writes them through the same write path
// (records.write.ts), a batch per statement; module migrations and scheduled jobs are to use that API too.
export type { RecordPage } from './records.class.ts'
export { view } from './records.class.ts'
export {
  activityActions,
  activitySchema,
  dateFilterProperties,
  dueFilterProperties,
  findProperties,
  actorSchema,
  externalRefSchema,
  fieldChangeSchema,
  recordAttachmentSchema,
  recordSchema
} from './records.schema.ts'
export { canonicalExternalRef } from './records.external-ref.ts'
export type { FieldChange } from './records.payload.ts'
export { createRules, patchRules } from './records.rules.ts'
export { isExternalRefClash, recordColumns, type RecordRow } from './records.repository.ts'
export { changeRecords, createRecords, reserveNumbers, type RecordChangeOp, type Writer } from './records.write.ts'
export { referenceProblems } from './records.checks.ts'
export { readableRecord } from './records.access.ts'
export { migrationRefusals, migrationRuns, moveLocked } from './records.migrate.ts'
export { dueUntil } from './records.due.ts'
