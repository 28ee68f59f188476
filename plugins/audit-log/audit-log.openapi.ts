import { describeModule } from '../../core/modules/derive/openapi.ts'
import {
  cursorSchema,
  discriminated,
  moduleKeySchema,
  operation,
  pageSchema,
  queryParam,
  type DocContext,
  type Fragment,
  type JsonSchema
} from '../../core/openapi/builder.ts'
import { problemKinds } from '../../core/errors/kinds.ts'
import { exampleTraceId, problemResponse } from '../../core/openapi/problems.ts'
import { signedDownload } from '../attachments/attachments.shared.ts'
import {
  activityActions,
  activitySchema,
  actorSchema,
  fieldChangeSchema,
  recordAttachmentSchema,
  recordSchema
} from '../records/records.shared.ts'
import { auditLogQuerySchema } from './audit-log.schema.ts'

const tag = 'Audit log'

/**
 * The problem a call with neither `recordId` nor `moduleKey` gets. OpenAPI 3.1 cannot say "one of
 * these parameters" (docs/openapi.md says why both stay plain optional parameters), so the
 * parameters, the description and this example say it.
 */
const neitherGiven = (errorsUrl: string) => ({
  type: `${errorsUrl}/validation`,
  title: problemKinds.validation.title,
  status: 400,
  detail: 'recordId or moduleKey is required',
  code: 'field.invalid',
  traceId: exampleTraceId,
  errors: [{ pointer: '/recordId', field: 'recordId', code: 'required', detail: 'or moduleKey is required' }]
})

export function describeAuditLog(ctx: DocContext): Fragment {
  const { config } = ctx
  ctx.define(fieldChangeSchema, actorSchema)
  const activity = ctx.ref(activitySchema)
  const record = ctx.ref(recordSchema)
  // With the tenant's modules known, the record is typed by its module (told apart by `moduleKey`).
  let anyRecord: JsonSchema = record
  if (ctx.modules.length) {
    const refs = ctx.modules.map((m) => describeModule(ctx, m))
    anyRecord = discriminated(
      'moduleKey',
      refs.map((r) => [r.key, r.record])
    )
  }
  ctx.define(recordAttachmentSchema)
  const attachment = ctx.ref(
    {
      title: 'Attachment of a record in the audit log',
      description:
        "In the audit log an attachment comes with `download`, a short-lived signed URL, when the credential has `attachments:read`: a deleted record's files are reachable only here.",
      allOf: [
        { $ref: '#/components/schemas/RecordAttachment' },
        { type: 'object', properties: { download: signedDownload(ctx) } }
      ]
    },
    'AuditAttachment'
  )
  const history = ctx.ref(
    {
      type: 'object',
      title: 'Record history',
      description:
        'One record, live or soft-deleted (`deletedAt`, `deletedBy`): its last state, payload included, and its full activity, oldest first. Fields the caller may not read are left out of both.',
      required: ['record', 'items', 'nextCursor'],
      properties: {
        record: {
          allOf: [
            anyRecord,
            {
              type: 'object',
              required: ['attachments'],
              properties: { attachments: { type: 'array', items: attachment } }
            }
          ]
        },
        items: { type: 'array', items: activity },
        nextCursor: { type: 'null', description: 'The whole history comes in one answer.' }
      }
    },
    'AuditRecordHistory'
  )
  const entry = ctx.ref(
    {
      title: 'Audit entry',
      allOf: [
        activity,
        {
          type: 'object',
          required: ['recordId', 'recordNumber'],
          properties: {
            recordId: { type: 'string', format: 'uuid' },
            recordNumber: { type: 'string', examples: ['INC-2026-00042'] }
          }
        }
      ]
    },
    'AuditEntry'
  )
  const page = ctx.ref(
    pageSchema('Page of audit entries', entry, ' (with the same `moduleKey` and `action`)'),
    'AuditEntryPage'
  )

  const query = auditLogQuerySchema(config.pagination.maxLimit)
  const keys = ctx.modules.map((m) => m.definition.key)
  const param = (name: keyof typeof query.properties, description: string, extra: JsonSchema = {}) => {
    const { description: _, ...schema } = JSON.parse(JSON.stringify(query.properties[name]))
    return queryParam(name, description, { ...schema, ...extra })
  }
  return {
    tags: [
      {
        name: tag,
        description:
          "Every change to every record, soft-deleted ones included: one record's history, or a module's activity feed in order."
      }
    ],
    paths: {
      '/api/v1/audit-log': {
        get: operation({
          operationId: 'listAuditLog',
          tag,
          summary: "Read a record's history or a module's activity",
          description: [
            '**One of `recordId` or `moduleKey` is required**: without either the answer is 400 `field.invalid` (the 400 example).',
            "`recordId`: the record, live or deleted, with its payload, attachments (with download URLs) and every activity entry, in one answer. `moduleKey`: the module's activity, oldest first, cursor-paginated, optionally one `action`.",
            "Both need the `read` right on the module, and the caller's row rule applies (a record outside it is 404); fields the caller may not read are left out of payloads and changes."
          ].join(' '),
          scope: 'records:read',
          parameters: [
            param(
              'recordId',
              'One record, live or deleted: its last state and full activity. This or `moduleKey` is required; with both, `recordId` is used.'
            ),
            param(
              'moduleKey',
              'The activity feed of this module, oldest first. This or `recordId` is required.',
              keys.length ? { enum: keys } : moduleKeySchema
            ),
            queryParam('action', 'Only entries of this kind (with `moduleKey`).', {
              type: 'string',
              enum: [...activityActions]
            }),
            param(
              'limit',
              `Page size (with \`moduleKey\`), 1 to ${config.pagination.maxLimit}; default ${config.pagination.defaultLimit}.`,
              { default: config.pagination.defaultLimit }
            ),
            param(
              'cursor',
              'The `nextCursor` of the previous page, with the same `moduleKey` and `action`.',
              cursorSchema
            )
          ],
          responses: {
            200: {
              description:
                'With `recordId`, the record and its history (`AuditRecordHistory`); with `moduleKey`, a page of entries (`AuditEntryPage`).',
              schema: { oneOf: [history, page] },
              example: {
                items: [
                  {
                    id: 4711,
                    at: '2026-11-22T09:15:00.000Z',
                    actor: { type: 'user', id: '0b7e6f3a-5c2d-4e1f-8a9b-7c6d5e4f3a2b', name: 'Dana Reyes' },
                    action: 'transitioned',
                    changes: [],
                    transition: { key: 'start-investigation', from: 'reported', to: 'investigating' },
                    comment: 'Investigating with the site lead.',
                    recordId: '3f6c1c9e-2b1d-4c8e-9f0a-1b2c3d4e5f60',
                    recordNumber: 'INC-2026-00042'
                  }
                ],
                nextCursor: 'eyJ2IjoxfQ',
                limit: config.pagination.defaultLimit
              }
            }
          },
          problems: [404, 503],
          problemResponses: {
            400: problemResponse(400, ctx.errorsUrl, {
              description:
                'Without `recordId` or `moduleKey` (the example), or with a parameter that breaks its schema.',
              example: neitherGiven(ctx.errorsUrl)
            })
          }
        })
      }
    }
  }
}
