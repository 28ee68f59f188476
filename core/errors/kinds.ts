/** Every kind of problem the API returns: its status, title and the page served at {errors_url}/<kind>. */
export const problemKinds = {
  validation: {
    status: 400,
    title: 'Validation failed',
    text: 'A submitted field, query parameter or payload value breaks the rules of its schema. The detail names each field and, where there is a fixed set, its allowed values; the `errors` member lists every failure with its JSON pointer.'
  },
  'bad-request': {
    status: 400,
    title: 'Bad request',
    text: 'The request cannot be read: malformed JSON, a cursor that was not issued by this service or was issued for other filters, or a header with an invalid value.'
  },
  authentication: {
    status: 401,
    title: 'Authentication required',
    text: 'Send `Authorization: Bearer <token>` with a token that exists, is not revoked and has not expired. Tokens are shown once at creation; issue a new one if it is lost.'
  },
  forbidden: {
    status: 403,
    title: 'Forbidden',
    text: 'The credential is valid but lacks the role, scope or right the operation needs. The detail names what is missing.'
  },
  'not-found': {
    status: 404,
    title: 'Not found',
    text: 'No such resource for this tenant: the route does not exist, the record is soft-deleted (see the audit log), or it belongs to a module the tenant has not installed.'
  },
  'method-not-allowed': {
    status: 405,
    title: 'Method not allowed',
    text: 'The route exists but does not accept this HTTP method.'
  },
  'not-acceptable': {
    status: 406,
    title: 'Not acceptable',
    text: 'The Accept header names no media type the endpoint answers with. The detail lists those it does.'
  },
  conflict: {
    status: 409,
    title: 'Conflict',
    text: 'The request conflicts with the current state: a workflow transition that is not allowed from the record’s current state, a change to a field the record’s state locks (`field.locked`: `errors` names each field, `unlockedBy` the transitions that lead out of the lock), or a retry with an Idempotency-Key whose first request is still being processed.'
  },
  'precondition-failed': {
    status: 412,
    title: 'Precondition failed',
    text: 'The If-Match header names a version of the record that is no longer current. Fetch the record again and re-apply the change.'
  },
  gone: {
    status: 410,
    title: 'Gone',
    text: 'What the request points at is no longer kept: an events-feed cursor whose following events passed the retention period. Start again without a cursor (resync) and page from the oldest event kept.'
  },
  'payload-too-large': {
    status: 413,
    title: 'Payload too large',
    text: 'The request body is larger than the service accepts for this endpoint.'
  },
  'uri-too-long': {
    status: 414,
    title: 'URI too long',
    text: 'The request line alone exceeds the 16 KiB the service reads of a request head. Send long values (filters, lists of ids) in the body of a POST (GraphQL, exports) instead of the query string.'
  },
  'unsupported-media-type': {
    status: 415,
    title: 'Unsupported media type',
    text: 'The request body must be sent with the content type the endpoint accepts, usually `application/json`.'
  },
  'headers-too-large': {
    status: 431,
    title: 'Request header fields too large',
    text: 'The request line and headers together exceed 16 KiB. Send long values in the body instead.'
  },
  unprocessable: {
    status: 422,
    title: 'Unprocessable request',
    text: 'The request is well-formed but cannot be processed as sent: an Idempotency-Key reused with a different request, or (`request.too_costly`) a request that would do more work than one request may: fields resolved, rows read, lookups, array elements touched. Nothing was changed; ask for less at once (smaller pages, fewer fields, fewer operations per request). `export.too_many_rows`: a PDF export whose filters select more rows than a PDF holds (`maxRows`, the `exports.pdfMaxRows` setting); narrow the filters or export CSV or XLSX.'
  },
  'rate-limited': {
    status: 429,
    title: 'Too many requests',
    text: 'The credential exceeded its rate or concurrency limit. Wait until the epoch second in `X-RateLimit-Reset` (or `Retry-After` seconds) before retrying.'
  },
  internal: {
    status: 500,
    title: 'Internal error',
    text: 'The service failed unexpectedly. Nothing was changed. Quote the traceId when reporting it.'
  },
  unavailable: {
    status: 503,
    title: 'Service unavailable',
    text: 'The service is starting, stopping or overloaded. Retry after the time in `Retry-After`. `service.shutting_down`: this instance is draining (a restart or a deploy); it finishes what it took and takes nothing new, so send the request again, a load balancer sends it to another instance. A bulk call cut short this way answers for every row it took and gives `resumeAtLine` for the rest. `service.not_ready`: the readiness probe found a dependency (database, job scheduler, Redis) not answering.'
  }
} as const

export type ProblemKind = keyof typeof problemKinds

const byStatus = new Map<number, ProblemKind>()
for (const [kind, { status }] of Object.entries(problemKinds) as Array<[ProblemKind, { status: number }]>) {
  if (!byStatus.has(status)) byStatus.set(status, kind)
}

export function kindForStatus(status: number): ProblemKind {
  return byStatus.get(status) ?? (status >= 500 ? 'internal' : 'bad-request')
}
