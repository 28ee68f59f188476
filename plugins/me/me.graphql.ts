import { callParams, type GraphQLSchemaBuild, type Resolver } from '../../core/graphql/schema-part.ts'
import { mePath } from './me.shared.ts'

/** The me part of the GraphQL schema (`Plugin.graphql`): who the caller is and what it may do, from the me service. */
export function meGraphQL({ sc, query, lookup }: GraphQLSchemaBuild) {
  sc.createObjectTC({
    name: 'Me',
    fields: {
      tenantId: 'String!',
      tenantName: 'String!',
      credential: sc.createObjectTC({ name: 'Credential', fields: { id: 'String!', type: 'String!' } }),
      actor: 'Actor!',
      userId: 'ID',
      roles: { type: 'JSON!', description: 'Role names, or "all" for a tenant API key' },
      scopes: {
        type: 'JSON!',
        description: 'Scope names, or "all" for a token without scopes (limited by its roles alone)'
      },
      modules: { type: 'JSON!', description: 'Module key → the actions the roles grant' },
      rateLimit: sc.createObjectTC({ name: 'RateLimit', fields: { requestsPerMinute: 'Int!' } })
    }
  })
  query.me = {
    type: 'Me!',
    ...lookup,
    description: 'Who the caller is and what it may do (GET /api/v1/me).',
    resolve: ((_s, _a, ctx) => ctx.app.service(mePath).find(callParams(ctx))) as Resolver
  }
}
