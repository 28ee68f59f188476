import { createHash } from 'node:crypto'
import {
  execute,
  getOperationAST,
  GraphQLError,
  OperationTypeNode,
  printSchema,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLSchema,
  type ValidationContext,
  type ValidationRule
} from 'graphql'
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit'
import { createHandler, type OperationContext } from 'graphql-http'
import type { Middleware, ParameterizedContext } from 'koa'
import { assertScope } from '../../core/auth/access.ts'
import type { Principal } from '../../core/auth/principal.ts'
import type { App, Platform } from '../../core/declarations.ts'
import { ApiError, problems, toProblem } from '../../core/errors/index.ts'
import { readBodyText } from '../../core/http/body.ts'
import { ifNoneMatchHits } from '../../core/http/entity-tag.ts'
import { declareRoutes } from '../../core/http/route-guard.ts'
import { currentBudget } from '../../core/limits/budget.ts'
import { logger } from '../../core/logger.ts'
import { span, tracingEnabled } from '../../core/telemetry/tracing.ts'
import type { Plugin } from '../../core/plugin.ts'
import { Loaders, type GraphQLContext, type GraphQLPart } from '../../core/graphql/schema-part.ts'
import { graphqlConsole } from './graphql.console.ts'
import { parseWithin, repeatProblems } from './graphql.document.ts'
import { fragmentsOf, limitRule, rootFields, type QueryLimits } from './graphql.limits.ts'
import { describeGraphQL } from './graphql.openapi.ts'
import { buildSchema, schemaKey } from './graphql.schema.ts'
import { graphqlPath, sdlPath } from './graphql.shared.ts'

type PromiseOrValue<T> = T | Promise<T>

/**
 * How much one operation may ask for; documented in docs/graphql.md. `maxCost` stays under
 * the request budget (config limits.requestBudget, 50,000 by default): the operation's cost
 * is reserved on the budget before it runs, and what is left pays for the work charged
 * while it runs.
 */
export const queryLimits = (platform: Platform): QueryLimits => ({
  maxDepth: 12,
  maxCost: 25_000,
  defaultPageSize: platform.config.pagination.defaultLimit,
  maxNesting: 64,
  maxTokens: 15_000,
  maxRepeats: 100
})

/**
 * Schemas per tenant, module versions and the fields hidden from the caller (the key of
 * graphql.schema.ts `schemaKey`), built once and kept; a module upgrade changes the key,
 * so the next request builds the new one. Building is synchronous, so requests arriving
 * together before the first build ends cannot build it twice.
 */
export class SchemaCache {
  private readonly built = new Map<string, { schema: GraphQLSchema; sdl?: { text: string; etag: string } }>()
  builds = 0
  constructor(
    private readonly platform: Platform,
    private readonly parts: readonly GraphQLPart[],
    private readonly max = 500
  ) {}

  get(principal: Principal) {
    const { key, modules } = schemaKey(this.platform, principal)
    let hit = this.built.get(key)
    if (!hit) {
      hit = { schema: buildSchema(this.platform, principal, modules, this.parts) }
      this.builds++
      if (this.built.size >= this.max) this.built.delete(this.built.keys().next().value!)
      this.built.set(key, hit)
    }
    return hit
  }

  sdl(principal: Principal) {
    const hit = this.get(principal)
    if (!hit.sdl) {
      const text = printSchema(hit.schema)
      hit.sdl = { text, etag: `"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"` }
    }
    return hit.sdl
  }
}

/** An error as the same call over REST would answer it: `code`, `status`, `type` and `traceId` in `extensions`. */
export function formatError(traceId: string, errorsUrl: string) {
  return (err: Readonly<GraphQLError | Error>): GraphQLError => {
    const gql = err instanceof GraphQLError ? err : new GraphQLError(err.message, { originalError: err })
    const at = { nodes: gql.nodes, source: gql.source, positions: gql.positions, path: gql.path }
    let original = gql.originalError
    if (gql.path !== undefined && (!original || original instanceof GraphQLError)) {
      // Raised by GraphQL itself while resolving a field (a null where the schema promises a value, a list that is not
      // one): the service's answer broke its own schema, a server fault like any other.
      original = new Error(`GraphQL could not resolve ${gql.path.join('.')}: ${gql.message}`)
    } else if (!original || original instanceof GraphQLError) {
      // The request or document itself: syntax, validation against the schema, limits.
      return new GraphQLError(gql.message, {
        ...at,
        extensions: { code: 'graphql.invalid', status: 400, ...gql.extensions, traceId }
      })
    }
    if (!(original instanceof ApiError) && !(original as { code?: unknown }).code && gql.path === undefined) {
      // graphql-http's own refusals of a request it cannot read ("Missing query", "Unparsable JSON body").
      return new GraphQLError(original.message, { extensions: { code: 'graphql.bad_request', status: 400, traceId } })
    }
    const { body, internal } = toProblem(original, traceId, errorsUrl)
    if (internal)
      logger.error('graphql field failed', {
        traceId,
        path: gql.path?.join('.'),
        error: original.stack ?? String(original)
      })
    const { detail, title, status, code, type, traceId: _trace, ...extra } = body
    return new GraphQLError(detail ?? title, { ...at, extensions: { code, status, type, title, traceId, ...extra } })
  }
}

/**
 * An Idempotency-Key makes a retried write safe when the operation is one mutation field:
 * the key then goes to that field's service call, as REST's header does. With several
 * mutation fields it could not say which write it covers: refused.
 */
function idempotencyRule(key: string | undefined, operationName: string | null | undefined, context: GraphQLContext) {
  return (v: ValidationContext) => {
    const op = getOperationAST(v.getDocument(), operationName)
    if (key && op?.operation === OperationTypeNode.MUTATION) {
      // Counted as they execute: mutations spread from fragments are mutations too.
      const fields = rootFields(op, fragmentsOf(v)).size
      if (fields === 1) context.idempotencyKey = key
      else
        v.reportError(
          new GraphQLError(
            `An Idempotency-Key covers an operation with one mutation field; this one has ${fields}. Send them as separate requests.`,
            { nodes: [op], extensions: { code: 'idempotency.one_mutation', status: 400 } }
          )
        )
    }
    return {}
  }
}

/**
 * The work per operation text that does not depend on the request, done once: parsing,
 * the specified validation rules (against one schema object) and compiling it to a
 * function (graphql-jit). Clients send the same few operations again and again; texts up
 * to 16 KB are kept, the 1,000 most recent, so the cache stays under about 16 MB. The
 * request's own rules (depth and cost with its variables, Idempotency-Key) run every time.
 */
const maxCachedText = 16_384
const documents = new Map<string, DocumentNode>()
const cachedDocuments = new WeakSet<DocumentNode>()
function cachedParse(source: string, limits: QueryLimits): DocumentNode {
  let d = documents.get(source)
  if (d) return d
  d = parseWithin(source, limits)
  if (source.length <= maxCachedText) {
    if (documents.size >= 1000) documents.delete(documents.keys().next().value!)
    documents.set(source, d)
    cachedDocuments.add(d)
  }
  return d
}

const validated = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, readonly GraphQLError[]>>()
function cachedValidate(
  schema: GraphQLSchema,
  doc: DocumentNode,
  rules: readonly ValidationRule[],
  limits: QueryLimits
): readonly GraphQLError[] {
  const own = rules.filter((r) => !specifiedRules.includes(r))
  if (!cachedDocuments.has(doc)) {
    // What would make GraphQL's own rules slow is refused before they run.
    const repeated = repeatProblems(doc, limits)
    return repeated.length ? repeated : validate(schema, doc, rules)
  }
  let bySchema = validated.get(schema)
  if (!bySchema) validated.set(schema, (bySchema = new WeakMap()))
  let errors = bySchema.get(doc)
  if (!errors) {
    const repeated = repeatProblems(doc, limits)
    bySchema.set(doc, (errors = repeated.length ? repeated : validate(schema, doc, specifiedRules)))
  }
  return errors.length ? errors : validate(schema, doc, own)
}

/**
 * Runs a validated operation after reserving its cost (measured by limitRule) on the
 * request's budget: that also counts it against the rate limit as one request per
 * `budgetUnitsPerRequest` units, and refuses it before it starts (422 request.too_costly,
 * 429) when the caller cannot afford it.
 */
async function reservedExecute(args: ExecutionArgs): Promise<ExecutionResult> {
  const cost = (args.contextValue as GraphQLContext).cost
  if (cost !== undefined) await currentBudget().reserve(cost, 'graphql operation')
  if (!tracingEnabled()) return cachedExecute(args)
  const operation = getOperationAST(args.document, args.operationName)
  const type = operation?.operation ?? 'operation'
  const name = operation?.name?.value
  return span(
    name ? `graphql ${type} ${name}` : `graphql ${type}`,
    { 'graphql.operation.type': type, 'graphql.operation.name': name, 'graphql.cost': cost },
    async (s) => {
      const result = await cachedExecute(args)
      if (result.errors?.length) s.setAttribute('graphql.errors', result.errors.length)
      return result
    }
  )
}

const compiled = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Map<string, CompiledQuery>>>()
/** Runs a validated operation: compiled once per schema, document and operation name when the document is a cached one, else as graphql-js does. */
function cachedExecute(args: ExecutionArgs): PromiseOrValue<ExecutionResult> {
  if (!cachedDocuments.has(args.document)) return execute(args)
  let bySchema = compiled.get(args.schema)
  if (!bySchema) compiled.set(args.schema, (bySchema = new WeakMap()))
  let byName = bySchema.get(args.document)
  if (!byName) bySchema.set(args.document, (byName = new Map()))
  let query = byName.get(args.operationName ?? '')
  if (!query) {
    const made = compileQuery(args.schema, args.document, args.operationName ?? undefined)
    if (!isCompiledQuery(made)) return made
    byName.set(args.operationName ?? '', (query = made))
  }
  return query.query(args.rootValue, args.contextValue, args.variableValues)
}

/** `requestError`: the operation ran into a request error (a result without `data`), set by onOperation. */
type RequestContext = { koa: ParameterizedContext; principal: Principal; requestError?: boolean }

/** `POST /api/graphql`, `GET /api/graphql` (queries only), GraphQL over HTTP, and `GET /api/graphql/schema.graphql`. */
export function graphqlRoutes(app: App, cache: SchemaCache): Middleware {
  const platform = app.get('platform')
  const limits = queryLimits(platform)
  const maxBytes = platform.config.http.maxJsonBytes
  const errorsUrl = () => app.get('errorsUrl')
  // One handler per request: cheap (it closes over these options), and its formatError knows the request's trace id.
  const handlerFor = (traceId: string) =>
    createHandler<ParameterizedContext, RequestContext, GraphQLContext & OperationContext>({
      schema: (req) => cache.get(req.context.principal).schema,
      parse: ((source: string) => cachedParse(source, limits)) as never,
      validate: ((schema: GraphQLSchema, doc: DocumentNode, rules: readonly ValidationRule[]) =>
        cachedValidate(schema, doc, rules, limits)) as never,
      execute: reservedExecute,
      context: (req) => {
        const base = { app, principal: req.context.principal, traceId }
        return { ...base, loaders: new Loaders(base) }
      },
      validationRules: (req, args, specified) => [
        ...specified,
        limitRule(
          limits,
          () => args.variableValues ?? {},
          args.operationName,
          (cost) => ((args.contextValue as GraphQLContext).cost = cost)
        ),
        idempotencyRule(
          req.context.koa.get('idempotency-key') || undefined,
          args.operationName,
          args.contextValue as GraphQLContext
        )
      ],
      // A result without `data` is a request error found once executing began (a variable value that does not
      // coerce): GraphQL over HTTP wants a 4xx for it under application/graphql-response+json, as graphql-http
      // already answers parse and validation errors, but it sends this one 200.
      onOperation: (req, _args, result) => {
        if (!('data' in result)) req.context.requestError = true
      },
      formatError: formatError(traceId, errorsUrl())
    })

  return async (ctx, next) => {
    if (ctx.path === `/${sdlPath}`) {
      const principal = requireCaller(ctx)
      const { text, etag } = cache.sdl(principal)
      ctx.set({ ETag: etag, 'Cache-Control': 'private, no-cache', Vary: 'Authorization, Cookie' })
      if (ifNoneMatchHits(ctx.get('if-none-match'), etag)) {
        ctx.status = 304
        return
      }
      ctx.type = 'application/graphql; charset=utf-8'
      ctx.body = text
      return
    }
    if (ctx.path !== `/${graphqlPath}`) return next()
    if (ctx.method !== 'GET' && ctx.method !== 'POST')
      throw new ApiError(
        'method-not-allowed',
        'http.method_not_allowed',
        `${ctx.method} is not allowed on ${ctx.path}; allowed: GET, POST.`,
        {},
        { Allow: 'GET, POST' }
      )
    const principal = requireCaller(ctx)
    let body: string | null = null
    if (
      ctx.method === 'POST' &&
      (ctx.get('content-type') || '').split(';')[0].trim().toLowerCase() === 'application/json'
    ) {
      body = await readBodyText(ctx, maxBytes)
    }
    const context: RequestContext = { koa: ctx, principal }
    const [result, init] = await handlerFor(ctx.state.traceId as string)({
      method: ctx.method,
      url: ctx.url,
      headers: { get: (name: string) => ctx.get(name) || null },
      body,
      raw: ctx,
      context
    })
    if (result === null) {
      // graphql-http answers these without a body: as every refusal here, a problem.
      if (init.status === 406)
        throw new ApiError(
          'not-acceptable',
          'http.not_acceptable',
          'GraphQL answers application/graphql-response+json or application/json; send one of them in Accept.'
        )
      if (init.status === 415)
        throw new ApiError(
          'unsupported-media-type',
          'request.unsupported_media_type',
          `Send the GraphQL request as application/json (got ${ctx.get('content-type') || 'no Content-Type'}).`
        )
      throw new ApiError(
        'method-not-allowed',
        'http.method_not_allowed',
        `${ctx.method} is not allowed on ${ctx.path}; allowed: GET, POST.`,
        {},
        { Allow: 'GET, POST' }
      )
    }
    if (init.status === 405) {
      // graphql-http refuses a mutation sent with GET with a bare JSON body of its own (sent as text/plain): a problem, as every refusal.
      throw new ApiError(
        'method-not-allowed',
        'http.method_not_allowed',
        'A GET request may only run a query (GET must not change anything); send a mutation with POST.',
        {},
        { Allow: 'POST' }
      )
    }
    if (init.status === 400) {
      // A request graphql-http could not read (no query, unparsable JSON or variables): no GraphQL request yet, so a problem as elsewhere.
      const refusal = requestRefusal(result)
      if (refusal)
        throw problems.badRequest(
          'graphql.bad_request',
          `${refusal}: a GraphQL request is a JSON object {"query": "...", "variables": {...}, "operationName": "..."} in a POST body, or the same members as URL parameters of a GET, variables and extensions as URL-encoded JSON objects.`
        )
    }
    const graphqlResponse = String(init.headers?.['content-type'] ?? '').startsWith('application/graphql-response+json')
    ctx.status = context.requestError && graphqlResponse && init.status === 200 ? 400 : init.status
    for (const [name, value] of Object.entries(init.headers ?? {})) ctx.set(name, String(value))
    ctx.body = result
  }
}

/** The message of graphql-http's refusal of an unreadable request (see formatError), if the answer is one. */
function requestRefusal(result: unknown): string | undefined {
  if (typeof result !== 'string') return undefined
  try {
    const first = (JSON.parse(result) as { errors?: Array<{ message: string; extensions?: { code?: string } }> })
      .errors?.[0]
    return first?.extensions?.code === 'graphql.bad_request' ? first.message : undefined
  } catch {
    return undefined
  }
}

function requireCaller(ctx: ParameterizedContext): Principal {
  const principal = ctx.state.principal as Principal | undefined
  if (!principal)
    throw problems.unauthenticated(
      'auth.missing',
      'GraphQL needs a credential: an Authorization: Bearer <token> header, or the session cookie of a signed-in browser (as the console at /settings/graphql sends).'
    )
  // A scoped token names `graphql` to use the endpoint at all; each field then needs its own scope, as over REST.
  assertScope(principal, 'graphql')
  return principal
}

declare module '../../core/declarations.ts' {
  interface Settings {
    /** The GraphQL schemas built so far (plugins/graphql), for tests and benchmarks to count builds. */
    graphqlSchemas?: SchemaCache
  }
}

export function graphql(app: App) {
  const cache = new SchemaCache(app.get('platform'), app.get('graphqlParts'))
  app.set('graphqlSchemas', cache)
  app.use(graphqlRoutes(app, cache))
  declareRoutes(app, [{ path: `/${sdlPath}`, methods: ['GET', 'HEAD'] }])
  graphqlConsole(app)
}

/**
 * GraphQL over HTTP at /api/graphql: reads its own body (so the route guard lets it through
 * and the JSON reader leaves it). With its console for signed-in users at /settings/graphql
 * (graphql.console.ts), in the settings menu.
 */
export const graphqlPlugin: Plugin = {
  name: 'graphql',
  // Only what it imports: the features whose types it serves bring them (Plugin.graphql), present or not.
  dependsOn: ['settings'],
  configure: graphql,
  ownRoutes: [new RegExp(`^/${graphqlPath}$`)],
  describe: describeGraphQL
}
