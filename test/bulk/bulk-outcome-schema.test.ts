import t from '../helpers/tap.ts'
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import { toDocumentSchema } from '../../core/openapi/builder.ts'
import { bulkOutcomeLineSchema, bulkOutcomeParts, type BulkOutcomeLine } from '../../plugins/bulk/bulk.schema.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * The lines of a bulk answer are defined once, as TypeBox schemas: the service is typed by
 * them and the OpenAPI document is built from them, so the two cannot drift apart.
 */
const server = await startTestServer({ bulk: { maxRows: 4 } })
t.teardown(() => server.close())
const key = server.keys.acme
const path = '/api/modules/incident/bulk'
const spec = (token: string | null) => server.request('GET', '/api/docs/spec.json', { token })

// Its own Ajv with the data validator's options: the outcome line refers to its parts by `$id`, which the service's shared instances do not hold.
const ajv = addFormats.default(new Ajv({ allErrors: true, strict: false, schemas: bulkOutcomeParts }))
const validateLine = ajv.compile<BulkOutcomeLine>(bulkOutcomeLineSchema)

t.test(
  'the generic and the tenant document describe the outcome lines with the TypeBox schemas, and nothing of TypeBox leaks',
  async (t) => {
    for (const [name, token] of [
      ['generic', null],
      ['acme', key]
    ] as const) {
      const schemas = (await spec(token)).body.components.schemas
      for (const schema of [...bulkOutcomeParts, bulkOutcomeLineSchema])
        t.same(schemas[schema.$id!], toDocumentSchema(schema), `${name}: ${schema.$id}`)
      t.same(
        schemas.BulkOutcomeLine.oneOf,
        ['BulkRowLoaded', 'BulkRowValid', 'BulkRowError', 'BulkCallProblem', 'BulkSummary'].map((n) => ({
          $ref: `#/components/schemas/${n}`
        })),
        `${name}: a line is exactly one of its kinds`
      )
      t.same(
        schemas.BulkRowProblem.properties.errors.items.properties.allowed.items,
        { type: ['string', 'number', 'boolean', 'null'] },
        `${name}: an allowed value is any JSON scalar`
      )
      t.notOk(/"\$id"/.test(JSON.stringify(schemas)), `${name}: no component carries a TypeBox $id`)
    }
  }
)

t.test('every line of real bulk calls validates against the compiled TypeBox schema', async (t) => {
  const calls = [
    // Created, malformed, refused by the module schema (with its allowed values), then past the row limit of 4.
    await bulkCall(
      server.url,
      path,
      key,
      ndjson([
        { payload: incidentPayload(), externalRef: 'OUT-1' },
        '{"payload": {',
        { payload: incidentPayload({ severity: 'catastrophic' }) },
        { payload: incidentPayload() },
        { payload: incidentPayload() }
      ])
    ),
    // Updated and unchanged by externalRef.
    await bulkCall(
      server.url,
      path,
      key,
      ndjson([
        { payload: { title: 'changed' }, externalRef: 'OUT-1' },
        { payload: { title: 'changed' }, externalRef: 'OUT-1' }
      ])
    ),
    // A dry run.
    await bulkCall(
      server.url,
      `${path}?dryRun=true`,
      key,
      ndjson([{ payload: incidentPayload() }, { payload: { title: 'again' }, externalRef: 'OUT-1' }])
    ),
    // The same call twice under one Idempotency-Key: the second answers from the store.
    await bulkCall(server.url, path, key, ndjson([{ payload: incidentPayload() }, { payload: {} }]), {
      'Idempotency-Key': 'outcome-schema'
    }),
    await bulkCall(server.url, path, key, ndjson([{ payload: incidentPayload() }, { payload: {} }]), {
      'Idempotency-Key': 'outcome-schema'
    })
  ]
  const lines = calls.flatMap((c) => c.lines)
  for (const line of lines)
    t.ok(
      validateLine(line),
      `${JSON.stringify(line).slice(0, 120)}${validateLine.errors ? ` ${ajv.errorsText(validateLine.errors)}` : ''}`
    )
  const kinds = new Set(
    lines.map((l) =>
      'summary' in l
        ? `summary ${l.summary.complete ? 'complete' : 'incomplete'}`
        : `${l.status}${l.replayed ? ' replayed' : ''}`
    )
  )
  t.same(
    [...kinds].sort(),
    [
      'created',
      'created replayed',
      'error',
      'error replayed',
      'summary complete',
      'summary incomplete',
      'unchanged',
      'updated',
      'valid'
    ],
    'every kind of row outcome and both summaries were seen'
  )
})

t.test('the compiled schema refuses a line the document would refuse', async (t) => {
  t.notOk(
    validateLine({ line: 1, status: 'created', number: 'INC-2026-00001', version: 1 }),
    'a loaded row without its id'
  )
  t.notOk(
    validateLine({ line: 1, status: 'valid', action: 'create', id: '5b0f3c1e-7a2d-4e8f-9b1c-2d3e4f5a6b7c' }),
    'a member the line does not have'
  )
  t.notOk(
    validateLine({
      line: 1,
      status: 'error',
      problem: {
        status: 400,
        code: 'field.invalid',
        detail: 'x',
        errors: [{ pointer: '/a', field: 'a', code: 'enum', detail: 'x', allowed: [{}] }]
      }
    }),
    'an allowed value that is no JSON scalar'
  )
  t.ok(
    validateLine({ problem: { status: 500, code: 'internal.error', detail: 'The service failed while loading.' } }),
    "the call's own problem line"
  )
  t.notOk(
    validateLine({
      summary: {
        rows: 1,
        created: 1,
        updated: 0,
        unchanged: 0,
        valid: 0,
        errors: 0,
        replayed: 0,
        notAttempted: 0,
        dryRun: false
      }
    }),
    'a summary that does not say whether the call is complete'
  )
})
