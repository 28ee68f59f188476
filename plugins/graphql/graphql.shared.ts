/** Where GraphQL is served: the endpoint (no `/v1`, as the spec has it) and the caller's schema as SDL. */
export const graphqlPath = 'api/graphql'
export const sdlPath = 'api/graphql/schema.graphql'
