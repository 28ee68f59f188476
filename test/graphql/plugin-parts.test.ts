import { graphql, isNonNullType, isObjectType, type GraphQLSchema } from 'graphql'
import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'
import { Loaders } from '../../core/graphql/schema-part.ts'
import { graphqlPartsOf, type Plugin } from '../../core/plugin.ts'
import { exportJobSchema } from '../../plugins/exports/exports.schema.ts'
import { plugins } from '../../plugins/index.ts'
import { SchemaCache } from '../../plugins/graphql/graphql.ts'

/*
 * Each plugin brings its GraphQL types through `Plugin.graphql` (core/plugin.ts): the schema
 * a caller gets is the common types plus the parts of the plugins configured, so a plugin
 * left out takes its types, queries and mutations with it, and a new one adds its own.
 */

const server = await startTestServer()
t.teardown(() => server.close())
const principal = await server.platform.credentials.authenticate(`Bearer ${server.keys.acme}`)
const schemaOf = (list: readonly Plugin[]) =>
  new SchemaCache(server.platform, graphqlPartsOf(list)).get(principal).schema
const without = (...names: string[]) => plugins.filter((p) => !names.includes(p.name))
const rootNames = (schema: GraphQLSchema, root: 'Query' | 'Mutation') =>
  Object.keys((root === 'Query' ? schema.getQueryType() : schema.getMutationType())?.getFields() ?? {})
const fieldsOf = (schema: GraphQLSchema, type: string) => {
  const found = schema.getType(type)
  return isObjectType(found) ? Object.keys(found.getFields()) : undefined
}

t.test('the served schema holds the types records, attachments, exports, modules and me contribute', async (t) => {
  const sdl = (await server.request('GET', '/api/graphql/schema.graphql')).text
  for (const type of [
    'interface Record ',
    'type Incident ',
    'type AttachmentUpload ',
    'type Export ',
    'type ModuleSchema ',
    'type Me '
  ])
    t.ok(sdl.includes(type), `${type.trim()} is served`)
  const schema = schemaOf(plugins)
  t.same(
    ['record', 'incident', 'incidents', 'export', 'modules', 'module', 'me'].filter(
      (f) => !rootNames(schema, 'Query').includes(f)
    ),
    [],
    'each part adds its queries'
  )
  t.same(
    ['createIncident', 'deleteRecord', 'requestAttachmentUpload', 'startExport'].filter(
      (f) => !rootNames(schema, 'Mutation').includes(f)
    ),
    [],
    'and its mutations'
  )
})

t.test(
  "the Export type is the export job's REST output schema less its links: each member, nullable where REST may leave it out or null",
  async (t) => {
    const type = schemaOf(plugins).getType('Export')
    if (!isObjectType(type)) throw new Error('no Export type')
    const fields = type.getFields()
    const required = new Set(exportJobSchema.required ?? [])
    for (const [key, member] of Object.entries(exportJobSchema.properties)) {
      if (key === 'links') {
        t.notOk(fields[key], 'links is REST only')
        continue
      }
      const nullable =
        !required.has(key) ||
        ((member as { anyOf?: Array<{ type?: string }> }).anyOf?.some((v) => v.type === 'null') ?? false)
      t.equal(isNonNullType(fields[key]?.type), !nullable, `${key}: ${nullable ? 'nullable' : 'non-null'}`)
    }
    t.same(
      Object.keys(fields),
      Object.keys(exportJobSchema.properties).filter((k) => k !== 'links'),
      'and nothing else'
    )
  }
)

t.test('without the exports plugin, the schema has no export type, query or mutation and keeps the rest', async (t) => {
  const schema = schemaOf(without('exports'))
  for (const type of ['Export', 'ExportInput', 'ExportFormat', 'ExportProgress', 'ExportFile'])
    t.notOk(schema.getType(type), `no ${type}`)
  t.notOk(rootNames(schema, 'Query').includes('export'), 'no export query')
  t.notOk(rootNames(schema, 'Mutation').includes('startExport'), 'no startExport mutation')
  t.ok(schema.getType('Incident'), 'records still has its types')
  t.ok(rootNames(schema, 'Query').includes('me'), 'and me its query')
})

t.test("without the attachments plugin, a record's attachments have no download and no upload mutation", async (t) => {
  const schema = schemaOf(without('attachments'))
  t.same(fieldsOf(schema, 'Attachment'), [
    'id',
    'fileName',
    'contentType',
    'size',
    'sha256',
    'uploadedBy',
    'uploadedAt'
  ])
  t.notOk(schema.getType('AttachmentUpload'))
  t.notOk(rootNames(schema, 'Mutation').includes('requestAttachmentUpload'))
  t.ok(fieldsOf(schemaOf(plugins), 'Attachment')?.includes('download'), 'with it, they have one')
})

t.test('without modules and me, their queries and types are gone', async (t) => {
  const schema = schemaOf(without('modules', 'me'))
  t.notOk(schema.getType('ModuleSummary'))
  t.notOk(schema.getType('Me'))
  t.same(
    rootNames(schema, 'Query').filter((f) => ['modules', 'module', 'me'].includes(f)),
    []
  )
})

t.test(
  "a new plugin's part adds its own type and query, and its resolver runs with the request's context",
  async (t) => {
    const pinger: Plugin = {
      name: 'pinger',
      configure: () => {},
      graphql: ({ sc, query, lookup }) => {
        sc.createObjectTC({ name: 'Pong', fields: { tenantId: 'String!', at: 'DateTime!' } })
        query.ping = {
          type: 'Pong!',
          ...lookup,
          resolve: (_s, _a, ctx) => ({ tenantId: ctx.principal.tenantId, at: '2026-11-26T00:00:00Z' })
        }
      }
    }
    const schema = schemaOf([...plugins, pinger])
    t.same(fieldsOf(schema, 'Pong'), ['tenantId', 'at'])
    t.equal(
      schema.getQueryType()!.getFields().ping.extensions.cost,
      250,
      'a lookup field carries its cost for the limits'
    )
    const base = { app: server.running.app, principal, traceId: 'test' }
    const result = await graphql({
      schema,
      source: '{ ping { tenantId } }',
      contextValue: { ...base, loaders: new Loaders(base) }
    })
    t.same(result, { data: { ping: { tenantId: 'acme' } } })
  }
)

t.test('a part that adds a root field another part has is refused when the schema is built', async (t) => {
  const again: Plugin = { name: 'again', configure: () => {}, graphql: ({ query }) => void (query.me = 'String') }
  t.throws(() => schemaOf([...plugins, again]), /Two GraphQL parts add Query\.me/)
})

t.test('the schema is built once per caller view, not per request', async (t) => {
  const cache = new SchemaCache(server.platform, graphqlPartsOf(plugins))
  const first = cache.get(principal).schema
  t.equal(cache.get(principal).schema, first)
  t.equal(cache.builds, 1)
})
