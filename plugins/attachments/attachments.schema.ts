import { Type, type Static } from '@feathersjs/typebox'
import { compileData } from '../../core/validation.ts'
import { actorSchema } from '../records/records.shared.ts'

export const attachmentDataSchema = Type.Object(
  {
    recordId: Type.String({ format: 'uuid', description: 'The record the file belongs to' }),
    fileName: Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[^\\u0000-\\u001f\\u007f/\\\\]+$',
      description: 'Shown to downloaders; no path separators or control characters'
    }),
    contentType: Type.String({
      minLength: 3,
      maxLength: 255,
      pattern: '^[a-zA-Z0-9][\\w.+-]*/[\\w.+-]+$',
      description: 'Media type, from the allow-list'
    }),
    size: Type.Integer({ minimum: 1, description: 'Exact size in bytes; the upload must match it' }),
    sha256: Type.Optional(
      Type.String({
        pattern: '^[0-9a-fA-F]{64}$',
        description: 'Hex SHA-256 of the content; verified before the attachment is ready'
      })
    )
  },
  { $id: 'AttachmentCreate', additionalProperties: false }
)
export type AttachmentData = Static<typeof attachmentDataSchema>
export const attachmentDataValidator = compileData(attachmentDataSchema)

/** An attachment as every answer shows it; the OpenAPI document uses this schema too. */
export const attachmentSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    recordId: Type.String({ format: 'uuid' }),
    state: Type.Union([Type.Literal('pending'), Type.Literal('ready')]),
    fileName: Type.String(),
    contentType: Type.String(),
    size: Type.Integer({ minimum: 1, description: 'Bytes, as declared (and verified once ready).' }),
    sha256: Type.Union([Type.String({ pattern: '^[0-9a-f]{64}$' }), Type.Null()], {
      description: 'Hex SHA-256 as declared; null when none was.'
    }),
    createdBy: Type.Ref(actorSchema),
    createdAt: Type.String({ format: 'date-time' }),
    uploadedBy: Type.Union([Type.Ref(actorSchema), Type.Null()], {
      description:
        'Who completed the upload (with the local driver, whose PUT completes it: who asked for the URL); null while pending.'
    }),
    uploadedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()])
  },
  {
    $id: 'Attachment',
    description:
      'A file of a record: `pending` until its upload is verified (size, and SHA-256 when declared), then `ready` and part of the record.'
  }
)
export type AttachmentOut = Static<typeof attachmentSchema>
