import { isInterfaceType, isNonNullType, getNamedType, isObjectType, type GraphQLField } from 'graphql'
import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { exportColumns } from '../../core/modules/derive/columns.ts'
import { systemFields, type SystemField } from '../../core/modules/system-fields.ts'
import { graphqlPartsOf } from '../../core/plugin.ts'
import { plugins } from '../../plugins/index.ts'
import { SchemaCache } from '../../plugins/graphql/graphql.ts'
import { recordSchema } from '../../plugins/records/records.shared.ts'

/*
 * The record's system fields are one list (core/modules/system-fields.ts); the record's
 * TypeBox schema (REST, OpenAPI), its GraphQL type and the export columns are derived from
 * it. One test over the list: each output has each field, with the same presence, and says
 * the same of the same record.
 */

const server = await startTestServer()
t.teardown(() => server.close())
const principal = await server.platform.credentials.authenticate(`Bearer ${server.keys.acme}`)
const schema = new SchemaCache(server.platform, graphqlPartsOf(plugins)).get(principal).schema
const incident = server.platform.tenants.get('acme')!.modules.get('incident')!
const columns = exportColumns(incident, { hidden: new Set() })

const typeBoxKind: Record<SystemField['kind'], object> = {
  uuid: { type: 'string', format: 'uuid' },
  string: { type: 'string' },
  integer: { type: 'integer' },
  datetime: { type: 'string', format: 'date-time' },
  actor: { $ref: 'Actor' }
}
const graphqlKind: Record<SystemField['kind'], string> = {
  uuid: 'ID',
  string: 'String',
  integer: 'Int',
  datetime: 'DateTime',
  actor: 'Actor'
}

t.test(
  'every system field is in the TypeBox record, the GraphQL Record and Incident types, and the export columns it names',
  async (t) => {
    const recordInterface = schema.getType('Record')
    const incidentType = schema.getType('Incident')
    if (!isInterfaceType(recordInterface) || !isObjectType(incidentType)) throw new Error('no Record or Incident type')
    for (const f of systemFields as readonly SystemField[]) {
      t.match(
        recordSchema.properties[f.key as keyof typeof recordSchema.properties],
        typeBoxKind[f.kind],
        `${f.key}: TypeBox`
      )
      t.equal(
        recordSchema.required?.includes(f.key) ?? false,
        !f.optional,
        `${f.key}: required in REST iff not optional`
      )
      for (const type of [recordInterface, incidentType]) {
        const field = type.getFields()[f.key] as GraphQLField<unknown, unknown> | undefined
        t.ok(field, `${f.key}: in GraphQL ${type.name}`)
        if (!field) continue
        t.equal(getNamedType(field.type).name, graphqlKind[f.kind], `${f.key}: ${type.name}'s type`)
        t.equal(isNonNullType(field.type), !f.optional, `${f.key}: non-null in ${type.name} iff not optional`)
      }
      const column = columns.find((c) => c.key === f.key)
      t.equal(column?.header, f.column?.header, `${f.key}: ${f.column ? 'its export column' : 'no export column'}`)
    }
    t.same(
      columns.slice(0, systemFields.filter((f: SystemField) => f.column).length).map((c) => c.key),
      systemFields.filter((f: SystemField) => f.column).map((f) => f.key),
      'the system columns come first, in the order of the list'
    )
    const own = new Set(systemFields.map((f) => f.key as string))
    t.same(
      Object.keys(recordSchema.properties).filter((k) => !own.has(k)),
      // migrationRefused is what a read says of a record its module's migration could not move (like
      // availableTransitions, not a stored column); GraphQL answers such a record's stray values as null instead.
      ['payload', 'migrationRefused', 'activity', 'attachments', 'availableTransitions'],
      'the TypeBox record has no system field of its own'
    )
    t.same(
      Object.keys(recordInterface.getFields()).filter((k) => !own.has(k)),
      ['activity', 'attachments', 'migrationRefused', 'availableTransitions'],
      'nor the GraphQL Record'
    )
  }
)

t.test('REST, GraphQL and the export columns say the same of one record', async (t) => {
  const created = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload(), externalRef: 'SYS-1' }
  })
  t.equal(created.status, 201)
  const removed = await server.request('DELETE', `/api/v1/records/${created.body.id}`)
  t.equal(removed.status, 200)
  // A deleted record, so that every field has a value; the list shows it with includeDeleted.
  const listed = await server.request('GET', '/api/v1/records?moduleKey=incident&includeDeleted=true&externalRef=SYS-1')
  const rest = listed.body.items.find((r: { id: string }) => r.id === created.body.id)
  t.ok(rest?.deletedAt, 'REST lists the deleted record')
  const selection = systemFields.map((f) => (f.kind === 'actor' ? `${f.key} { type id name }` : f.key)).join(' ')
  const gql = await server.request('POST', '/api/graphql', {
    body: { query: `{ incidents(includeDeleted: true, externalRef: "SYS-1") { nodes { ${selection} } } }` }
  })
  t.equal(gql.body.errors, undefined)
  const viaGraphQL = gql.body.data.incidents.nodes[0]
  for (const f of systemFields as readonly SystemField[]) {
    const value = rest[f.key]
    const expected = f.kind === 'actor' && value ? { type: value.type, id: value.id, name: value.name } : value
    t.same(viaGraphQL?.[f.key] ?? undefined, expected, `${f.key}: GraphQL as REST`)
    const column = columns.find((c) => c.key === f.key)
    if (!column) continue
    const cell = column.get(rest)
    const shown = cell instanceof Date ? cell.toISOString() : cell
    t.equal(shown, f.kind === 'actor' ? value.name : value, `${f.key}: the export cell as REST`)
  }
})
