import { Type, type SchemaOptions, type Static, type TOptional, type TSchema } from '@feathersjs/typebox'
import {
  systemFields,
  type SystemField as SystemFieldDefinition,
  type SystemFieldKind
} from '../../core/modules/system-fields.ts'
import { operatorDocs, type ListOperator } from '../../core/modules/derive/filters.ts'
import { compileData, compileQuery } from '../../core/validation.ts'

export const actorSchema = Type.Object(
  {
    type: Type.Union([
      Type.Literal('api-key'),
      Type.Literal('user'),
      Type.Literal('service-account'),
      Type.Literal('system')
    ]),
    id: Type.String(),
    name: Type.String(),
    token: Type.Optional(
      Type.Object(
        {
          type: Type.Union([Type.Literal('api-key'), Type.Literal('personal'), Type.Literal('service-account')]),
          id: Type.String({ format: 'uuid' }),
          name: Type.String()
        },
        { description: 'The token the change came through (absent for a signed-in session or a system action)' }
      )
    ),
    onBehalfOf: Type.Optional(
      Type.Object(
        { userId: Type.String({ format: 'uuid' }), name: Type.String() },
        {
          description:
            'The person behind a service account or API key: the user who created it (or who created the token that created it); absent when nobody is recorded. Four-eyes transitions count this person as the actor.'
        }
      )
    )
  },
  {
    $id: 'Actor',
    description:
      'Who made a change, as it was then: a user (signed in, or through their personal token), a service account, an API key or a system action.'
  }
)

export const fieldChangeSchema = Type.Object(
  { field: Type.String(), from: Type.Unknown(), to: Type.Unknown() },
  { $id: 'FieldChange' }
)

/** What an activity entry records: the write path's actions (records.write.ts), `migrated` by a module migration. */
export const activityActions = ['created', 'updated', 'transitioned', 'deleted', 'migrated'] as const

export const activitySchema = Type.Object(
  {
    id: Type.Integer({
      minimum: 1,
      description:
        "Position of the entry in its record's activity: 1 is the created entry; with recordId, it identifies the entry in the audit feed"
    }),
    at: Type.String({ format: 'date-time' }),
    actor: Type.Ref(actorSchema),
    action: Type.Union(activityActions.map((a) => Type.Literal(a))),
    changes: Type.Array(Type.Ref(fieldChangeSchema)),
    transition: Type.Union([Type.Object({ key: Type.String(), from: Type.String(), to: Type.String() }), Type.Null()]),
    comment: Type.Union([Type.String(), Type.Null()])
  },
  { $id: 'ActivityEntry' }
)

/** A ready attachment as its record lists it (`attachmentColumns` in records.repository.ts builds it). */
export const recordAttachmentSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    fileName: Type.String(),
    contentType: Type.String(),
    size: Type.Integer({ minimum: 1 }),
    sha256: Type.Union([Type.String({ pattern: '^[0-9a-f]{64}$' }), Type.Null()]),
    uploadedBy: Type.Ref(actorSchema),
    uploadedAt: Type.String({ format: 'date-time' })
  },
  { $id: 'RecordAttachment', description: 'A ready attachment; download it through `GET /api/v1/attachments/{id}`.' }
)

/** One row per system field kind: its TypeBox schema (the fields themselves: core/modules/system-fields.ts). */
const systemFieldSchema = {
  uuid: (o: SchemaOptions) => Type.String({ format: 'uuid', ...o }),
  string: (o: SchemaOptions) => Type.String(o),
  integer: (o: SchemaOptions) => Type.Integer(o),
  datetime: (o: SchemaOptions) => Type.String({ format: 'date-time', ...o }),
  actor: (o: SchemaOptions) => Type.Ref(actorSchema, o)
} satisfies { [K in SystemFieldKind]: (o: SchemaOptions) => TSchema }
type SystemField = (typeof systemFields)[number]
type KindSchema<F extends SystemField> = ReturnType<(typeof systemFieldSchema)[F['kind']]>
type SystemProperties = {
  [F in SystemField as F['key']]: F extends { optional: true } ? TOptional<KindSchema<F>> : KindSchema<F>
}

function systemProperties(): SystemProperties {
  return Object.fromEntries(
    systemFields.map((f: SystemFieldDefinition) => {
      const schema = systemFieldSchema[f.kind](f.description ? { description: f.description } : {})
      return [f.key, f.optional ? Type.Optional(schema) : schema]
    })
  ) as SystemProperties
}

export const recordSchema = Type.Object(
  {
    ...systemProperties(),
    payload: Type.Record(Type.String(), Type.Unknown()),
    migrationRefused: Type.Optional(
      Type.Object(
        { fromVersion: Type.String(), reason: Type.String() },
        {
          description:
            "Present only on a record stored under an older version of its module that the loaded version refuses as the module's migration leaves it (docs/modules.md, Upgrade): shown as far as the migration took it, its payload and state may hold values this version does not define. A PATCH that makes it valid moves it; other changes answer 409 record.migration_refused."
        }
      )
    ),
    activity: Type.Optional(Type.Array(Type.Ref(activitySchema))),
    attachments: Type.Optional(Type.Array(Type.Ref(recordAttachmentSchema))),
    availableTransitions: Type.Optional(
      Type.Array(
        Type.Object({
          key: Type.String(),
          label: Type.String(),
          to: Type.String(),
          missingFields: Type.Array(Type.String()),
          refusal: Type.Optional(
            Type.Object(
              {
                code: Type.String(),
                detail: Type.String(),
                conflicts: Type.Array(Type.Object({}, { additionalProperties: true }))
              },
              {
                description:
                  "Present when the module's separation of duties holds the caller apart from this transition on the record as it stands: what firing it would answer (403, `workflow.self_approval` or `workflow.separation_of_duties`), with the rules it breaks."
              }
            )
          )
        })
      )
    )
  },
  { $id: 'Record' }
)
export type RecordOut = Static<typeof recordSchema>

export const externalRefSchema = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '^\\S(.*\\S)?$',
  description: "The source system's reference for the record (no leading or trailing spaces)"
})

export const recordCreateSchema = Type.Object(
  {
    moduleKey: Type.String({ minLength: 1 }),
    payload: Type.Object({}, { additionalProperties: true }),
    externalRef: Type.Optional(externalRefSchema)
  },
  { $id: 'RecordCreate', additionalProperties: false }
)
export type RecordCreate = Static<typeof recordCreateSchema>

export const recordPatchSchema = Type.Object(
  {
    payload: Type.Object(
      {},
      { additionalProperties: true, description: 'JSON merge patch of the payload: keys given replace, null removes' }
    )
  },
  { $id: 'RecordPatch', additionalProperties: false }
)
export type RecordPatch = Static<typeof recordPatchSchema>

export const recordTransitionSchema = Type.Object(
  {
    transition: Type.String({ minLength: 1, description: 'Key of a transition of the module workflow' }),
    comment: Type.Optional(Type.String({ maxLength: 4000 })),
    payload: Type.Optional(
      Type.Object(
        {},
        { additionalProperties: true, description: 'Payload changes applied with the transition (merge patch)' }
      )
    )
  },
  { $id: 'RecordTransition', additionalProperties: false }
)
export type RecordTransition = Static<typeof recordTransitionSchema>

const dateFilter = (description: string) => Type.Optional(Type.String({ format: 'date-time', description }))

/**
 * The date-range filters of a list, half-open (since ≤ t < before): one table for REST's query (below), GraphQL's
 * arguments, an export's filters and the SQL (`dateFilterColumns`, records.filters.ts).
 */
export const dateFilterProperties = {
  createdSince: dateFilter('Only records created at or after this instant'),
  createdBefore: dateFilter('Only records created before this instant'),
  updatedSince: dateFilter('Only records changed at or after this instant, oldest change first'),
  updatedBefore: dateFilter('Only records last changed before this instant')
}
export type DateFilterName = keyof typeof dateFilterProperties
/**
 * Each date-range filter's column and comparison, and whether the column is indexed in creation order too (the
 * platform's (tenant, module, seq, created_at) index in plugins/records/records.indexes.ts).
 */
export const dateFilterColumns: Record<DateFilterName, { column: string; operator: '>=' | '<'; rangeIndexed?: true }> =
  {
    createdSince: { column: 'r.created_at', operator: '>=', rangeIndexed: true },
    createdBefore: { column: 'r.created_at', operator: '<', rangeIndexed: true },
    updatedSince: { column: 'r.updated_at', operator: '>=' },
    updatedBefore: { column: 'r.updated_at', operator: '<' }
  }

/**
 * The due-date filters of a list (a module's `due`, records.due.ts): one table for REST's query (below), GraphQL's
 * arguments (Boolean) and an export's filters.
 */
export const dueFilterProperties = {
  overdue: Type.Optional(
    Type.Boolean({
      description:
        "Only records whose due date (the module's `due` field) has passed while they are in a state where it counts (true), or only the others (false); a module without a due date refuses it"
    })
  )
}

/**
 * How a list is ordered and searched, and found by number prefix or creator: one table for REST's query (below),
 * GraphQL's arguments (each a String) and an export's filters (records.sort.ts, records.search.ts, records.filters.ts).
 */
export const findProperties = {
  sort: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      description:
        'The order of the list: createdAt, updatedAt, number or payload.<field> of a sortable field (the module schema says which), ascending, or descending with a leading - (e.g. -createdAt); ties in creation order. Records without a value come last. relevance, with q: best match first, among the newest 1,000 matches. Default: creation order (change order with updatedSince). A cursor keeps its sort.'
    })
  ),
  q: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description:
        "Text search over the module's searchable fields: every word must start a word of the record, in any case and with or without accents"
    })
  ),
  numberPrefix: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'Records whose number starts with this, in any case, e.g. INC-2026-'
    })
  ),
  createdBy: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      description:
        "Records whose creator (`createdBy.id`) is this id: a user's, or a service account's or API key's (what a token creates is the token's, not that of the person it acts on behalf of); or `me`, the caller's own user (a session or personal token; a token with no user behind it is refused)"
    })
  )
}

/** A list operator's value in a payload filter (records.class.ts splits REST's comma-joined form first). */
const listValue = (op: ListOperator) =>
  Type.Optional(Type.Array(Type.String(), { minItems: 1, maxItems: 1000, description: operatorDocs[op] }))

export const recordQuerySchema = (maxLimit: number) =>
  Type.Object(
    {
      moduleKey: Type.Optional(
        Type.String({
          minLength: 1,
          description:
            'The module whose records are listed; required, except to find records by number or numberPrefix across the modules the caller may read'
        })
      ),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: maxLimit })),
      cursor: Type.Optional(Type.String({ minLength: 1 })),
      state: Type.Optional(
        Type.String({ minLength: 1, description: 'Workflow state, or several separated by commas' })
      ),
      ...dateFilterProperties,
      ...dueFilterProperties,
      ...findProperties,
      count: Type.Optional(
        Type.Boolean({
          description:
            'Also count the records the filters select (the whole list, whatever the cursor): exact up to 10,000, estimated above (`count.exact` says which)'
        })
      ),
      payload: Type.Optional(
        Type.Record(
          Type.String(),
          Type.Union([
            Type.String(),
            // An operator's value; a list operator (`in`, `contains`, `containsAny`) takes a list
            // (`payload[site][in][]=A&payload[site][in][]=B`, GraphQL's lists: values may hold commas) or, REST's short
            // form, values joined by commas (`payload[site][in]=A,B`), made a list before validation.
            Type.Object(
              {
                in: listValue('in'),
                contains: listValue('contains'),
                containsAny: listValue('containsAny')
              } satisfies Record<ListOperator, TSchema>,
              { additionalProperties: Type.String() }
            )
          ])
        )
      ),
      includeDeleted: Type.Optional(
        Type.Boolean({
          description: 'Also return soft-deleted records (with deletedAt); for incremental sync with updatedSince'
        })
      ),
      externalRef: Type.Optional(
        Type.String({ minLength: 1, maxLength: 200, description: 'The record with this source-system reference' })
      ),
      number: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 100,
          description: 'The record with this number, in any case, e.g. INC-2026-00042 or inc-2026-00042'
        })
      ),
      id: Type.Optional(
        Type.String({
          minLength: 36,
          maxLength: 37 * maxLimit,
          description: 'These records: ids separated by commas, at most `limit` of them'
        })
      )
    },
    { title: 'RecordQuery', additionalProperties: false }
  )
export type RecordQuery = Static<ReturnType<typeof recordQuerySchema>>

export const recordCreateValidator = compileData(recordCreateSchema)
export const recordPatchValidator = compileData(recordPatchSchema)
export const recordTransitionValidator = compileData(recordTransitionSchema)
export const recordQueryValidator = (maxLimit: number) => compileQuery(recordQuerySchema(maxLimit))
