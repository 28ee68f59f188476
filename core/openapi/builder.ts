import type { TSchema } from '@feathersjs/typebox'
import type { AppConfig } from '../config.ts'
import type { RegisteredModule } from '../modules/registry.ts'
import { problemResponseNames, rateLimitHeaders } from './problems.ts'

// The OpenAPI 3.1 document is built and read as plain JSON whose shape the standard fixes and
// the contract tests check (every test response against it; redocly lint): `any` members keep
// the hundreds of literal fragments readable, where an OpenAPI types package would not add a check.
/** A JSON Schema as it appears in the document (plain JSON, `$ref`s into `#/components/schemas`). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
export type JsonSchema = Record<string, any>
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
export type Json = Record<string, any>

/**
 * What a feature describes about itself: its tag and paths. Each plugin has one
 * `describe` function (`plugins/<name>/<name>.openapi.ts`); `core/openapi/document.ts`
 * puts them together, generic or for one tenant's modules.
 */
export interface Fragment {
  tags: Array<{ name: string; description: string }>
  paths: Record<string, Record<string, Json>>
  /** OpenAPI 3.1 top-level `webhooks`: requests the service sends to its clients, by name. */
  webhooks?: Record<string, Json>
  /**
   * Adds to operations other features describe, once every fragment is in: a second
   * representation of a response (the record report's PDF of a record's GET), so the
   * feature that brings it documents it, and the document loses it when the feature goes.
   * `components` are the shared ones (problem responses, headers): a feature that answers
   * unknown routes under its paths in another format adds that format to `NotFound` (SCIM).
   */
  amend?: (paths: Record<string, Record<string, Json>>, components: Json) => void
}
export type Describe = (ctx: DocContext) => Fragment

/** Collects named schemas into `components.schemas` while fragments are built. */
export class DocContext {
  readonly schemas: Record<string, JsonSchema> = {}

  constructor(
    readonly config: AppConfig,
    /** The tenant's modules the caller may see; empty in the generic document. */
    readonly modules: RegisteredModule[],
    /** Where the problem `type` pages are (`problemResponse()` examples). */
    readonly errorsUrl: string,
    readonly tenant?: { id: string; name: string }
  ) {}

  /**
   * A `$ref` to `schema` under `name` (default: its TypeBox `$id` or `title`), registering
   * it once. Named schemas it references by `$id` (TypeBox `Type.Ref`) must be passed too.
   */
  ref(schema: TSchema | JsonSchema, name?: string): JsonSchema {
    const key = name ?? (schema as JsonSchema).$id ?? (schema as JsonSchema).title
    if (!key) throw new Error('ref() needs a name for a schema without $id or title')
    if (!this.schemas[key]) this.schemas[key] = toDocumentSchema(schema)
    return { $ref: `#/components/schemas/${key}` }
  }

  /** Registers schemas only referenced by `$id` inside others (TypeBox `Type.Ref`). */
  define(...schemas: Array<TSchema | JsonSchema>) {
    for (const s of schemas) this.ref(s)
  }
}

/**
 * A TypeBox schema as plain OpenAPI 3.1 JSON Schema: TypeBox's symbols dropped,
 * `$id` removed (components are named by key) and `{ $ref: 'Actor' }` pointed at
 * `#/components/schemas/Actor`.
 */
export function toDocumentSchema(schema: TSchema | JsonSchema): JsonSchema {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk)
    if (!v || typeof v !== 'object') return v
    const out: Json = {}
    for (const [k, x] of Object.entries(v)) {
      if (k === '$id') continue
      if (k === '$ref' && typeof x === 'string' && !x.startsWith('#')) out.$ref = `#/components/schemas/${x}`
      else out[k] = walk(x)
    }
    return out
  }
  return walk(JSON.parse(JSON.stringify(schema))) as JsonSchema
}

export interface ResponseSpec {
  description: string
  /** JSON body schema (or a `$ref`); omit for an empty body. */
  schema?: JsonSchema
  contentType?: string
  /** Raw bytes: the media type object carries no schema (OpenAPI 3.1's way to say "any bytes"). */
  binary?: boolean
  /** Other content types the same schema is sent as. */
  alternatives?: string[]
  /** Extra headers: names of `components.headers` entries. */
  headers?: string[]
  example?: unknown
}

export interface OperationSpec {
  operationId: string
  tag: string
  summary: string
  description?: string
  /** The scope the credential needs (`records:read`); `''`: any valid credential; `null`: no credential needed. */
  scope: string | null
  /** The operation works without a credential too (and answers more with one). */
  optionalAuth?: boolean
  parameters?: Json[]
  body?: {
    schema: JsonSchema
    binary?: boolean
    contentType?: string
    example?: unknown
    examples?: Record<string, { summary: string; value: unknown }>
    description?: string
    required?: boolean
  }
  responses: Record<number, ResponseSpec>
  /** Problem statuses beyond those every call gets: 422, 429 and 500; 401 and 403 when authenticated; 400 when it takes input. */
  problems?: number[]
  /** Of those, the ones this operation cannot answer (e.g. 400 for a GET that takes no input). */
  omitProblems?: number[]
  /** Problem statuses answered with a response of their own (`problemResponse()` with this operation's example) instead of the shared one. */
  problemResponses?: Record<number, Json>
  /** Accepts `Idempotency-Key`; a replay carries `Idempotent-Replayed: true`. */
  idempotent?: boolean
  /** Of several success statuses, the one a plain request gets (`x-default-status`; the Postman collection checks for it), when it is not the lowest. */
  defaultStatus?: number
}

/** Statuses every call through the API can answer with a problem (422: `request.too_costly`, past the request's work budget). */
const commonProblems = [422, 429, 500]
const authenticatedProblems = [401, 403]

/** One operation object: security with its scope, standard headers, every problem response. */
export function operation(spec: OperationSpec): Json {
  const parameters = [...(spec.parameters ?? [])]
  if (spec.idempotent) parameters.push({ $ref: '#/components/parameters/IdempotencyKey' })
  const responses: Json = {}
  for (const [status, r] of Object.entries(spec.responses)) {
    const headers: Json = {
      ...rateLimitHeaders(Number(status)),
      'X-Trace-Id': { $ref: '#/components/headers/X-Trace-Id' }
    }
    for (const h of r.headers ?? []) headers[h] = { $ref: `#/components/headers/${h}` }
    if (spec.idempotent && Number(status) < 300)
      headers['Idempotent-Replayed'] = { $ref: '#/components/headers/Idempotent-Replayed' }
    responses[status] = {
      description: r.description,
      headers,
      ...(r.schema
        ? {
            content: Object.fromEntries(
              [r.contentType ?? 'application/json', ...(r.alternatives ?? [])].map((type, i) => [
                type,
                r.binary
                  ? {}
                  : { schema: r.schema, ...(r.example !== undefined && i === 0 ? { example: r.example } : {}) }
              ])
            )
          }
        : {})
    }
  }
  // 400 needs input to be wrong: a body, a query parameter or an Idempotency-Key (path ids that
  // do not parse are 404); a service call also refuses any query parameter holding what no
  // request may (NUL, a lone surrogate), declared or not. A malformed or unknown bearer token
  // is 401 wherever it is sent, even where none is needed.
  const takesInput = !!spec.body || !!spec.idempotent || parameters.some((p) => p.in === 'query') || spec.scope !== null
  const problems = new Set([
    ...commonProblems,
    401,
    ...(takesInput ? [400] : []),
    ...(spec.scope !== null && !spec.optionalAuth ? authenticatedProblems : []),
    ...(spec.problems ?? []),
    ...Object.keys(spec.problemResponses ?? {}).map(Number)
  ])
  for (const s of spec.omitProblems ?? []) problems.delete(s)
  for (const status of [...problems].sort()) {
    const name = problemResponseNames[status]
    if (!name) throw new Error(`no problem response for status ${status}`)
    responses[status] = spec.problemResponses?.[status] ?? { $ref: `#/components/responses/${name}` }
  }
  const scopes = spec.scope ? [spec.scope] : []
  const security =
    spec.scope === null ? [] : [{ bearerAuth: scopes }, { sessionCookie: scopes }, ...(spec.optionalAuth ? [{}] : [])]
  return {
    operationId: spec.operationId,
    tags: [spec.tag],
    summary: spec.summary,
    ...(spec.defaultStatus ? { 'x-default-status': spec.defaultStatus } : {}),
    ...(spec.description ? { description: spec.description } : {}),
    security,
    ...(parameters.length ? { parameters } : {}),
    ...(spec.body
      ? {
          requestBody: {
            required: spec.body.required ?? true,
            ...(spec.body.description ? { description: spec.body.description } : {}),
            content: {
              [spec.body.contentType ?? 'application/json']: spec.body.binary
                ? {}
                : {
                    schema: spec.body.schema,
                    ...(spec.body.example !== undefined ? { example: spec.body.example } : {}),
                    ...(spec.body.examples ? { examples: spec.body.examples } : {})
                  }
            }
          }
        }
      : {}),
    responses
  }
}

/** `~` and `/` escaped for one segment of a JSON pointer. */
export const pointerSegment = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1')

/** The value at a local reference (`#/components/schemas/X`) in `doc`, or undefined. */
export function resolveLocal(doc: Json, ref: string): Json | undefined {
  if (!ref.startsWith('#/')) return undefined
  let at: Json | undefined = doc
  for (const part of ref.slice(2).split('/'))
    at = at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')] as Json | undefined
  return at
}

/**
 * The longest a query or header value can be: Node answers 431 to a request whose head (request
 * line and headers) passes 16 KiB, before the service sees it. The `maxLength` of parameters the
 * service bounds no tighter (a cursor carries its filters; `If-Match` may list versions).
 */
export const headValueMax = 16_384

/** A module key in the generic document (a tenant document lists its keys): a lower-case slug, as module packages must use. */
export const moduleKeySchema: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: headValueMax,
  pattern: '^[a-z][a-z0-9-]*$'
}

/** A string parameter's schema with a `maxLength`: 36 for a UUID, else `headValueMax`, unless it has a tighter bound. */
function bounded(schema: JsonSchema): JsonSchema {
  if (schema.type !== 'string' || 'maxLength' in schema || 'enum' in schema || 'const' in schema) return schema
  return { ...schema, maxLength: schema.format === 'uuid' ? 36 : headValueMax }
}

/** A path parameter. */
export const pathParam = (
  name: string,
  description: string,
  schema: JsonSchema = { type: 'string' },
  example?: unknown
): Json => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: bounded(schema),
  ...(example !== undefined ? { example } : {})
})

/** A query parameter; objects use the `deepObject` style (`payload[severity]=high`). */
export const queryParam = (
  name: string,
  description: string,
  schema: JsonSchema,
  options: { required?: boolean; example?: unknown } = {}
): Json => ({
  name,
  in: 'query',
  required: options.required ?? false,
  description,
  schema: bounded(schema),
  ...(schema.type === 'object' ? { style: 'deepObject', explode: true } : {}),
  // An object's examples start with an empty "No filter": Swagger UI fills Try it out with `example`, or without any a sample of the schema (`additionalProp1`…), and would send it unasked.
  // `none`'s value `{}` is sent as no parameter at all (a deepObject has one per key).
  ...(schema.type === 'object'
    ? {
        examples: {
          none: { summary: 'No filter', value: {} },
          ...(options.example !== undefined ? { example: { summary: 'Example', value: options.example } } : {})
        }
      }
    : options.example !== undefined
      ? { example: options.example }
      : {})
})

/**
 * The query parameters of an operation, from the query schema the service validates with:
 * one per property, in its order, with the property's description, bounds and whether it
 * is required, so a filter added to the schema is documented without a second list.
 * `overrides` give a property a tenant-specific schema, a description or an example.
 */
export function queryParamsOf(
  schema: { properties: Record<string, unknown>; required?: string[] },
  overrides: Record<
    string,
    { schema?: JsonSchema; description?: string; example?: unknown; 'x-postman-enabled'?: boolean }
  > = {}
): Json[] {
  return Object.entries(schema.properties).map(([name, property]) => {
    // A JSON copy: TypeBox marks its schemas with symbol keys, which the document must not carry.
    const { description, ...plain } = JSON.parse(JSON.stringify(property)) as JsonSchema & { description?: string }
    const o = overrides[name] ?? {}
    return {
      ...queryParam(name, o.description ?? description ?? '', o.schema ?? plain, {
        required: schema.required?.includes(name) ?? false,
        example: o.example
      }),
      // Sent by the Postman collection although optional (plugins/api-docs/postman.ts).
      ...(o['x-postman-enabled'] ? { 'x-postman-enabled': true } : {})
    }
  })
}

/** A page cursor as the service issues them (a sealed position, bound to its filters); any other is 400 `cursor.invalid`. */
export const cursorSchema: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: headValueMax,
  pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$'
}

/** `limit` and `cursor`, as every list endpoint takes them. */
export function pageParams(config: AppConfig): Json[] {
  return [
    queryParam('limit', `Page size, 1 to ${config.pagination.maxLimit}; default ${config.pagination.defaultLimit}.`, {
      type: 'integer',
      minimum: 1,
      maximum: config.pagination.maxLimit,
      default: config.pagination.defaultLimit
    }),
    queryParam('cursor', 'The `nextCursor` of the previous page, with the same filters.', cursorSchema)
  ]
}

/**
 * One of several schemas told apart by `property` (`moduleKey`, `status`): the `$ref`s with a
 * discriminator mapping each value to its schema, or the only one when there is one.
 */
export function discriminated(
  property: string,
  variants: ReadonlyArray<readonly [value: string, ref: JsonSchema]>,
  extra: JsonSchema = {}
): JsonSchema {
  if (variants.length === 1 && !Object.keys(extra).length) return variants[0][1]
  return {
    ...extra,
    oneOf: variants.map(([, ref]) => ref),
    discriminator: {
      propertyName: property,
      mapping: Object.fromEntries(variants.map(([value, ref]) => [value, ref.$ref]))
    }
  }
}

/** A cursor page of `items` (the shape of every list endpoint). */
export function pageSchema(title: string, items: JsonSchema, cursorNote = ''): JsonSchema {
  return {
    type: 'object',
    title,
    required: ['items', 'nextCursor', 'limit'],
    properties: {
      items: { type: 'array', items },
      nextCursor: {
        type: ['string', 'null'],
        description: `Pass as \`cursor\` for the next page${cursorNote}; null on the last page.`
      },
      limit: { type: 'integer' }
    }
  }
}

/** PascalCase of a module key, for component names: `corrective-action` → `CorrectiveAction`. */
export const pascal = (key: string) =>
  key
    .split(/[^a-zA-Z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('')
