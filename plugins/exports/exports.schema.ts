import { Type, type Static } from '@feathersjs/typebox'
import { compileData } from '../../core/validation.ts'
import { exportFormats } from './exports.shared.ts'

export const exportDataSchema = Type.Object(
  {
    moduleKey: Type.String({ minLength: 1 }),
    format: Type.Union(exportFormats.map((f) => Type.Literal(f))),
    filters: Type.Optional(
      Type.Object(
        {
          state: Type.Optional(Type.String({ minLength: 1 })),
          updatedSince: Type.Optional(Type.String({ format: 'date-time' })),
          externalRef: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          includeDeleted: Type.Optional(Type.Boolean()),
          payload: Type.Optional(
            Type.Record(Type.String(), Type.Union([Type.String(), Type.Record(Type.String(), Type.String())]))
          )
        },
        { additionalProperties: false, description: "The list endpoint's filters" }
      )
    ),
    columns: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        uniqueItems: true,
        maxItems: 200,
        description:
          'Column keys in order: number, state, createdAt, updatedAt, createdBy, updatedBy, externalRef, top-level fields and `<user field>.id`'
      })
    ),
    csvBom: Type.Optional(Type.Boolean({ description: 'CSV only: start with a UTF-8 byte order mark (for Excel)' })),
    values: Type.Optional(
      Type.Union([Type.Literal('keys'), Type.Literal('labels')], {
        description:
          'How states and choices are written: `keys` as stored (`property-damage`), `labels` by their labels (`Property damage`). Default: `keys` for CSV and XLSX, `labels` for PDF.'
      })
    )
  },
  { $id: 'ExportCreate', additionalProperties: false }
)
export type ExportData = Static<typeof exportDataSchema>
export const exportDataValidator = compileData(exportDataSchema)
