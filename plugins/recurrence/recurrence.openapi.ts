import { operation, pathParam, queryParamsOf, type DocContext, type Fragment } from '../../core/openapi/builder.ts'
import { seriesPatchSchema, seriesQuerySchema, seriesSchema } from './recurrence.schema.ts'
import { seriesPath } from './recurrence.shared.ts'

const tag = 'Records'

/**
 * /api/v1/record-series: the series of the tenant's modules that declare a recurrence (module keys enumerated per
 * tenant). A tenant none of whose modules recurs has none, and its document does not offer the paths.
 */
export function describeRecurrence(ctx: DocContext): Fragment {
  const recurring = ctx.modules.filter((m) => m.definition.recurrence).map((m) => m.definition.key)
  if (!recurring.length) return { tags: [], paths: {} }
  const series = ctx.ref(seriesSchema)
  const id = pathParam('id', 'The series id (UUID).', { type: 'string', format: 'uuid' })
  return {
    tags: [],
    paths: {
      [`/${seriesPath}`]: {
        get: operation({
          operationId: 'listRecordSeries',
          tag,
          summary: "List a module's record series",
          description:
            'The series of a module\'s recurrence (docs/modules.md, "Recurrence"): one, one per option of its `per` choice field, or one per record its `per` reference names, each making a record per period through the records write path. Needs the module\'s `read` right; a module without a recurrence is 400.',
          scope: 'records:read',
          parameters: queryParamsOf(seriesQuerySchema, { moduleKey: { schema: { type: 'string', enum: recurring } } }),
          responses: {
            200: {
              description: 'The series.',
              schema: { type: 'object', required: ['items'], properties: { items: { type: 'array', items: series } } }
            }
          },
          // A module the tenant has not installed.
          problems: [404]
        })
      },
      [`/${seriesPath}/{id}`]: {
        parameters: [id],
        get: operation({
          operationId: 'getRecordSeries',
          tag,
          summary: 'Get a record series',
          scope: 'records:read',
          responses: { 200: { description: 'The series.', schema: series } },
          problems: [404]
        }),
        patch: operation({
          operationId: 'updateRecordSeries',
          tag,
          summary: 'Pause, resume or end a record series',
          description:
            "Needs the module's `update` right. Resuming skips the periods that began while the series was paused, except the current one, whose record the next run makes. An ended series stays ended: 409 `series.ended`.",
          scope: 'records:write',
          // No example body: a fresh tenant has no series for the examples' check (test/openapi/examples.test.ts) to send it to.
          body: { schema: ctx.ref(seriesPatchSchema), description: 'e.g. `{ "state": "paused" }`' },
          responses: { 200: { description: 'The series as it is now.', schema: series } },
          problems: [404, 409, 413, 415]
        })
      }
    }
  }
}
