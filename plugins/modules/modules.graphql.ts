import { callParams, type GraphQLSchemaBuild, type Resolver } from '../../core/graphql/schema-part.ts'
import { cataloguePath, modulesPath } from './modules.shared.ts'

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
      fields: { type: 'JSON!', description: 'Field definitions, with `filterable`, `computed` and `default`' },
      schema: { type: 'JSON!', description: 'JSON Schema of the payload' },
      workflow: 'JSON!',
      permissions: 'JSON!',
      rowAccess: 'JSON!',
      summaryColumns: '[String!]!',
      rules: { type: 'JSON!', description: 'Rules between fields: check, message, fields, on' }
    }
  })
  sc.createObjectTC({
    name: 'ModuleCatalogueEntry',
    fields: {
      key: 'String!',
      title: 'String!',
      version: 'String!',
      description: 'String',
      host: { type: 'String', description: 'The platform versions the package declares it fits' },
      package: sc.createObjectTC({ name: 'ModulePackage', fields: { name: 'String!', version: 'String' } }).NonNull,
      installed: {
        type: sc.createObjectTC({ name: 'InstalledModule', fields: { version: 'String!' } }),
        description: "The caller's tenant has it installed, at this version; null when not"
      }
    }
  })
  query.moduleCatalogue = {
    type: '[ModuleCatalogueEntry!]!',
    ...lookup,
    description:
      'The modules this deployment offers, and which the tenant has installed (GET /api/v1/module-catalogue).',
    resolve: (async (_s, _a, ctx) => (await ctx.app.service(cataloguePath).find(callParams(ctx))).items) as Resolver
  }
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
