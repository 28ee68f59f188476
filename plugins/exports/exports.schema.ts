import { Type, type Static, type TSchema } from '@feathersjs/typebox'
import { systemFields, type SystemField } from '../../core/modules/system-fields.ts'
import { compileData } from '../../core/validation.ts'
import { dateFilterProperties, dueFilterProperties, findProperties } from '../records/records.shared.ts'
import { exportContentTypes, exportFormats } from './exports.shared.ts'

/** The list endpoint's filters, as an export is asked for with them and reports them. */
const exportFilters = {
  state: Type.Optional(Type.String({ minLength: 1 })),
  ...dateFilterProperties,
  ...dueFilterProperties,
  ...findProperties,
  externalRef: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  includeDeleted: Type.Optional(Type.Boolean()),
  payload: Type.Optional(
    Type.Record(Type.String(), Type.Union([Type.String(), Type.Record(Type.String(), Type.String())]))
  )
}
/** The record's system fields that have an export column, in their order. */
const systemColumnKeys = systemFields.filter((f: SystemField) => f.column).map((f) => f.key)
const valuesSchema = (description: string) =>
  Type.Union([Type.Literal('keys'), Type.Literal('labels')], { description })

export const exportDataSchema = Type.Object(
  {
    moduleKey: Type.String({ minLength: 1 }),
    format: Type.Union(exportFormats.map((f) => Type.Literal(f))),
    filters: Type.Optional(
      Type.Object(exportFilters, { additionalProperties: false, description: "The list endpoint's filters" })
    ),
    columns: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        uniqueItems: true,
        maxItems: 200,
        description: `Column keys in order: ${systemColumnKeys.join(', ')}, top-level fields and \`<user field>.id\``
      })
    ),
    csvBom: Type.Optional(Type.Boolean({ description: 'CSV only: start with a UTF-8 byte order mark (for Excel)' })),
    values: Type.Optional(
      valuesSchema(
        'How states and choices are written: `keys` as stored (`property-damage`), `labels` by their labels (`Property damage`). Default: `keys` for CSV and XLSX, `labels` for PDF.'
      )
    )
  },
  { $id: 'ExportCreate', additionalProperties: false }
)
export type ExportData = Static<typeof exportDataSchema>
export const exportDataValidator = compileData(exportDataSchema)

const exportStatuses = ['queued', 'running', 'succeeded', 'failed', 'expired'] as const

/** The job's counters are PostgreSQL integers. */
const int4 = 2 ** 31 - 1
const nullable = <T extends TSchema>(schema: T, description?: string) =>
  Type.Union([schema, Type.Null()], description ? { description } : {})
const time = () => Type.String({ format: 'date-time' })

/** Why an export failed, as a problem response would say it (with that code's details beside). */
export const exportProblemSchema = Type.Object(
  {
    status: Type.Integer({ minimum: 400, maximum: 599 }),
    code: Type.String({ examples: ['export.failed'] }),
    detail: Type.String()
  },
  {
    title: 'Export problem',
    description:
      "Why the export failed: `status`, `code` and `detail` as a problem response would carry them (e.g. `export.failed`, `export.attempts_exhausted`, or the refusal that stopped the render), with that code's details."
  }
)

/**
 * An export job as `GET /api/v1/exports/{id}` answers it in any state: the REST output
 * (exports.class.ts), the OpenAPI `ExportJobBase` that each state's schema narrows
 * (exports.openapi.ts) and the GraphQL `Export` type (exports.graphql.ts) derive from it.
 */
export const exportJobSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    moduleKey: Type.String(),
    format: Type.Union(exportFormats.map((f) => Type.Literal(f))),
    status: Type.Union(
      exportStatuses.map((s) => Type.Literal(s)),
      { description: 'queued → running → succeeded → expired, or failed' }
    ),
    filters: Type.Object(exportFilters, {
      additionalProperties: false,
      description: 'The filters as asked for (`{}` for none).'
    }),
    columns: nullable(
      Type.Array(Type.String()),
      "The columns as asked for; null: the default (CSV and XLSX: all the requester may read; PDF: Number, State, the module's summary columns and Created)."
    ),
    values: valuesSchema('How states and choices are written: as stored (`keys`) or by their labels.'),
    progress: Type.Object({
      rowsDone: Type.Integer({ minimum: 0, maximum: int4 }),
      rowsTotal: nullable(Type.Integer({ minimum: 0, maximum: int4 }), 'Known once the job runs.')
    }),
    queuePosition: nullable(
      Type.Integer({ minimum: 1, maximum: int4 }),
      "Queued jobs only: its place in the tenant's queue (1 = next)."
    ),
    attempts: Type.Integer({
      minimum: 0,
      maximum: int4,
      description:
        'Times the job was started, counting neither waits for a slot nor hand-overs by an instance shutting down.'
    }),
    createdAt: time(),
    startedAt: nullable(time(), 'When the first run started.'),
    finishedAt: nullable(time()),
    expiresAt: nullable(time(), 'When the file is removed (succeeded jobs).'),
    links: Type.Object({ self: Type.String() }),
    file: Type.Optional(
      Type.Object(
        {
          name: Type.String({
            description: 'The name it downloads under, `<module>-export-<date>.<format>`.',
            examples: ['incident-export-2026-11-22.csv']
          }),
          contentType: Type.Union(Object.values(exportContentTypes).map((c) => Type.Literal(c))),
          // A file may pass 2 GiB: not a GraphQL Int.
          size: Type.Integer({ minimum: 0, description: 'Bytes.' })
        },
        { description: 'Succeeded jobs: the file.' }
      )
    ),
    download: Type.Optional(
      Type.Object(
        {
          method: Type.Literal('GET'),
          url: Type.String({ format: 'uri' }),
          headers: Type.Record(Type.String(), Type.String()),
          expiresAt: time()
        },
        { description: 'Succeeded jobs: a short-lived signed URL to fetch the file.' }
      )
    ),
    problem: Type.Optional(exportProblemSchema)
  },
  { title: 'Export job (any state)' }
)
export type ExportJob = Static<typeof exportJobSchema>
