export const recordsPath = 'api/v1/records'
export const recordsMethods = ['find', 'get', 'create', 'patch', 'remove', 'transition'] as const
/** Methods that change data and so accept Idempotency-Key. */
export const recordsWriteMethods = ['create', 'patch', 'remove', 'transition'] as const

// What other plugins use of records (the one door the layering rules allow, .dependency-cruiser.cjs).
// Bulk still reaches the write internals below until it writes through the records service's rules.
export type { RecordPage } from './records.class.ts'
export { view } from './records.class.ts'
export { activitySchema, actorSchema, externalRefSchema, fieldChangeSchema, recordAttachmentSchema, recordSchema } from './records.schema.ts'
export { canonicalExternalRef } from './records.external-ref.ts'
export { diffPayload, mergePatch } from './records.payload.ts'
export { createdEvent, isExternalRefClash, recordColumns, selectAny, updateRecord, type RecordRow } from './records.repository.ts'
export { referenceProblems } from './records.checks.ts'
