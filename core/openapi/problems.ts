import { problemKinds, type ProblemKind } from '../errors/kinds.ts'
import type { Json } from './builder.ts'

/** Component names of the problem responses, one per status. */
export const problemResponseNames: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Gone',
  412: 'PreconditionFailed',
  413: 'PayloadTooLarge',
  414: 'UriTooLong',
  415: 'UnsupportedMediaType',
  422: 'Unprocessable',
  429: 'TooManyRequests',
  431: 'RequestHeaderFieldsTooLarge',
  500: 'InternalError',
  503: 'ServiceUnavailable'
}

/** The kinds of problem a status can carry, for its response description. */
export function kindsOfStatus(status: number): ProblemKind[] {
  return (Object.entries(problemKinds) as Array<[ProblemKind, { status: number }]>)
    .filter(([, k]) => k.status === status)
    .map(([kind]) => kind)
}

/** A trace id for examples. */
export const exampleTraceId = '8c1f5b2e6a7d4c3b9e0f1a2b3c4d5e6f'

/** The code each kind's example shows: one the service really sends with it. */
const exampleCodes: Record<string, string> = {
  validation: 'field.invalid',
  'bad-request': 'request.malformed_json',
  authentication: 'auth.missing',
  forbidden: 'scope.missing',
  'not-found': 'record.not_found',
  'method-not-allowed': 'http.method_not_allowed',
  'not-acceptable': 'http.not_acceptable',
  conflict: 'transition.not_allowed',
  'precondition-failed': 'record.version_mismatch',
  gone: 'events.cursor_expired',
  'payload-too-large': 'request.too_large',
  'uri-too-long': 'request.uri_too_long',
  'unsupported-media-type': 'request.unsupported_media_type',
  unprocessable: 'idempotency.key_reused',
  'rate-limited': 'rate_limit.exceeded',
  'headers-too-large': 'request.headers_too_large',
  internal: 'internal.error',
  unavailable: 'http.unavailable'
}

/** `components.schemas.Problem`: RFC 7807 with the members every problem of this service has. */
export const problemSchema = {
  type: 'object',
  description:
    'RFC 7807 problem details. Members beyond the six listed carry details of some codes (e.g. `errors` for `field.invalid`, `missingScope` for `scope.missing`).',
  required: ['type', 'title', 'status', 'detail', 'code', 'traceId'],
  properties: {
    type: {
      type: 'string',
      format: 'uri',
      description: 'The kind of error: `{errors_url}/<kind>`, a short human-readable page.'
    },
    title: { type: 'string' },
    status: { type: 'integer', minimum: 400, maximum: 599 },
    detail: { type: 'string' },
    code: {
      type: 'string',
      description: 'Machine-readable code, e.g. `field.invalid`, `transition.not_allowed`.',
      examples: ['field.invalid']
    },
    traceId: { type: 'string', description: 'The request in the service logs (also in `X-Trace-Id`).' },
    moreErrors: {
      type: 'boolean',
      const: true,
      description:
        'Present when `errors` stops short of every failure: more than 100 were found, or the body held over 10,000 values and only its first failure was looked for. Fix those listed and send again.'
    },
    errors: {
      type: 'array',
      maxItems: 100,
      description: 'Validation failures, one per field and rule (code `field.invalid`), at most 100.',
      items: {
        type: 'object',
        required: ['pointer', 'detail'],
        properties: {
          pointer: { type: 'string', description: 'JSON pointer of the failing value' },
          field: { type: 'string', description: 'The same place as a dotted name, e.g. `payload.severity`.' },
          code: { type: 'string', description: 'The rule it breaks, e.g. `required`, `enum`, `reference`.' },
          detail: { type: 'string' },
          allowed: {
            type: 'array',
            description: 'The values it may take, where there is a fixed set.',
            items: { type: ['string', 'number', 'boolean', 'null'] }
          }
        },
        additionalProperties: true
      }
    }
  },
  additionalProperties: true
}

/** The rate-limit headers as `components.headers` declares them. */
export const rateLimitHeaderSpecs: Record<string, { description: string; schema: Json }> = {
  'X-RateLimit-Limit': {
    description:
      'Requests allowed per minute (sliding window) for this credential; a call without a valid credential is counted by client address. Sent on every response while the shared limit store is reachable (when it is not, requests are let through uncounted and without these headers).',
    schema: { type: 'integer', minimum: 0 }
  },
  'X-RateLimit-Remaining': {
    description: 'Requests left in the current window.',
    schema: { type: 'integer', minimum: 0 }
  },
  'X-RateLimit-Reset': {
    description: 'Epoch second when a request is next allowed once the limit is reached.',
    schema: { type: 'integer', minimum: 0 }
  }
}

/**
 * Statuses answered by Node's HTTP parser (core/http/client-errors.ts) before any middleware
 * runs: every operation can get them, and they carry no rate-limit headers.
 */
export const parserStatuses = [414, 431]

/**
 * The rate-limit headers of a response with `status`. The limiter (`core/http/rate-limit.ts`)
 * sets them before anything after it runs and the problem renderer keeps them, so successes and
 * problems alike carry them, a 401 too (a missing or bad credential is counted by address). Only a
 * 500 may lack them: a failure before the limiter (reading a session) is answered without them,
 * so there they are declared but not required (the contract checker holds `required` ones).
 */
export function rateLimitHeaders(status: number): Json {
  const names = Object.keys(rateLimitHeaderSpecs)
  if (parserStatuses.includes(status)) return {}
  if (status !== 500) return Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]))
  return Object.fromEntries(names.map((name) => [name, { ...rateLimitHeaderSpecs[name], required: false }]))
}

/**
 * One problem response: the kinds its status carries (with their pages), its headers, the
 * `Problem` schema and an example. The shared `components.responses` are built with it, and an
 * operation whose problem a client meets first (e.g. a parameter it must give) gets its own
 * with that `example` and a `description` put before the kinds.
 */
export function problemResponse(
  status: number,
  errorsUrl: string,
  own: { description?: string; example?: Json } = {}
): Json {
  const kinds = kindsOfStatus(status)
  const headers: Json = { ...rateLimitHeaders(status), 'X-Trace-Id': { $ref: '#/components/headers/X-Trace-Id' } }
  if (status === 429 || status === 503) headers['Retry-After'] = { $ref: '#/components/headers/Retry-After' }
  if (status === 401) headers['WWW-Authenticate'] = { $ref: '#/components/headers/WWW-Authenticate' }
  if (status === 405) headers.Allow = { $ref: '#/components/headers/Allow' }
  const first = kinds[0] ?? 'internal'
  const example = own.example ?? {
    type: `${errorsUrl}/${first}`,
    title: problemKinds[first].title,
    status,
    detail: problemKinds[first].text.split('. ')[0] + '.',
    code: exampleCodes[first] ?? first,
    traceId: exampleTraceId
  }
  const description =
    kinds.map((k) => `${problemKinds[k].title} (\`${errorsUrl}/${k}\`): ${problemKinds[k].text}`).join(' ') || 'Problem'
  return {
    description: own.description ? `${own.description} ${description}` : description,
    headers,
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' }, example } }
  }
}
