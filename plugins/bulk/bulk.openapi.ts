import { describeModule } from '../../core/modules/derive/openapi.ts'
import { moduleKeySchema, operation, pathParam, queryParam, type DocContext, type Fragment, type Json, type JsonSchema } from '../../core/openapi/builder.ts'
import { externalRefSchema } from '../records/records.shared.ts'
import { bulkLineSchema, maxFirstLine } from './bulk.schema.ts'
import { idempotencyKeySchema } from '../../core/http/idempotency-key.ts'

const tag = 'Bulk load'
const ndjson = 'application/x-ndjson'
/** The other names of NDJSON the service accepts for the request. */
const ndjsonAliases = ['application/ndjson', 'application/jsonl']

/** The members every row outcome shares. */
const lineOf = {
  line: { type: 'integer', minimum: 1, description: 'The line number in the request body, counted from `firstLine` (1 unless the query says otherwise); blank lines count, but get no outcome.' },
  externalRef: { type: 'string', description: 'The row\'s `externalRef`, when it had one.' }
}
const replayed = { type: 'boolean', const: true, description: 'The stored outcome of this line from an earlier call with the same `Idempotency-Key`; nothing was written again.' }

/**
 * The generic document has one templated path; a tenant document has one path per module
 * (`/api/modules/incident/bulk`), so that each request line is typed by its module's payload,
 * which a `{moduleKey}` parameter cannot select.
 */
export function describeBulk(ctx: DocContext): Fragment {
  const outcome = outcomeLine(ctx)
  const paths: Fragment['paths'] = {}
  if (!ctx.modules.length) {
    paths['/api/modules/{moduleKey}/bulk'] = {
      parameters: [pathParam('moduleKey', 'The module to load records into.', moduleKeySchema, 'incident')],
      post: bulkOperation(ctx, outcome, {
        operationId: 'bulkLoadRecords',
        summary: 'Load many records of one module from NDJSON',
        line: ctx.ref(bulkLineSchema),
        // A whole incident (the bundled module) with nothing that must exist first.
        example: {
          payload: { title: 'Slip in canteen', description: 'Slipped on a wet floor by the counter; no injury.', occurredAt: '2026-11-20T08:30:00Z', site: 'Leeds DC', category: 'near-miss', severity: 'low' },
          externalRef: 'HR-2291'
        },
        // A module the tenant has not installed.
        problems: [404]
      })
    }
  } else {
    const externalRef = ctx.ref(externalRefSchema, 'ExternalRef')
    for (const m of ctx.modules) {
      const r = describeModule(ctx, m)
      const line = ctx.ref(
        {
          type: 'object',
          title: `${m.definition.title} bulk line`,
          description: `One input line for module \`${r.key}\`.`,
          required: ['payload'],
          properties: {
            payload: {
              anyOf: [r.payload, r.payloadPatch],
              description: 'The record payload, as `POST /api/v1/records` takes it; when `externalRef` matches a live record, a JSON merge patch of its payload (the result is validated whole).'
            },
            externalRef
          },
          additionalProperties: false
        },
        `${r.name}BulkLine`
      )
      paths[`/api/modules/${r.key}/bulk`] = {
        post: bulkOperation(ctx, outcome, {
          operationId: `bulkLoad${r.name}Records`,
          summary: `Load many ${m.definition.title} records from NDJSON`,
          line,
          example: { payload: r.example, externalRef: 'HR-2291' },
          exampleNote: r.needs.length ? ` The example's ${r.needs.map((f) => `\`${f}\``).join(', ')} must be replaced by the id of a live record of this tenant.` : '',
          problems: []
        })
      }
    }
  }
  return {
    tags: [
      {
        name: tag,
        description: 'Loading many records of one module in one streamed NDJSON call, with per-row outcomes, upserts by `externalRef`, dry runs and resumable retries.'
      }
    ],
    paths
  }
}

/** The bulk operation of one path: the request line schema and example differ per module, the rest is the same. */
function bulkOperation(ctx: DocContext, outcome: JsonSchema, o: { operationId: string; summary: string; line: JsonSchema; example: Record<string, unknown>; exampleNote?: string; problems: number[] }): Json {
  const { config } = ctx
  const limits = { ...config.limits, ...(ctx.tenant ? config.tenants[ctx.tenant.id]?.limits : undefined) }
  const op = operation({
    operationId: o.operationId,
    tag,
    summary: o.summary,
    description: [
      `Creates (or, by \`externalRef\`, updates) up to ${config.bulk.maxRows} records of one module per call. Request and answer are NDJSON and both stream: outcomes come back while the upload goes on. Every row goes through the checks of \`POST /api/v1/records\` (rights, field rules, the module schema, references, numbering, activity).`,
      `**Request**: one JSON object per line (the schema below is that of ONE line); \`Content-Type\` \`application/x-ndjson\` (or \`application/ndjson\`, \`application/jsonl\`). Lines of at most ${config.http.maxJsonBytes} bytes; blank lines are skipped. A row whose \`externalRef\` belongs to a live record of the module updates it (a merge patch, needing the \`update\` right); otherwise it creates a record that keeps the reference. Rows are applied in order.`,
      `**Answer**: 200 and one outcome line per row in input order, each sent once its batch (${config.bulk.batchSize} rows, or what arrived within ${config.bulk.flushAfterMs} ms) has committed; then a \`summary\` line (the schema of the answer is that of ONE line). A row that fails gets its own \`error\` line with a \`problem\`; rows past ${config.bulk.maxRows} get \`bulk.row_limit\` each, and the summary then says \`complete: false\`, how many rows were \`notAttempted\` and the \`resumeAtLine\` to send the rest from (with \`?firstLine=\` that line, so outcomes keep the file's line numbers).`,
      `Refusals of the whole call come before any line, as problem responses: ${o.problems.includes(404) ? '404 `module.not_found`, ' : ''}415 (content type), 400 (an unknown query parameter, a \`firstLine\` that is not a whole number from 1 to ${maxFirstLine}, a malformed \`Idempotency-Key\`, or \`bulk.newlines_missing\`: the first row holds several JSON objects back to back, as \`curl -d @file\` makes of a file by stripping its newlines; send it with \`--data-binary @file\`), 403 (no \`bulk:write\` scope, neither \`create\` nor \`update\` right), 409/422 (\`Idempotency-Key\`), 429 \`bulk.too_many_concurrent\` with \`Retry-After\` (this tenant already runs ${limits.bulkConcurrency} bulk calls) or the request rate limit.`
    ].join('\n\n'),
    scope: 'bulk:write',
    parameters: [
      queryParam('dryRun', 'Check every row (numbering and writes included, in a transaction rolled back) and report `valid` or the error each would get; nothing is kept. A dry run ignores `Idempotency-Key`.', { type: 'boolean', default: false }),
      queryParam(
        'firstLine',
        `The number of the body's first line in the client's file, so that each outcome's \`line\` (and \`resumeAtLine\`) maps back to the file when it is sent in parts: the second half of a 20,000-line file is sent with \`firstLine=10001\`. Decimal digits, 1 to ${maxFirstLine}; anything else is 400 \`field.invalid\` naming \`firstLine\`. Dry runs number the same way; an \`Idempotency-Key\` is bound to it (another \`firstLine\` with the same key: 422 \`idempotency.key_reused\`).`,
        { type: 'integer', minimum: 1, maximum: maxFirstLine, default: 1 },
        { example: 10001 }
      ),
      {
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description: `Names the call (per credential, kept ${config.idempotency.retentionHours} hours), and with a line number each row. A retry replays the stored outcome of every line already loaded (\`"replayed": true\`) and loads the rest, e.g. after a disconnect; a line that differs from the one first sent under its number gets \`idempotency.line_changed\`. The key is bound to its module (another: 422 \`idempotency.key_reused\`); while the first call runs, 409 \`idempotency.in_flight\`.`,
        schema: { ...idempotencyKeySchema },
        example: '5f0c8a52-8d59-4bcb-9d36-2f2c1a9e0c11'
      }
    ],
    body: { schema: o.line, contentType: ndjson, description: `NDJSON: one JSON object per line. The schema is that of one line.${o.exampleNote ?? ''}`, example: o.example },
    responses: {
      200: {
        description: 'NDJSON: one outcome line per row, in input order, then the summary line. The schema is that of ONE line.',
        schema: outcome,
        contentType: ndjson,
        headers: ['Cache-Control'],
        example: { line: 1, externalRef: 'HR-2291', status: 'created', id: '5b0f3c1e-7a2d-4e8f-9b1c-2d3e4f5a6b7c', number: 'INC-2026-00042', version: 1 }
      }
    },
    problems: [...o.problems, 409, 415, 422]
  })
  for (const alias of ndjsonAliases) op.requestBody.content[alias] = { schema: o.line }
  return op
}

/** `BulkOutcomeLine`: one line of the answer, any of its kinds. */
function outcomeLine(ctx: DocContext): JsonSchema {
  const problem = ctx.ref(
    {
      type: 'object',
      title: 'Row problem',
      description: 'Why a row was not loaded: the `status`, `code` and `detail` a single create would have answered with, and that code\'s details (e.g. `errors` for `field.invalid`, `field` for `field.forbidden`, `missing` for `permission.denied`).',
      required: ['status', 'code', 'detail'],
      properties: {
        status: { type: 'integer', minimum: 400, maximum: 599 },
        code: {
          type: 'string',
          description:
            '`row.malformed_json`, `bulk.newlines_missing` (400: the line holds several JSON objects back to back; each row needs its own line), `row.too_large` (413), `field.invalid`, `field.forbidden`, `permission.denied`, `scope.missing`, `record.external_ref_taken` (409), `bulk.row_limit` (413: past the row limit, not attempted), `idempotency.line_changed` (422), `row.refused` (422, with `sqlState`: the database refused this row alone; the rest of its batch loaded), `bulk.not_loaded` (503: its batch failed in the database); on the call\'s own problem line, `internal.error` (500).',
          examples: ['field.invalid']
        },
        detail: { type: 'string' },
        errors: {
          type: 'array',
          description: 'Validation failures, one per field (code `field.invalid`).',
          items: {
            type: 'object',
            required: ['pointer', 'field', 'code', 'detail'],
            properties: { pointer: { type: 'string' }, field: { type: 'string' }, code: { type: 'string' }, detail: { type: 'string' }, allowed: { type: 'array', description: 'The values it may take, where there is a fixed set.', items: { type: ['string', 'number', 'boolean', 'null'] } } }
          }
        }
      }
    },
    'BulkRowProblem'
  )
  const written = ctx.ref(
    {
      type: 'object',
      title: 'Row loaded',
      description: '`created`: a new record (version 1); `updated`: the record with this `externalRef` was changed; `unchanged`: it already held these values.',
      required: ['line', 'status', 'id', 'number', 'version'],
      properties: {
        ...lineOf,
        status: { type: 'string', enum: ['created', 'updated', 'unchanged'] },
        id: { type: 'string', format: 'uuid' },
        number: { type: 'string', examples: ['INC-2026-00042'] },
        version: { type: 'integer', minimum: 1 },
        replayed
      },
      additionalProperties: false
    },
    'BulkRowLoaded'
  )
  const valid = ctx.ref(
    {
      type: 'object',
      title: 'Row valid (dry run)',
      description: 'Dry run: the row would load, creating a record, updating the one with its `externalRef`, or changing nothing.',
      required: ['line', 'status', 'action'],
      properties: { ...lineOf, status: { type: 'string', const: 'valid' }, action: { type: 'string', enum: ['create', 'update', 'none'] } },
      additionalProperties: false
    },
    'BulkRowValid'
  )
  const failed = ctx.ref(
    {
      type: 'object',
      title: 'Row not loaded',
      required: ['line', 'status', 'problem'],
      properties: { ...lineOf, status: { type: 'string', const: 'error' }, problem, replayed },
      additionalProperties: false
    },
    'BulkRowError'
  )
  const callProblem = ctx.ref(
    {
      type: 'object',
      title: 'Bulk call failed',
      description: 'A batch failed in the database: its rows got `bulk.not_loaded`, reading stopped, and this line comes just before the summary (`complete: false`, with `resumeAtLine`). Retry with the same `Idempotency-Key` to continue.',
      required: ['problem'],
      properties: { problem },
      additionalProperties: false
    },
    'BulkCallProblem'
  )
  const summary = ctx.ref(
    {
      type: 'object',
      title: 'Bulk summary',
      description: 'The last line: counts of every outcome sent (replayed ones included), and whether the call is complete.',
      required: ['summary'],
      properties: {
        summary: {
          type: 'object',
          required: ['rows', 'created', 'updated', 'unchanged', 'valid', 'errors', 'replayed', 'notAttempted', 'dryRun', 'complete'],
          properties: {
            rows: { type: 'integer', minimum: 0, description: 'Rows read (blank lines are not rows).' },
            created: { type: 'integer', minimum: 0 },
            updated: { type: 'integer', minimum: 0 },
            unchanged: { type: 'integer', minimum: 0 },
            valid: { type: 'integer', minimum: 0 },
            errors: { type: 'integer', minimum: 0, description: '`error` outcomes, the `notAttempted` ones included.' },
            replayed: { type: 'integer', minimum: 0, description: 'Outcomes answered from the store of the `Idempotency-Key`.' },
            notAttempted: { type: 'integer', minimum: 0, description: 'Rows read that got no verdict of their own: `bulk.row_limit` (past the row limit) or `bulk.not_loaded` (their batch failed). Sending them again can load them.' },
            dryRun: { type: 'boolean' },
            complete: {
              type: 'boolean',
              description:
                '`true`: the whole body was read and every row has a final outcome (created, updated, unchanged, valid, or an error of its own that sending it again would not change). `false`: the load stopped early or left rows unattempted (rows past the row limit, a failed batch); `resumeAtLine` says where to go on.'
            },
            resumeAtLine: {
              type: 'integer',
              minimum: 1,
              description:
                'Only when `complete` is false: the first line (numbered from `firstLine`) without a final outcome; every line before it has one. Past the row limit, nothing from this line on was attempted: send those lines in a new call with `?firstLine=` this number. After a failed batch, send the same body again with the same `Idempotency-Key` (lines already loaded are replayed, not written twice).'
            }
          },
          additionalProperties: false
        }
      },
      additionalProperties: false
    },
    'BulkSummary'
  )
  return ctx.ref({ title: 'Bulk outcome line', description: 'One line of the NDJSON answer.', oneOf: [written, valid, failed, callProblem, summary] }, 'BulkOutcomeLine')
}
