import { StringEnum, Type, type SchemaOptions, type Static, type TSchema, type TUnion } from '@feathersjs/typebox'
import { compileData, compileQuery } from '../../core/validation.ts'
import { externalRefSchema } from '../records/records.shared.ts'

/** One NDJSON input line: the payload of a record, and optionally the source system's reference (upsert key). */
export const bulkLineSchema = Type.Object(
  {
    payload: Type.Object(
      {},
      { additionalProperties: true, description: 'The record payload, as for POST /api/v1/records' }
    ),
    externalRef: Type.Optional(externalRefSchema)
  },
  { $id: 'BulkLine', additionalProperties: false }
)
export const bulkLineValidator = compileData(bulkLineSchema)

/** The largest `firstLine`: far past any file split into calls, and well inside the 32-bit line numbers outcomes are stored under. */
export const maxFirstLine = 1_000_000_000

export const bulkQuerySchema = Type.Object(
  {
    dryRun: Type.Optional(
      Type.Boolean({ description: 'Check every row and report what would happen, writing nothing' })
    ),
    firstLine: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: maxFirstLine,
        description: "The number of the body's first line in the client's file; outcomes number lines from it"
      })
    )
  },
  { $id: 'BulkQuery', additionalProperties: false }
)
export type BulkQuery = Static<typeof bulkQuerySchema>
export const bulkQueryValidator = compileQuery(bulkQuerySchema)

/*
 * The answer: one outcome line per row, then the summary. These schemas are the one
 * definition of those lines: the service's types are their `Static`, and the OpenAPI
 * document names each by its `$id` (bulk.openapi.ts), so a member added here is typed
 * and documented at once.
 */

/** Any JSON scalar, written as a list of types as the document always has (a TypeBox union would make it an `anyOf` of four schemas). */
const scalar = Type.Unsafe<string | number | boolean | null>({ type: ['string', 'number', 'boolean', 'null'] })

/** A `oneOf` (TypeBox 0.25 builds only `anyOf`): the branches exclude each other, which is what the document says of them. */
function oneOf<T extends TSchema[]>(schemas: [...T], options: SchemaOptions) {
  return Type.Unsafe<Static<TUnion<T>>>({ ...options, oneOf: schemas })
}

const rowProblemShape = Type.Object(
  {
    status: Type.Integer({ minimum: 400, maximum: 599 }),
    code: Type.String({
      description:
        "`row.malformed_json`, `bulk.newlines_missing` (400: the line holds several JSON objects back to back; each row needs its own line), `row.too_large` (413), `field.invalid`, `field.forbidden`, `permission.denied`, `scope.missing`, `record.external_ref_taken` (409), `field.locked` (409: the record's state locks a field the row changes), `record.migration_refused` (409: the record is stored under an older module version the loaded one refuses; correct it with a PATCH), `bulk.row_limit` (413: past the row limit, not attempted), `request.too_costly` (422: past the call's work budget, not attempted), `idempotency.line_changed` (422), `row.refused` (422, with `sqlState`: the database refused this row alone; the rest of its batch loaded), `bulk.not_loaded` (503: its batch failed in the database); on the call's own problem line, `internal.error` (500) or `service.shutting_down` (503: the instance drains; resume at `resumeAtLine`).",
      examples: ['field.invalid']
    }),
    detail: Type.String(),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          pointer: Type.String(),
          field: Type.String(),
          code: Type.String(),
          detail: Type.String(),
          allowed: Type.Optional(
            Type.Array(scalar, { description: 'The values it may take, where there is a fixed set.' })
          )
        }),
        { description: 'Validation failures, one per field (code `field.invalid`).' }
      )
    )
  },
  {
    $id: 'BulkRowProblem',
    title: 'Row problem',
    description:
      "Why a row was not loaded: the `status`, `code` and `detail` a single create would have answered with, and that code's details (e.g. `errors` for `field.invalid`, `field` for `field.forbidden`, `missing` for `permission.denied`)."
  }
)
/** Why a row was not loaded. Open: each code brings its own details (`field`, `missing`, `sqlState`), so the type has the index signature TypeBox 0.25 gives no object. */
export const bulkRowProblemSchema = Type.Unsafe<Static<typeof rowProblemShape> & { [detail: string]: unknown }>(
  rowProblemShape
)
export type BulkRowProblem = Static<typeof bulkRowProblemSchema>

/** The members every row outcome shares. */
const lineOf = {
  line: Type.Integer({
    minimum: 1,
    description:
      'The line number in the request body, counted from `firstLine` (1 unless the query says otherwise); blank lines count, but get no outcome.'
  }),
  externalRef: Type.Optional(Type.String({ description: "The row's `externalRef`, when it had one." }))
}
const replayed = Type.Optional(
  Type.Literal(true, {
    description:
      'The stored outcome of this line from an earlier call with the same `Idempotency-Key`; nothing was written again.'
  })
)

export const bulkRowLoadedSchema = Type.Object(
  {
    ...lineOf,
    status: StringEnum(['created', 'updated', 'unchanged']),
    id: Type.String({ format: 'uuid' }),
    number: Type.String({ examples: ['INC-2026-00042'] }),
    version: Type.Integer({ minimum: 1 }),
    replayed
  },
  {
    $id: 'BulkRowLoaded',
    title: 'Row loaded',
    description:
      '`created`: a new record (version 1); `updated`: the record with this `externalRef` was changed; `unchanged`: it already held these values.',
    additionalProperties: false
  }
)

export const bulkRowValidSchema = Type.Object(
  { ...lineOf, status: Type.Literal('valid'), action: StringEnum(['create', 'update', 'none']) },
  {
    $id: 'BulkRowValid',
    title: 'Row valid (dry run)',
    description:
      'Dry run: the row would load, creating a record, updating the one with its `externalRef`, or changing nothing.',
    additionalProperties: false
  }
)

export const bulkRowErrorSchema = Type.Object(
  { ...lineOf, status: Type.Literal('error'), problem: Type.Ref(bulkRowProblemSchema), replayed },
  { $id: 'BulkRowError', title: 'Row not loaded', additionalProperties: false }
)

/** One row's outcome: what the tally counts and an `Idempotency-Key` stores. */
export type Outcome =
  Static<typeof bulkRowLoadedSchema> | Static<typeof bulkRowValidSchema> | Static<typeof bulkRowErrorSchema>

export const bulkCallProblemSchema = Type.Object(
  { problem: Type.Ref(bulkRowProblemSchema) },
  {
    $id: 'BulkCallProblem',
    title: 'Bulk call failed',
    description:
      "The call stopped early; this line comes just before the summary (`complete: false`, with `resumeAtLine`). A batch failed in the database (`internal.error`, or the database's problem): its rows got `bulk.not_loaded` and reading stopped; retry with the same `Idempotency-Key` to continue. Or the instance began shutting down (`service.shutting_down`, 503): it read no row past the last outcome, every row it took has its outcome, and the rest go again from `resumeAtLine` (another instance answers).",
    additionalProperties: false
  }
)

const count = (description?: string) => Type.Integer({ minimum: 0, ...(description ? { description } : {}) })

const summarySchema = Type.Object(
  {
    rows: count('Rows read (blank lines are not rows).'),
    created: count(),
    updated: count(),
    unchanged: count(),
    valid: count(),
    errors: count('`error` outcomes, the `notAttempted` ones included.'),
    replayed: count('Outcomes answered from the store of the `Idempotency-Key`.'),
    notAttempted: count(
      "Rows read that got no verdict of their own: `bulk.row_limit` (past the row limit), `request.too_costly` (past the call's work budget) or `bulk.not_loaded` (their batch failed). Sending them again can load them."
    ),
    dryRun: Type.Boolean(),
    complete: Type.Boolean({
      description:
        '`true`: the whole body was read and every row has a final outcome (created, updated, unchanged, valid, or an error of its own that sending it again would not change). `false`: the load stopped early or left rows unattempted (rows past the row limit, a failed batch); `resumeAtLine` says where to go on.'
    }),
    resumeAtLine: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          'Only when `complete` is false: the first line (numbered from `firstLine`) without a final outcome; every line before it has one. Past the row limit, nothing from this line on was attempted: send those lines in a new call with `?firstLine=` this number. After a failed batch, send the same body again with the same `Idempotency-Key` (lines already loaded are replayed, not written twice).'
      })
    )
  },
  { additionalProperties: false }
)
/** The counts of the last line of a bulk answer. */
export type BulkSummary = Static<typeof summarySchema>

export const bulkSummaryLineSchema = Type.Object(
  { summary: summarySchema },
  {
    $id: 'BulkSummary',
    title: 'Bulk summary',
    description:
      'The last line: counts of every outcome sent (replayed ones included), and whether the call is complete.',
    additionalProperties: false
  }
)

/** Every named schema the outcome line refers to, for a validator or document that resolves its `$ref`s. */
export const bulkOutcomeParts = [
  bulkRowProblemSchema,
  bulkRowLoadedSchema,
  bulkRowValidSchema,
  bulkRowErrorSchema,
  bulkCallProblemSchema,
  bulkSummaryLineSchema
]

export const bulkOutcomeLineSchema = oneOf(
  [
    Type.Ref(bulkRowLoadedSchema),
    Type.Ref(bulkRowValidSchema),
    Type.Ref(bulkRowErrorSchema),
    Type.Ref(bulkCallProblemSchema),
    Type.Ref(bulkSummaryLineSchema)
  ],
  { $id: 'BulkOutcomeLine', title: 'Bulk outcome line', description: 'One line of the NDJSON answer.' }
)
/** Any line of a bulk answer. */
export type BulkOutcomeLine = Static<typeof bulkOutcomeLineSchema>
