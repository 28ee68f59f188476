import { operation, type DocContext, type Fragment } from '../../core/openapi/builder.ts'
import { problemResponse } from '../../core/openapi/problems.ts'
import { moduleFieldNames } from './graphql.names.ts'
import { graphqlPath, sdlPath } from './graphql.shared.ts'

const tag = 'GraphQL'

/** Node reads at most 16 KiB of request line and headers (its default max-http-header-size). */
const urlBound = 16_384

export function describeGraphQL(ctx: DocContext): Fragment {
  const first = ctx.modules[0]?.definition.key
  const many = first && moduleFieldNames(ctx.modules.map((m) => m.definition.key)).get(first)!.many
  const example = many
    ? `{ ${many}(first: 5) { nodes { id number state } pageInfo { hasNextPage endCursor } } }`
    : '{ me { tenantName roles } }'
  const request = ctx.ref(
    {
      type: 'object',
      title: 'GraphQLRequest',
      required: ['query'],
      properties: {
        query: { type: 'string', description: 'The GraphQL document' },
        operationName: {
          type: ['string', 'null'],
          description: 'Which operation of the document to run, when it has several'
        },
        variables: { type: ['object', 'null'], additionalProperties: true },
        extensions: { type: ['object', 'null'], additionalProperties: true }
      },
      additionalProperties: false
    },
    'GraphQLRequest'
  )
  const error = {
    type: 'object',
    required: ['message'],
    properties: {
      message: { type: 'string' },
      locations: {
        type: 'array',
        items: { type: 'object', properties: { line: { type: 'integer' }, column: { type: 'integer' } } }
      },
      path: { type: 'array', items: { type: ['string', 'integer'] } },
      extensions: {
        type: 'object',
        description:
          'For errors of the service: the `code`, `status`, `type` and `traceId` the same call answers over REST, and its field `errors` when input was refused.',
        additionalProperties: true,
        properties: {
          code: { type: 'string' },
          status: { type: 'integer' },
          type: { type: 'string' },
          traceId: { type: 'string' }
        }
      }
    }
  }
  const response = ctx.ref(
    {
      type: 'object',
      title: 'GraphQLResponse',
      description:
        'The GraphQL execution result: `data` (absent when the request was refused before it ran) and `errors`.',
      properties: {
        data: { type: ['object', 'null'], additionalProperties: true },
        errors: { type: 'array', items: error },
        extensions: { type: 'object', additionalProperties: true }
      }
    },
    'GraphQLResponse'
  )
  const answers = {
    200: {
      description:
        'The result; errors of single fields (a 404, a 403, a validation error) are in `errors` beside the data of the others.',
      schema: response,
      contentType: 'application/graphql-response+json',
      alternatives: ['application/json'],
      example: { data: {} }
    }
  }
  // A refused document is a GraphQL response; a request refused before GraphQL reads it (a bad Idempotency-Key, a body cut short) a problem.
  const shared400 = problemResponse(400, ctx.errorsUrl)
  const badRequest = {
    ...shared400,
    description: `GraphQL: the request or document cannot be run (it does not parse, does not validate against the caller's schema, asks too much): \`errors\` says what, with \`extensions.code\`. ${shared400.description}`,
    content: {
      ...shared400.content,
      'application/graphql-response+json': { schema: response },
      'application/json': { schema: response }
    }
  }
  const description = [
    "The caller's GraphQL schema, built from the tenant's modules and the fields this credential may read (a hidden field is absent from it).",
    "Resolvers call the same services as REST, so authentication, permissions, validation, audit and events are the same; a field's error carries the REST `code`, `status` and `traceId` in `extensions`.",
    'GraphQL over HTTP: send `Accept: application/graphql-response+json` to get 4xx statuses for refused documents (with `application/json` they come with 200).',
    'An `Idempotency-Key` applies to an operation with exactly one mutation field. Depth and cost are bounded (see docs/graphql.md).'
  ].join(' ')
  return {
    tags: [
      {
        name: tag,
        description: `GraphQL over HTTP at /${graphqlPath}, derived from the tenant's modules; the schema as SDL at /${sdlPath}. Try it in the console at /settings/graphql.`
      }
    ],
    paths: {
      [`/${graphqlPath}`]: {
        post: operation({
          operationId: 'graphqlPost',
          tag,
          summary: 'Run a GraphQL query or mutation',
          description,
          scope: '',
          idempotent: true,
          body: { schema: request, example: { query: example } },
          responses: answers,
          problems: [406, 413, 415],
          problemResponses: { 400: badRequest }
        }),
        get: operation({
          operationId: 'graphqlGet',
          tag,
          summary: 'Run a GraphQL query (no mutations)',
          description: `${description} A GET carries the request in the query string and may only run queries; a mutation is a 405.`,
          scope: '',
          parameters: [
            {
              name: 'query',
              in: 'query',
              required: true,
              schema: {
                type: 'string',
                maxLength: urlBound,
                description: 'The request line is bounded at 16 KiB in all; send longer operations by POST'
              },
              example: example
            },
            { name: 'operationName', in: 'query', required: false, schema: { type: 'string', maxLength: 256 } },
            {
              name: 'variables',
              in: 'query',
              required: false,
              schema: { type: 'string', maxLength: urlBound, description: 'A JSON object' }
            },
            {
              name: 'extensions',
              in: 'query',
              required: false,
              schema: { type: 'string', maxLength: urlBound, description: 'A JSON object' }
            }
          ],
          responses: answers,
          problems: [405, 406],
          problemResponses: { 400: badRequest }
        })
      },
      [`/${sdlPath}`]: {
        get: operation({
          operationId: 'graphqlSchema',
          tag,
          summary: "The caller's GraphQL schema as SDL",
          description:
            "For client code generation (e.g. graphql-codegen): the same schema introspection gives this credential, printed as GraphQL SDL. Send the last `ETag` as `If-None-Match` to hear 304 while the schema is unchanged (it changes when a module is upgraded or the caller's roles change what it may read).",
          scope: '',
          responses: {
            200: {
              description: 'The schema.',
              schema: { type: 'string' },
              contentType: 'application/graphql',
              headers: ['ETag']
            },
            304: { description: 'Your copy is current.', headers: ['ETag'] }
          },
          omitProblems: [400]
        })
      }
    }
  }
}
