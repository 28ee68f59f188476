import { describeModule } from '../../core/modules/derive/openapi.ts'
import {
  moduleKeySchema,
  operation,
  pathParam,
  queryParam,
  type DocContext,
  type Fragment,
  type Json,
  type JsonSchema
} from '../../core/openapi/builder.ts'
import { externalRefSchema } from '../records/records.shared.ts'
import { bulkLineSchema, bulkOutcomeLineSchema, bulkOutcomeParts, maxFirstLine } from './bulk.schema.ts'
import { idempotencyKeySchema } from '../../core/http/idempotency-key.ts'

const tag = 'Bulk load'
const ndjson = 'application/x-ndjson'
/** The other names of NDJSON the service accepts for the request. */
const ndjsonAliases = ['application/ndjson', 'application/jsonl']

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
          payload: {
            title: 'Slip in canteen',
            description: 'Slipped on a wet floor by the counter; no injury.',
            occurredAt: '2026-11-20T08:30:00Z',
            site: 'Leeds DC',
            category: 'near-miss',
            severity: 'low'
          },
          externalRef: 'EXAMPLE-REF-0001'
        },
        // A module the tenant has not installed (404), or whose package did not load (503).
        problems: [404, 503]
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
              description:
                'The record payload, as `POST /api/v1/records` takes it; when `externalRef` matches a live record, a JSON merge patch of its payload (the result is validated whole).'
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
          example: { payload: r.example, externalRef: 'EXAMPLE-REF-0001' },
          exampleNote: r.needs.length
            ? ` The example's ${r.needs.map((f) => `\`${f}\``).join(', ')} must be replaced by the id of a live record of this tenant.`
            : '',
          problems: []
        })
      }
    }
  }
  return {
    tags: [
      {
        name: tag,
        description:
          'Loading many records of one module in one streamed NDJSON call, with per-row outcomes, upserts by `externalRef`, dry runs and resumable retries.'
      }
    ],
    paths
  }
}

/** The bulk operation of one path: the request line schema and example differ per module, the rest is the same. */
function bulkOperation(
  ctx: DocContext,
  outcome: JsonSchema,
  o: {
    operationId: string
    summary: string
    line: JsonSchema
    example: Record<string, unknown>
    exampleNote?: string
    problems: number[]
  }
): Json {
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
      queryParam(
        'dryRun',
        'Check every row (numbering and writes included, in a transaction rolled back) and report `valid` or the error each would get; nothing is kept. A dry run ignores `Idempotency-Key`.',
        { type: 'boolean', default: false }
      ),
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
        // Its example is the operation's own (core/openapi/document.ts completeOperations).
        schema: { ...idempotencyKeySchema }
      }
    ],
    body: {
      schema: o.line,
      contentType: ndjson,
      description: `NDJSON: one JSON object per line. The schema is that of one line.${o.exampleNote ?? ''}`,
      example: o.example
    },
    responses: {
      200: {
        description:
          'NDJSON: one outcome line per row, in input order, then the summary line. The schema is that of ONE line.',
        schema: outcome,
        contentType: ndjson,
        headers: ['Cache-Control'],
        example: {
          line: 1,
          externalRef: 'EXAMPLE-REF-0001',
          status: 'created',
          id: '5b0f3c1e-7a2d-4e8f-9b1c-2d3e4f5a6b7c',
          number: 'INC-2026-00042',
          version: 1
        }
      }
    },
    problems: [...o.problems, 409, 415, 422]
  })
  for (const alias of ndjsonAliases) op.requestBody.content[alias] = { schema: o.line }
  return op
}

/** `BulkOutcomeLine`: one line of the answer, any of its kinds, with the components it refers to. */
function outcomeLine(ctx: DocContext): JsonSchema {
  ctx.define(...bulkOutcomeParts)
  return ctx.ref(bulkOutcomeLineSchema)
}
