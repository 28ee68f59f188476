import { GraphQLError, GraphQLScalarType, Kind, type GraphQLSchema, type ValueNode } from 'graphql'
import { SchemaComposer } from 'graphql-compose'
import { hiddenFields, seesModule } from '../../core/auth/access.ts'
import type { Principal } from '../../core/auth/principal.ts'
import type { Platform } from '../../core/declarations.ts'
import type { GraphQLContext, GraphQLPart, RootFields } from '../../core/graphql/schema-part.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import { isFormat } from '../../core/validation.ts'
import { lookupCost } from './graphql.limits.ts'
import { enumNames, moduleFieldNames, pascal } from './graphql.names.ts'

/** Who sees which schema: the tenant, and per module the caller sees its version and the fields hidden from it. */
export function schemaKey(platform: Platform, principal: Principal): { key: string; modules: RegisteredModule[] } {
  const tenant = platform.tenants.get(principal.tenantId)
  const modules = [...(tenant?.modules.values() ?? [])]
    .filter((m) => seesModule(principal, m))
    .sort((a, b) => a.definition.key.localeCompare(b.definition.key))
  const key = JSON.stringify([
    principal.tenantId,
    modules.map((m) => [m.versionKey, [...hiddenFields(principal, m)].sort()])
  ])
  return { key, modules }
}

function scalar(name: string, description: string, check: (v: unknown) => boolean, expected: string) {
  const parse = (v: unknown) => {
    if (!check(v)) throw new GraphQLError(`${name} must be ${expected} (got ${JSON.stringify(v)})`)
    return v
  }
  return new GraphQLScalarType({
    name,
    description,
    serialize: (v) => v,
    parseValue: parse,
    parseLiteral: (ast: ValueNode) => parse(ast.kind === Kind.STRING ? ast.value : undefined)
  })
}

const dateScalar = scalar(
  'Date',
  'A calendar date, YYYY-MM-DD (RFC 3339 full-date).',
  (v) => typeof v === 'string' && isFormat('date', v),
  'a date, YYYY-MM-DD'
)
const dateTimeScalar = scalar(
  'DateTime',
  'An instant, ISO 8601 with a timezone (RFC 3339 date-time).',
  (v) => typeof v === 'string' && isFormat('date-time', v),
  'an ISO 8601 date-time with a timezone'
)

function literalValue(ast: ValueNode, variables?: Record<string, unknown> | null): unknown {
  switch (ast.kind) {
    case Kind.STRING:
    case Kind.ENUM:
      return ast.value
    case Kind.BOOLEAN:
      return ast.value
    case Kind.INT:
    case Kind.FLOAT:
      return Number(ast.value)
    case Kind.NULL:
      return null
    case Kind.LIST:
      return ast.values.map((v) => literalValue(v, variables))
    case Kind.OBJECT:
      return Object.fromEntries(ast.fields.map((f) => [f.name.value, literalValue(f.value, variables)]))
    case Kind.VARIABLE:
      return variables?.[ast.name.value]
  }
}

const jsonScalar = new GraphQLScalarType({
  name: 'JSON',
  description: 'Any JSON value, as the REST API carries it.',
  serialize: (v) => v,
  parseValue: (v) => v,
  parseLiteral: literalValue
})

/**
 * The types every part may name: the scalars, who made a change, a signed URL, and the
 * page info of a connection.
 */
function commonTypes(sc: SchemaComposer<GraphQLContext>) {
  sc.add(dateScalar)
  sc.add(dateTimeScalar)
  sc.add(jsonScalar)
  sc.createObjectTC({
    name: 'ActorToken',
    description: 'The token a change came through.',
    fields: {
      type: { type: 'String!', description: 'api-key, personal or service-account' },
      id: 'String!',
      name: 'String!'
    }
  })
  sc.createObjectTC({
    name: 'ActorPerson',
    description: 'The person a service account or API key acts for: its creator, or the person behind its creator.',
    fields: { userId: 'ID!', name: 'String!' }
  })
  sc.createObjectTC({
    name: 'Actor',
    description: 'Who made a change: an API key, a user, a service account or the system.',
    fields: {
      type: 'String!',
      id: 'String!',
      name: 'String!',
      token: {
        type: 'ActorToken',
        description: 'The token the change came through (null for a session or the system)'
      },
      onBehalfOf: {
        type: 'ActorPerson',
        description: 'The person behind a service account or API key, if one is recorded'
      }
    }
  })
  sc.createObjectTC({
    name: 'SignedRequest',
    description: 'A short-lived signed URL and the headers to send with it exactly as given.',
    fields: { method: 'String!', url: 'String!', headers: 'JSON!', expiresAt: 'DateTime!' }
  })
  sc.createObjectTC({
    name: 'PageInfo',
    description: 'Pages go forward only: `endCursor` is the `after` of the next page.',
    fields: { hasNextPage: 'Boolean!', hasPreviousPage: 'Boolean!', startCursor: 'String', endCursor: 'String' }
  })
}

/** Marks a field whose resolver calls a service on its own: it costs a lookup (graphql.limits.ts). */
const lookup = { extensions: { cost: lookupCost } }
const naming = { pascal, enumNames, moduleFieldNames }

/**
 * The GraphQL schema of what one caller sees of its tenant: the common types, then each
 * plugin's part (`Plugin.graphql`, in plugin order: records, attachments, exports, modules,
 * me, …) adding its types and root fields. Every resolver calls the same services as REST
 * (`provider: 'graphql'`), so their hooks and rules apply unchanged.
 */
export function buildSchema(
  platform: Platform,
  principal: Principal,
  modules: RegisteredModule[],
  parts: readonly GraphQLPart[]
): GraphQLSchema {
  const sc = new SchemaComposer<GraphQLContext>()
  commonTypes(sc)
  const query: RootFields = {}
  const mutation: RootFields = {}
  for (const part of parts) {
    const own = { query: {} as RootFields, mutation: {} as RootFields }
    part({ sc, platform, principal, modules, ...own, lookup, names: naming })
    addOnce(query, own.query, 'Query')
    addOnce(mutation, own.mutation, 'Mutation')
  }
  sc.Query.addFields(query)
  // Mutation fields are nullable: mutations run one after another, and one that fails is null with its error while
  // those that committed before and after keep their results (a non-null one would null all of `data`).
  if (Object.keys(mutation).length) sc.Mutation.addFields(mutation)
  return sc.buildSchema({ keepUnusedTypes: true })
}

/** A root field two parts both add would silently be the last one's: refused when the schema is built. */
function addOnce(into: RootFields, fields: RootFields, root: string) {
  for (const [name, field] of Object.entries(fields)) {
    if (name in into) throw new Error(`Two GraphQL parts add ${root}.${name}; a plugin's root fields must be its own.`)
    into[name] = field
  }
}
