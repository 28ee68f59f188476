import { actorSchema } from '../records/records.shared.ts'
import {
  operation,
  pathParam,
  queryParam,
  toDocumentSchema,
  type DocContext,
  type Fragment,
  type JsonSchema
} from '../../core/openapi/builder.ts'
import { attachmentDataSchema, attachmentSchema } from './attachments.schema.ts'

const tag = 'Attachments'
const exampleId = '6a1c2e4f-8b3d-4f5a-9c7e-1d2b3a4c5e6f'

/** `SignedDownload`: a short-lived GET URL; exports and the audit log hand them out too. */
export function signedDownload(ctx: DocContext): JsonSchema {
  return ctx.ref(
    {
      type: 'object',
      title: 'Signed download',
      description:
        "A short-lived URL to GET the file from directly (this service's `/storage/…` route with the local driver, the bucket with S3). It needs no credential and comes with `Content-Disposition: attachment`.",
      required: ['method', 'url', 'headers', 'expiresAt'],
      properties: {
        method: { type: 'string', const: 'GET' },
        url: { type: 'string', format: 'uri' },
        headers: {
          type: 'object',
          description: 'Headers to send with the request: none for a download.',
          additionalProperties: { type: 'string' }
        },
        expiresAt: { type: 'string', format: 'date-time', description: 'The URL is refused after this instant.' }
      }
    },
    'SignedDownload'
  )
}

function signedUpload(ctx: DocContext): JsonSchema {
  return ctx.ref(
    {
      type: 'object',
      title: 'Signed upload',
      description:
        'Where to PUT the bytes, straight to storage: `url` with exactly `headers`. Valid for this method, object, content type and size only.',
      required: ['method', 'url', 'headers', 'expiresAt'],
      properties: {
        method: { type: 'string', const: 'PUT' },
        url: { type: 'string', format: 'uri' },
        headers: {
          type: 'object',
          required: ['content-type'],
          properties: { 'content-type': { type: 'string' } },
          additionalProperties: { type: 'string' },
          description: 'Send these exactly: they are part of the signature.'
        },
        expiresAt: { type: 'string', format: 'date-time' }
      }
    },
    'SignedUpload'
  )
}

export function describeAttachments(ctx: DocContext): Fragment {
  const a = ctx.config.attachments
  const limits = { ...ctx.config.limits, ...(ctx.tenant ? ctx.config.tenants[ctx.tenant.id]?.limits : undefined) }
  ctx.define(actorSchema)
  const attachment = ctx.ref(attachmentSchema)
  const create = toDocumentSchema(attachmentDataSchema)
  create.properties.size = { ...create.properties.size, maximum: a.maxBytes }
  create.properties.contentType.description = `Media type; one of ${a.contentTypes.map((t) => `\`${t}\``).join(', ')} (a \`type/*\` entry admits every subtype).`
  const createBody = ctx.ref(create, 'AttachmentCreate')
  const withUpload = ctx.ref(
    {
      title: 'Attachment with its upload URL',
      allOf: [
        attachment,
        {
          type: 'object',
          required: ['upload', 'complete'],
          properties: {
            state: { const: 'pending' },
            upload: signedUpload(ctx),
            complete: {
              type: 'object',
              description:
                'The call that verifies the upload (with the local driver the upload itself does, and this call is harmless).',
              required: ['method', 'url'],
              properties: {
                method: { type: 'string', const: 'POST' },
                url: { type: 'string', examples: [`/api/v1/attachments/${exampleId}:complete`] }
              }
            }
          }
        }
      ]
    },
    'AttachmentUpload'
  )
  const ready: JsonSchema = { allOf: [attachment, { type: 'object', properties: { state: { const: 'ready' } } }] }
  const withDownload = ctx.ref(
    {
      title: 'Attachment with its download URL',
      allOf: [
        attachment,
        {
          type: 'object',
          required: ['download'],
          properties: { state: { const: 'ready' }, download: signedDownload(ctx) }
        }
      ]
    },
    'AttachmentDownload'
  )
  const id = pathParam('id', 'The attachment id (UUID).', { type: 'string', format: 'uuid' }, exampleId)
  const urlLimit = `Each signed URL counts against ${limits.attachmentUrlsPerMinute} per credential per minute (429 \`attachments.url_limit\` with \`Retry-After\` past it), besides the request rate limit.`

  const paths: Fragment['paths'] = {
    '/api/v1/attachments': {
      post: operation({
        operationId: 'createAttachment',
        tag,
        summary: 'Ask for an upload URL',
        description: [
          `Records a \`pending\` attachment of a live record and signs a URL to PUT its bytes to (\`upload\`, valid ${a.uploadUrlSeconds} s, for that content type and size only).`,
          `At most ${a.maxBytes} bytes and a content type on the allow-list (400 otherwise). Needs a read of the record (its row rule included; 404 outside it) and the \`attachments\` action on its module.`,
          urlLimit
        ].join(' '),
        scope: 'attachments:write',
        idempotent: true,
        body: {
          schema: createBody,
          example: {
            recordId: '3f6c1c9e-2b1d-4c8e-9f0a-1b2c3d4e5f60',
            fileName: 'Report – bay 4.pdf',
            contentType: 'application/pdf',
            size: 48213
          }
        },
        responses: {
          201: {
            description: 'The pending attachment, with `upload` (where to PUT the bytes) and `complete`.',
            schema: withUpload,
            headers: ['Cache-Control'],
            example: {
              id: exampleId,
              recordId: '3f6c1c9e-2b1d-4c8e-9f0a-1b2c3d4e5f60',
              state: 'pending',
              fileName: 'Report – bay 4.pdf',
              contentType: 'application/pdf',
              size: 48213,
              sha256: null,
              createdBy: { type: 'user', id: '0b7e6f3a-5c2d-4e1f-8a9b-7c6d5e4f3a2b', name: 'Dana Reyes' },
              createdAt: '2026-11-22T09:15:00.000Z',
              uploadedBy: null,
              uploadedAt: null,
              upload: {
                method: 'PUT',
                url: `https://records.example.com/storage/acme/3f6c1c9e-2b1d-4c8e-9f0a-1b2c3d4e5f60/${exampleId}?method=PUT&expires=1795425300&type=application%2Fpdf&size=48213&sig=q3Zl0wXb7cUe9Hk2TtV1sRmN4yPz8aGf5jDiLoE6nBc`,
                headers: { 'content-type': 'application/pdf' },
                expiresAt: '2026-11-22T09:30:00.000Z'
              },
              complete: { method: 'POST', url: `/api/v1/attachments/${exampleId}:complete` }
            }
          }
        },
        problems: [404, 409, 413, 415, 422]
      })
    },
    '/api/v1/attachments/{id}': {
      parameters: [id],
      get: operation({
        operationId: 'getAttachment',
        tag,
        summary: 'Get an attachment with a download URL',
        description: `The metadata and \`download\`, a URL valid ${a.downloadUrlSeconds} s. A pending attachment is 409 \`attachment.pending\`; one of a deleted record is 404 (its files stay reachable through \`GET /api/v1/audit-log?recordId=\`). ${urlLimit}`,
        scope: 'attachments:read',
        responses: { 200: { description: 'The ready attachment and its download URL.', schema: withDownload } },
        problems: [404, 409]
      })
    },
    '/api/v1/attachments/{id}:complete': {
      parameters: [id],
      post: operation({
        operationId: 'completeAttachment',
        tag,
        summary: 'Verify an upload and make the attachment ready',
        description:
          'Checks the stored object against what was declared: its size and, when one was declared, its SHA-256. Nothing uploaded yet is 409 `attachment.not_uploaded`; a wrong size or checksum is 422 (`attachment.size_mismatch`, `attachment.checksum_mismatch`), the wrong file is removed and the attachment stays pending for the right one. On a ready attachment it answers the attachment again. No body is needed.',
        scope: 'attachments:write',
        idempotent: true,
        responses: { 200: { description: 'The ready attachment.', schema: ready } },
        problems: [404, 409, 413, 415, 422]
      })
    }
  }
  if (a.driver === 'local') Object.assign(paths, storagePaths(ready))
  return {
    tags: [
      {
        name: tag,
        description:
          "Files of records through signed URLs: ask for an upload URL, PUT the bytes straight to storage, and (with S3) confirm with `:complete`; downloads are signed URLs too. Only ready attachments appear in a record's `attachments`."
      }
    ],
    paths
  }
}

/** The local driver's signed URLs, served by this service itself: the signature is the only credential. */
function storagePaths(ready: JsonSchema): Fragment['paths'] {
  const signature = (method: 'PUT' | 'GET') => [
    queryParam(
      'method',
      'The HTTP method the URL was signed for.',
      { type: 'string', enum: [method] },
      { required: true }
    ),
    queryParam(
      'expires',
      'Epoch second the URL expires at (403 `storage.url_expired` after it).',
      { type: 'integer' },
      { required: true }
    ),
    queryParam('type', 'The content type signed into the URL.', { type: 'string' }, { required: true }),
    ...(method === 'PUT'
      ? [
          queryParam(
            'size',
            'The exact size in bytes the upload must have.',
            { type: 'integer', minimum: 1 },
            { required: true }
          ),
          queryParam('sha256', 'The declared SHA-256 (hex) the upload must have, when one was declared.', {
            type: 'string',
            pattern: '^[0-9a-fA-F]{64}$'
          })
        ]
      : [
          queryParam('name', 'The file name offered in `Content-Disposition`.', { type: 'string' }, { required: true })
        ]),
    queryParam(
      'sig',
      'HMAC-SHA256 (base64url) over the method, key, expiry and every constraint; any change is 403 `storage.signature_invalid`.',
      { type: 'string' },
      { required: true }
    )
  ]
  const refusals =
    'A URL that was not signed here or was changed is 403 `storage.signature_invalid`, an expired one 403 `storage.url_expired`, a GET on an upload URL or a PUT on a download URL 403 `storage.wrong_method` (any other method is 405). No credential is needed; a request that sends an invalid `Authorization` header is 401 all the same.'
  const put = operation({
    operationId: 'uploadStoredFile',
    tag,
    summary: "Upload an attachment's bytes (local storage)",
    description: `The \`upload.url\` of \`POST /api/v1/attachments\`. Send the bytes with exactly the signed \`Content-Type\` (else 403 \`storage.header_mismatch\`). They are counted and hashed on their way to a temporary file: past the declared size the upload stops with 413 \`attachment.too_large\`, a wrong size or checksum is 422 (\`attachment.size_mismatch\`, \`attachment.checksum_mismatch\`), and in each case nothing is kept. A good upload makes the attachment \`ready\` at once. An attachment already ready is 409 \`attachment.already_uploaded\`; one removed (unfinished uploads are purged) is 404. ${refusals}`,
    scope: null,
    parameters: signature('PUT'),
    body: {
      schema: {},
      binary: true,
      contentType: '*/*',
      description: "The file's bytes, with the signed content type."
    },
    responses: { 200: { description: 'The attachment, now ready.', schema: ready } },
    problems: [401, 403, 404, 409, 413, 422],
    // Query parameters here are the signature: anything wrong with them is 403, never 400.
    omitProblems: [400]
  })
  const get = operation({
    operationId: 'downloadStoredFile',
    tag,
    summary: 'Download a file (local storage)',
    description: `The \`download.url\` of an attachment (\`GET /api/v1/attachments/{id}\`, the audit log) or of a finished export (\`GET /api/v1/exports/{id}\`). The body is the file with its signed content type, \`Content-Disposition: attachment\` with its name, and \`Cache-Control: private, no-store\`; HEAD gives the headers only. A file no longer stored (an expired export) is 404. ${refusals}`,
    scope: null,
    parameters: signature('GET'),
    responses: {
      200: {
        description: "The file's bytes, with the content type it was uploaded or rendered with.",
        schema: {},
        binary: true,
        contentType: '*/*',
        headers: ['Content-Disposition', 'Cache-Control']
      }
    },
    problems: [401, 403, 404],
    // Query parameters here are the signature: anything wrong with them is 403, never 400.
    omitProblems: [400]
  })
  return {
    '/storage/{tenantId}/{recordId}/{fileId}': {
      parameters: [
        pathParam('tenantId', 'The tenant.', { type: 'string', pattern: '^[a-z][a-z0-9-]{0,62}$' }, 'acme'),
        pathParam(
          'recordId',
          "The record of an attachment (UUID), or `exports` for an export's file.",
          { type: 'string', pattern: '^([0-9a-f-]{36}|exports)$' },
          '3f6c1c9e-2b1d-4c8e-9f0a-1b2c3d4e5f60'
        ),
        pathParam(
          'fileId',
          'The attachment or export id (UUID).',
          { type: 'string', pattern: '^[0-9a-f-]{36}$' },
          exampleId
        )
      ],
      put,
      get
    }
  }
}
