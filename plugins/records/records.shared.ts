export const recordsPath = 'api/v1/records'
export const recordsMethods = ['find', 'get', 'create', 'patch', 'remove', 'transition'] as const
/** Methods that change data and so accept Idempotency-Key. */
export const recordsWriteMethods = ['create', 'patch', 'remove', 'transition'] as const
