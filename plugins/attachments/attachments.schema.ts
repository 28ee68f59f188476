import { Type, type Static } from '@feathersjs/typebox'
import { dataAjv } from '../../core/validation.ts'

export const attachmentDataSchema = Type.Object(
  {
    recordId: Type.String({ format: 'uuid', description: 'The record the file belongs to' }),
    fileName: Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\u0000-\\u001f\\u007f/\\\\]+$', description: 'Shown to downloaders; no path separators or control characters' }),
    contentType: Type.String({ minLength: 3, maxLength: 255, pattern: '^[a-zA-Z0-9][\\w.+-]*/[\\w.+-]+$', description: 'Media type, from the allow-list' }),
    size: Type.Integer({ minimum: 1, description: 'Exact size in bytes; the upload must match it' }),
    sha256: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{64}$', description: 'Hex SHA-256 of the content; verified before the attachment is ready' }))
  },
  { $id: 'AttachmentCreate', additionalProperties: false }
)
export type AttachmentData = Static<typeof attachmentDataSchema>
export const attachmentDataValidator = dataAjv.compile(attachmentDataSchema)

export interface AttachmentOut {
  id: string
  recordId: string
  state: 'pending' | 'ready'
  fileName: string
  contentType: string
  size: number
  sha256: string | null
  createdBy: unknown
  createdAt: string
  uploadedBy: unknown
  uploadedAt: string | null
}
