import { callParams, type GraphQLSchemaBuild, type Resolver } from '../../core/graphql/schema-part.ts'
import { modulesPath } from './modules.shared.ts'

/** The modules part of the GraphQL schema (`Plugin.graphql`): the catalogue and one module's schema, from the modules service. */
export function modulesGraphQL({ sc, query, lookup }: GraphQLSchemaBuild) {
  sc.createObjectTC({
    name: 'ModuleSummary',
    fields: {
      key: 'String!',
      version: 'String!',
      title: 'String!',
      description: 'String',
      numberPattern: 'String!',
      states: '[String!]!'
    }
  })
  sc.createObjectTC({
    name: 'ModuleSchema',
    fields: {
      key: 'String!',
      version: 'String!',
      title: 'String!',
      description: 'String',
      numberPattern: 'String!',
      states: '[String!]!',
      fields: { type: 'JSON!', description: 'Field definitions, with `filterable`' },
      schema: { type: 'JSON!', description: 'JSON Schema of the payload' },
      workflow: 'JSON!',
      permissions: 'JSON!',
      rowAccess: 'JSON!',
      summaryColumns: '[String!]!'
    }
  })
  query.modules = {
    type: '[ModuleSummary!]!',
    ...lookup,
    description: 'The modules this caller sees (GET /api/v1/modules).',
    resolve: (async (_s, _a, ctx) => (await ctx.app.service(modulesPath).find(callParams(ctx))).items) as Resolver
  }
  query.module = {
    type: 'ModuleSchema!',
    ...lookup,
    description: "One module's schema (GET /api/v1/modules/{key}).",
    args: { key: 'String!' },
    resolve: ((_s, { key }, ctx) => ctx.app.service(modulesPath).get(key, callParams(ctx))) as Resolver
  }
}
