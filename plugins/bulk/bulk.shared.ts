export const bulkPath = 'api/modules/:moduleKey/bulk'
export const bulkMethods = ['create'] as const
/** The HTTP paths whose bodies the bulk service reads itself, as a stream. */
export const bulkPathPattern = /^\/api\/modules\/[^/]+\/bulk$/
