import t from '../helpers/tap.ts'
import { loadConfig } from '../../core/config.ts'
import { fieldToFilter } from '../../core/modules/derive/filters.ts'
import { fieldTypes } from '../../core/modules/types.ts'
import { idempotencyKeySchema } from '../../core/http/idempotency-key.ts'
import { buildDocument } from '../../core/openapi/document.ts'
import { descriptionsOf } from '../../core/plugin.ts'
import { plugins } from '../../plugins/index.ts'
import { recordQuerySchema } from '../../plugins/records/records.schema.ts'

/**
 * What the document says that the code also says is derived from the code, not kept by
 * hand beside it: the list filters from the query schema the service validates with, the
 * field types from the field-type table, the Idempotency-Key format from its one definition.
 */
const config = loadConfig({})
const document = buildDocument({
  config,
  describes: descriptionsOf(plugins),
  publicUrl: 'https://records.example.com',
  errorsUrl: 'https://records.example.com/errors'
}) as any

t.test('the records list documents exactly the query parameters the service accepts, each described', async (t) => {
  const params = document.paths['/api/v1/records'].get.parameters as Array<{
    name: string
    description: string
    required: boolean
  }>
  const schema = recordQuerySchema(config.pagination.maxLimit)
  t.same(params.map((p) => p.name).sort(), Object.keys(schema.properties).sort())
  for (const p of params) t.ok(p.description.length > 10, `${p.name} is described`)
  // moduleKey may be left out only to find records by number across modules: the service says so when it is missing.
  t.same(
    params.filter((p) => p.required).map((p) => p.name),
    []
  )
  t.match(params.find((p) => p.name === 'moduleKey')!.description, /Required, except to find records by `number`/)
  t.match(params.find((p) => p.name === 'payload')!.description, /`ne`, `in`/)
})

t.test('the payload filter description names each type with its operators from the filter table', async (t) => {
  const params = document.paths['/api/v1/records'].get.parameters as Array<{ name: string; description: string }>
  const text = params.find((p) => p.name === 'payload')!.description
  for (const [type, spec] of Object.entries(fieldToFilter)) {
    if (!spec) continue
    t.match(text, new RegExp(`${type}[^;]*: ${spec.operators.map((op) => `\`${op}\``).join(', ')}`), type)
  }
  t.match(text, /`payload\[group\.member\]`: a record matches when at least one item/, 'group members')
})

t.test("a module field's type in the document lists every field type the module API has", async (t) => {
  const json = JSON.stringify(document)
  t.ok(json.includes(JSON.stringify({ type: 'string', enum: [...fieldTypes] })), fieldTypes.join(', '))
})

t.test('the Idempotency-Key header has one format wherever the document names it', async (t) => {
  const found: unknown[] = []
  const walk = (v: unknown) => {
    if (!v || typeof v !== 'object') return
    if ((v as { name?: string }).name === 'Idempotency-Key' && (v as { schema?: unknown }).schema)
      found.push((v as { schema: unknown }).schema)
    for (const child of Object.values(v)) walk(child)
  }
  walk(document)
  t.ok(found.length >= 1)
  for (const s of found) t.same(s, idempotencyKeySchema)
})

t.test(
  "a plugin documents what it adds to another plugin's operation, and the document loses it with the plugin",
  async (t) => {
    const build = (list: typeof plugins) =>
      buildDocument({
        config,
        describes: descriptionsOf(list),
        publicUrl: 'https://records.example.com',
        errorsUrl: 'https://records.example.com/errors'
      }) as any
    const content = (doc: any) => Object.keys(doc.paths['/api/v1/records/{id}'].get.responses['200'].content)
    t.same(content(document), ['application/json', 'application/pdf'], 'with the record report')
    t.same(content(build(plugins.filter((p) => p.name !== 'record-report'))), ['application/json'], 'without it')
  }
)
