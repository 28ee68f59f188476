export const attachmentsPath = 'api/v1/attachments'
export const attachmentsMethods = ['create', 'get', 'complete'] as const

// What other plugins' OpenAPI descriptions use: the signed download link's schema.
export { signedDownload } from './attachments.openapi.ts'
