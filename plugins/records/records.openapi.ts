import { fieldToFilter, listOperators, operatorDocs, type Operator } from '../../core/modules/derive/filters.ts'
import { describeModule, type ModuleRefs } from '../../core/modules/derive/openapi.ts'
import {
  discriminated,
  headValueMax,
  moduleKeySchema,
  operation,
  pageParams,
  pageSchema,
  pathParam,
  queryParamsOf,
  type DocContext,
  type Fragment,
  type Json,
  type JsonSchema
} from '../../core/openapi/builder.ts'
import {
  activitySchema,
  actorSchema,
  recordAttachmentSchema,
  externalRefSchema,
  fieldChangeSchema,
  recordCreateSchema,
  recordPatchSchema,
  recordQuerySchema,
  recordSchema,
  recordTransitionSchema
} from './records.schema.ts'

const tag = 'Records'

/** The payload filters' description, from the filter table (core/modules/derive/filters.ts): operators by field type. */
function payloadFilterDocs(): string {
  const byOperators = new Map<string, { types: string[]; bare: Operator }>()
  for (const [type, spec] of Object.entries(fieldToFilter)) {
    if (!spec) continue
    const ops = spec.operators.map((op) => `\`${op}\``).join(', ')
    const entry = byOperators.get(ops) ?? { types: [], bare: spec.bare ?? 'eq' }
    entry.types.push(type)
    byOperators.set(ops, entry)
  }
  const kinds = [...byOperators].map(([ops, e]) => `${e.types.join(', ')}: ${ops} (a bare value: \`${e.bare}\`)`)
  const lists = listOperators.map((op) => `\`${op}\``).join(', ')
  const meanings = (Object.keys(operatorDocs) as Operator[]).map((op) => `\`${op}\` ${operatorDocs[op].toLowerCase()}`)
  return [
    'Payload field filters: `payload[field][op]=value`, or `payload[field]=value` for the bare operator of its type.',
    `Operators by field type: ${kinds.join('; ')}.`,
    `Meanings: ${meanings.join('; ')}. ${lists} take a list: values joined by commas or the parameter repeated (\`payload[bodyParts][containsAny][]=head&payload[bodyParts][containsAny][]=eyes\`).`,
    "A group's member is filtered as `payload[group.member]`: a record matches when at least one item of the group meets all the conditions given on that group's members (`payload[checklist.result]=fail&payload[checklist.severity]=high`: one item failed with high severity).",
    'E.g. `payload[severity]=high`, `payload[severity][in]=high,critical`, `payload[bodyParts][contains]=head,eyes`. `GET /api/v1/modules/{moduleKey}` marks the filterable fields.'
  ].join(' ')
}
/** 503 module.unavailable: the record's module is installed for the tenant but its package did not load. */
const writeProblems = [404, 409, 413, 415, 422, 503]

/** One schema for "any of these modules", discriminated by `moduleKey` when the tenant's modules are known. */
function perModule(refs: ModuleRefs[], pick: (r: ModuleRefs) => JsonSchema, generic: () => JsonSchema): JsonSchema {
  if (!refs.length) return generic()
  return discriminated(
    'moduleKey',
    refs.map((r) => [r.key, pick(r)])
  )
}

/** PATCH takes `application/merge-patch+json` (RFC 7396) as well as `application/json`. */
function mergePatchToo(op: Json): Json {
  op.requestBody.content['application/merge-patch+json'] = op.requestBody.content['application/json']
  return op
}

export function describeRecords(ctx: DocContext): Fragment {
  ctx.define(actorSchema, fieldChangeSchema, activitySchema, recordAttachmentSchema)
  ctx.ref(recordSchema)
  const refs = ctx.modules.map((m) => describeModule(ctx, m))
  const record = perModule(
    refs,
    (r) => r.record,
    () => ({ $ref: '#/components/schemas/Record' })
  )
  const externalRef = () => ctx.ref(externalRefSchema, 'ExternalRef')
  const createBody = perModule(
    refs,
    (r) =>
      ctx.ref(
        {
          type: 'object',
          title: `${r.title} record to create`,
          required: ['moduleKey', 'payload'],
          properties: { moduleKey: { const: r.key }, payload: r.payload, externalRef: externalRef() },
          additionalProperties: false
        },
        `${r.name}RecordCreate`
      ),
    () => ctx.ref(recordCreateSchema)
  )
  const patchBody = refs.length
    ? ctx.ref(
        {
          ...JSON.parse(JSON.stringify(recordPatchSchema)),
          properties: { payload: refs.length === 1 ? refs[0].payloadPatch : { anyOf: refs.map((r) => r.payloadPatch) } }
        },
        'RecordPatch'
      )
    : ctx.ref(recordPatchSchema)
  const transitionBody = refs.length
    ? ctx.ref(
        {
          ...JSON.parse(JSON.stringify(recordTransitionSchema)),
          properties: {
            ...JSON.parse(JSON.stringify(recordTransitionSchema.properties)),
            transition:
              refs.length === 1
                ? refs[0].transition
                : { anyOf: refs.map((r) => r.transition), description: "A transition of the record's module workflow" }
          }
        },
        'RecordTransition'
      )
    : ctx.ref(recordTransitionSchema)
  const basePage = pageSchema('Page of records', record, ' (with the same filters)')
  const page = ctx.ref(
    {
      ...basePage,
      properties: {
        ...basePage.properties,
        count: {
          type: 'object',
          required: ['value', 'exact'],
          description:
            "With `count=true`: how many records the filters select, as the caller may see them (the whole list, whatever the cursor). Exact up to 10,000; above, the planner's estimate, and `exact` is false.",
          properties: { value: { type: 'integer', minimum: 0 }, exact: { type: 'boolean' } }
        }
      }
    },
    'RecordPage'
  )
  const moduleKey: JsonSchema = refs.length ? { type: 'string', enum: refs.map((r) => r.key) } : moduleKeySchema
  const id = pathParam(
    'id',
    'The record id (UUID).',
    { type: 'string', format: 'uuid' },
    '3f6c1c9e-2b1d-4c8e-9f0a-1b2c3d4e5f60'
  )
  const ifMatch = { $ref: '#/components/parameters/IfMatch' }
  const ok = (description: string) => ({ description, schema: record, headers: ['ETag'] })
  // Examples come from the first module whose required fields reference no other record, so that
  // they work as sent on a fresh tenant: create, then change, transition or attach to what it made.
  const sample = refs.find((r) => !r.needs.length) ?? refs[0]

  return {
    tags: [
      {
        name: tag,
        description:
          "Records of the tenant's modules: create, read, change, move through the workflow, soft-delete. Every change is kept in the record's activity and the audit log."
      }
    ],
    paths: {
      '/api/v1/records': {
        get: operation({
          operationId: 'listRecords',
          tag,
          summary: 'List records of one module',
          description:
            "In creation order, oldest first, so records created while a client pages appear on later pages (with `updatedSince`: oldest change first, for incremental sync). Filters combine with AND; the caller's row rules apply, and fields it may not read are left out and may not be filtered on.",
          scope: 'records:read',
          // From the query schema the service validates with: a filter added there is documented here.
          parameters: queryParamsOf(recordQuerySchema(ctx.config.pagination.maxLimit), {
            moduleKey: {
              description:
                'The module whose records to list. Required, except to find records by `number` or `numberPrefix` across the modules the caller may read.',
              schema: moduleKey,
              example: refs[0]?.key ?? 'incident',
              'x-postman-enabled': true
            },
            ...Object.fromEntries(
              pageParams(ctx.config).map((p) => [p.name, { description: p.description, schema: p.schema }])
            ),
            payload: {
              description: payloadFilterDocs(),
              schema: {
                type: 'object',
                additionalProperties: {
                  anyOf: [
                    { type: 'string', maxLength: headValueMax },
                    { type: 'object', additionalProperties: { type: 'string', maxLength: headValueMax } }
                  ]
                }
              }
            }
          }),
          responses: { 200: { description: 'A page of records.', schema: page } },
          problems: [404, 503]
        }),
        post: operation({
          operationId: 'createRecord',
          tag,
          summary: 'Create a record',
          description:
            "The payload is validated against the module schema; the record starts in the workflow's initial state and gets the next number of the module's pattern.",
          scope: 'records:write',
          idempotent: true,
          body: {
            schema: createBody,
            ...(sample ? { example: { moduleKey: sample.key, payload: sample.example } } : {})
          },
          responses: { 201: { description: 'The record was created.', schema: record, headers: ['ETag', 'Location'] } },
          problems: writeProblems
        })
      },
      '/api/v1/records/{id}': {
        parameters: [id],
        get: operation({
          operationId: 'getRecord',
          tag,
          summary: 'Get a record with its activity and attachments',
          scope: 'records:read',
          responses: {
            200: ok(
              'The record, with `activity` (every change, newest last), `attachments` (metadata; download through `GET /api/v1/attachments/{id}`) and `availableTransitions`.'
            )
          },
          problems: [404, 503]
        }),
        patch: mergePatchToo(
          operation({
            operationId: 'updateRecord',
            tag,
            summary: 'Change some payload fields',
            description:
              'A JSON merge patch of the payload: only the keys sent change, `null` removes a key. Send the `ETag` as `If-Match` to refuse the change if someone else changed the record first.',
            scope: 'records:write',
            idempotent: true,
            parameters: [ifMatch],
            body: { schema: patchBody, example: { payload: sample ? sample.patchExample : { severity: 'high' } } },
            responses: { 200: ok('The changed record.') },
            problems: [...writeProblems, 412]
          })
        ),
        delete: operation({
          operationId: 'deleteRecord',
          tag,
          summary: 'Soft-delete a record',
          description:
            'The record leaves lists and answers 404, but stays in the audit log (`GET /api/v1/audit-log?recordId=`) and in lists with `includeDeleted=true`.',
          scope: 'records:delete',
          idempotent: true,
          parameters: [ifMatch],
          responses: { 200: ok('The record as deleted, with `deletedAt` and `deletedBy`.') },
          problems: [404, 409, 412, 422, 503]
        })
      },
      '/api/v1/records/{id}:transition': {
        parameters: [id],
        post: operation({
          operationId: 'transitionRecord',
          tag,
          summary: 'Move a record through its workflow',
          description:
            "Fires one transition of the module workflow from the record's current state, optionally with payload changes and a comment. The target state's required fields must then hold values; the caller needs a role allowed to fire it (and, for four-eyes transitions, must not be the record's creator).",
          scope: 'records:transition',
          idempotent: true,
          parameters: [ifMatch],
          body: {
            schema: transitionBody,
            example: {
              ...(sample?.transitionExample ?? { transition: 'start-investigation' }),
              comment: 'Agreed with the site lead.'
            }
          },
          responses: { 200: ok('The record in its new state.') },
          problems: [...writeProblems, 412]
        })
      }
    }
  }
}
