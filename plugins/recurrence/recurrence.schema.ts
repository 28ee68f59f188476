import { Type, type Static } from '@feathersjs/typebox'
import { compileData, compileQuery } from '../../core/validation.ts'

/** A series as the API shows it (GET/PATCH /api/v1/record-series). */
export const seriesSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    moduleKey: Type.String(),
    per: Type.Union([
      Type.Object({
        field: Type.String({ description: "The module's recurrence `per` field." }),
        value: Type.Union([Type.String(), Type.Null()], {
          description:
            'The option, or the id of the referenced record, this series writes to it; null when the caller may not read that field or, for a reference, the module it references.'
        })
      }),
      Type.Null()
    ]),
    state: Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('ended')]),
    startsAt: Type.String({ format: 'date-time', description: 'Period k begins k periods after this.' }),
    nextPeriod: Type.Integer({ minimum: 1, description: 'The next period the series makes a record for.' }),
    nextAt: Type.String({ format: 'date-time', description: 'When that period begins (its record is made then).' }),
    made: Type.Integer({ minimum: 0, description: 'Records the series has made.' }),
    lastRecordId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
    updatedAt: Type.String({ format: 'date-time' })
  },
  { $id: 'RecordSeries', additionalProperties: false }
)
export type SeriesOut = Static<typeof seriesSchema>

export const seriesQuerySchema = Type.Object(
  {
    moduleKey: Type.String({ minLength: 1, maxLength: 200, description: 'The module whose series are listed.' }),
    state: Type.Optional(
      Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('ended')], {
        description: 'Only series in this state.'
      })
    )
  },
  { title: 'RecordSeriesQuery', additionalProperties: false }
)
export type SeriesQuery = Static<typeof seriesQuerySchema>

export const seriesPatchSchema = Type.Object(
  {
    state: Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('ended')], {
      description:
        'paused: no records until resumed; active (resume): the periods that began while paused are skipped, but the current one is made; ended: for good.'
    })
  },
  { $id: 'RecordSeriesPatch', additionalProperties: false }
)
export type SeriesPatch = Static<typeof seriesPatchSchema>

export const seriesQueryValidator = compileQuery(seriesQuerySchema)
export const seriesPatchValidator = compileData(seriesPatchSchema)
