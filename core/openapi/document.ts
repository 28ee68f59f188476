import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { AppConfig } from '../config.ts'
import type { RegisteredModule } from '../modules/registry.ts'
import type { Principal } from '../auth/principal.ts'
import { projectRoot } from '../paths.ts'
import { scopeCatalogue } from '../auth/scopes.ts'
import { sessionCookie } from '../auth/sessions.ts'
import { DocContext, headValueMax, type Describe, type Json } from './builder.ts'
import {
  parserStatuses,
  problemResponse,
  problemResponseNames,
  problemSchema,
  rateLimitHeaderSpecs
} from './problems.ts'
import { idempotencyKeySchema } from '../http/idempotency-key.ts'
import { jsonLimits, reservedKeys } from '../json-data.ts'

const version: string = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')).version

export interface OpenApiDocuments {
  /** The generic document, or the one of the caller's tenant and visible modules; built once per key. */
  forPrincipal(principal?: Principal): { document: Json; etag: string }
}

export interface DocumentOptions {
  config: AppConfig
  describes: Describe[]
  publicUrl: string
  errorsUrl: string
  /** The caller's tenant and the modules it may see; absent for the generic document. */
  tenant?: { id: string; name: string; modules: RegisteredModule[] }
}

function components(o: DocumentOptions): Json {
  // `required`: the service always sends it where the header is listed (the contract checker holds it to that).
  const header = (description: string, schema: Json = { type: 'string' }, required = true) => ({
    description,
    required,
    schema
  })
  const responses: Json = {}
  for (const [status, name] of Object.entries(problemResponseNames))
    responses[name] = problemResponse(Number(status), o.errorsUrl)
  return {
    securitySchemes: {
      bearerAuth: {
        type: 'http',
        scheme: 'bearer',
        description: [
          'A token from `/settings/api-keys`, `POST /api/v1/tokens` or `records token create`: `svc_k_…` (tenant API key: acts as the tenant), `svc_p_…` (personal access token: acts as its user, optionally narrowed by scopes) or `sa_…` (service account: explicit scopes).',
          'A token without scopes has every scope; each operation lists the scope it needs, which may be narrowed to one module with a `:<moduleKey>` suffix (`records:read:incident`).',
          `Scopes: ${Object.entries(scopeCatalogue)
            .map(([s, d]) => `\`${s}\`${d.perModule ? ' (per module)' : ''}: ${d.description}`)
            .join('; ')}.`
        ].join(' ')
      },
      sessionCookie: {
        type: 'apiKey',
        in: 'cookie',
        name: sessionCookie,
        description:
          "A signed-in browser session (`/sign-in`). Writes must also send the session's `X-CSRF-Token` (from `GET /api/v1/me`)."
      }
    },
    parameters: {
      IdempotencyKey: {
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description: `Makes a retry safe: the first response is stored for ${o.config.idempotency.retentionHours} hours and replayed (with \`Idempotent-Replayed: true\`) for the same key and the same request. 1–255 visible ASCII characters, unique per credential; the same key with another request is 422, while the first is still running 409.`,
        schema: { ...idempotencyKeySchema }
        // Each operation gets its own example (completeOperations).
      },
      IfMatch: {
        name: 'If-Match',
        in: 'header',
        required: false,
        description:
          'The record `ETag` (its version) the change is based on, or several separated by commas; a newer version answers 412. Compared strongly: a weak tag (`W/"3"`) never matches. A value that is no list of ETags is 400 `request.malformed_if_match`.',
        schema: { type: 'string', minLength: 1, maxLength: headValueMax },
        example: '"3"'
      }
    },
    headers: {
      ...Object.fromEntries(
        Object.entries(rateLimitHeaderSpecs).map(([name, h]) => [name, header(h.description, h.schema)])
      ),
      'X-Trace-Id': header('Identifier of the request in the service logs.'),
      'Retry-After': header('Seconds to wait before retrying.', { type: 'integer' }),
      'WWW-Authenticate': header('The authentication scheme: `Bearer realm="records"`.'),
      Allow: header('The methods the path accepts.'),
      Location: header('The URL of the created resource.'),
      ETag: header('The version of the representation; for a record `"<version>"`, to send back in `If-Match`.'),
      'Idempotent-Replayed': header(
        '`true` when the response is the stored answer to an earlier request with the same `Idempotency-Key`.',
        { type: 'string', enum: ['true'] },
        false
      ),
      'Cache-Control': header('Caching directives.'),
      'Content-Disposition': header('`attachment` with the file name.')
    },
    responses,
    schemas: { Problem: problemSchema }
  }
}

const verbs = ['get', 'put', 'post', 'patch', 'delete', 'head', 'options', 'trace']

/**
 * What every JSON body is held to whatever its schema (core/json-data.ts): JSON Schema has
 * no way to say it of every string and every level at once, so each JSON request body says it.
 */
const jsonBodyRules =
  `Every JSON value in the body (each line of NDJSON) must be storable: no string, value or key, may hold NUL (\\u0000) or a lone UTF-16 surrogate (400 \`field.invalid\`, code \`text\`); ` +
  `numbers are finite (\`number\`); nesting is at most ${jsonLimits.maxDepth} deep (\`depth\`); an object has at most ${jsonLimits.maxKeys.toLocaleString('en')} members and an array at most ${jsonLimits.maxItems.toLocaleString('en')} items (\`size\`); ` +
  `${[...reservedKeys].map((k) => `\`${k}\``).join(', ')} are never accepted as keys (\`reserved\`).`

/** A UUID-shaped key that is the same for the same operation in every build, and another for every other one. */
function exampleKey(operationId: string): string {
  const h = createHash('sha256').update(`idempotency-key:${operationId}`).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${'89ab'[parseInt(h[16], 16) & 3]}${h.slice(17, 20)}-${h.slice(20, 32)}`
}

/**
 * What every operation says, whichever feature describes it: the statuses Node's HTTP parser
 * answers before the service runs (431: a head past 16 KiB), and its own `Idempotency-Key`
 * example. One shared example key made the second write tried out with it a 422
 * `idempotency.key_reused`, so each operation gets the parameter inline with a key of its own.
 * And each JSON request body says the rules every JSON value is held to (jsonBodyRules).
 */
function completeOperations(paths: Json, base: Json) {
  const idempotencyKey = base.parameters.IdempotencyKey
  const ref = '#/components/parameters/IdempotencyKey'
  for (const [path, item] of Object.entries<Json>(paths)) {
    for (const verb of verbs) {
      const op = item[verb]
      if (!op || typeof op !== 'object') continue
      const responses = { ...op.responses }
      for (const status of parserStatuses)
        responses[status] ??= { $ref: `#/components/responses/${problemResponseNames[status]}` }
      const example = exampleKey(op.operationId ?? `${verb} ${path}`)
      // The shared parameter, or one a feature words its own way (bulk's binds the key to line numbers).
      const parameters = op.parameters?.map((p: Json) =>
        p.$ref === ref
          ? { ...idempotencyKey, example }
          : p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key'
            ? { ...p, example }
            : p
      )
      const body = op.requestBody
      const json = body && !body.$ref && Object.keys(body.content ?? {}).some((type) => /json/.test(type))
      const requestBody = json
        ? { ...body, description: [body.description, jsonBodyRules].filter(Boolean).join('\n\n') }
        : body
      item[verb] = { ...op, ...(parameters ? { parameters } : {}), ...(requestBody ? { requestBody } : {}), responses }
    }
  }
  delete base.parameters.IdempotencyKey
}

/** The OpenAPI 3.1 document: generic, or with one tenant's modules typed in. */
export function buildDocument(o: DocumentOptions): Json {
  const ctx = new DocContext(
    o.config,
    o.tenant?.modules ?? [],
    o.errorsUrl,
    o.tenant ? { id: o.tenant.id, name: o.tenant.name } : undefined
  )
  const tags: Json[] = []
  const paths: Json = {}
  const webhooks: Json = {}
  const amends: Array<NonNullable<ReturnType<Describe>['amend']>> = []
  for (const describe of o.describes) {
    const f = describe(ctx)
    tags.push(...f.tags)
    for (const [path, item] of Object.entries(f.paths)) paths[path] = { ...paths[path], ...item }
    Object.assign(webhooks, f.webhooks)
    if (f.amend) amends.push(f.amend)
  }
  const base = components(o)
  for (const amend of amends) amend(paths, base)
  completeOperations(paths, base)
  // Only the problem responses some operation uses (the contract checker needs NotFound for unknown routes).
  const used = JSON.stringify(paths)
  for (const name of Object.keys(base.responses))
    if (name !== 'NotFound' && !used.includes(`#/components/responses/${name}"`)) delete base.responses[name]
  const usedHeaders = used + JSON.stringify(base.responses)
  for (const name of Object.keys(base.headers))
    if (!usedHeaders.includes(`#/components/headers/${name}"`)) delete base.headers[name]
  const modules = o.tenant?.modules ?? []
  return {
    openapi: '3.1.0',
    info: {
      title: o.tenant ? `Records Platform API: ${o.tenant.name}` : 'Records Platform API',
      version,
      summary:
        'Records, workflows, bulk loads, attachments and exports for quality, environment, health and safety work.',
      description: [
        o.tenant
          ? `This document is for tenant **${o.tenant.name}** (\`${o.tenant.id}\`) and types its modules: ${modules.map((m) => `\`${m.definition.key}\` ${m.definition.version}`).join(', ') || 'none visible to this credential'}.`
          : "The generic document. Call `GET /api/docs/spec.json` with a bearer token (or a signed-in session) to get your tenant's document, with a typed payload, states and transitions per installed module.",
        `Errors are RFC 7807 \`application/problem+json\`; each \`type\` is a page under ${o.errorsUrl}. Every response carries \`X-RateLimit-Limit\`, \`-Remaining\`, \`-Reset\` (problems too; a 500 may lack them) and \`X-Trace-Id\`. Lists are cursor-paginated (\`limit\` up to ${o.config.pagination.maxLimit}, \`cursor\` = the previous \`nextCursor\`).`,
        'Interactive reference: `/api/docs`. Postman collection: `/api/docs/postman.json`.'
      ].join('\n\n'),
      // An SPDX `LicenseRef-` names a licence that is not on the SPDX list.
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' }
    },
    servers: [{ url: o.publicUrl, description: 'This service' }],
    security: [{ bearerAuth: [] }, { sessionCookie: [] }],
    tags,
    paths,
    ...(Object.keys(webhooks).length ? { webhooks } : {}),
    components: { ...base, schemas: { ...base.schemas, ...ctx.schemas } }
  }
}
