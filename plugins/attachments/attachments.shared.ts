export const attachmentsPath = 'api/v1/attachments'
export const attachmentsMethods = ['create', 'get', 'complete'] as const
