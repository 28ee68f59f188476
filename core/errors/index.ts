import { FeathersError } from '@feathersjs/errors'
import { kindForStatus, problemKinds, type ProblemKind } from './kinds.ts'

export { problemKinds, type ProblemKind } from './kinds.ts'

export interface FieldProblem {
  /** JSON pointer of the failing value, e.g. `/payload/severity`. */
  pointer: string
  field: string
  code: string
  detail: string
  allowed?: unknown[]
}

/** A domain error with a stable machine code, rendered as RFC 7807 by the HTTP layer. */
export class ApiError extends FeathersError {
  readonly kind: ProblemKind
  readonly problemCode: string
  readonly extra: Record<string, unknown>
  readonly headers: Record<string, string>
  /** A body stored earlier (idempotent replay) to be sent exactly as it was. */
  replayBody?: ProblemBody

  constructor(
    kind: ProblemKind,
    code: string,
    detail: string,
    extra: Record<string, unknown> = {},
    headers: Record<string, string> = {}
  ) {
    const { status, title } = problemKinds[kind]
    super(detail, title.replace(/\W/g, ''), status, kind, { code, ...extra })
    this.kind = kind
    this.problemCode = code
    this.extra = extra
    this.headers = headers
  }
}

export const problems = {
  validation: (detail: string, errors: FieldProblem[], more = false) =>
    new ApiError('validation', 'field.invalid', detail, more ? { errors, moreErrors: true } : { errors }),
  badRequest: (code: string, detail: string) => new ApiError('bad-request', code, detail),
  unauthenticated: (code: string, detail: string) =>
    new ApiError('authentication', code, detail, {}, { 'WWW-Authenticate': 'Bearer realm="records"' }),
  forbidden: (code: string, detail: string, extra?: Record<string, unknown>) =>
    new ApiError('forbidden', code, detail, extra),
  notFound: (code: string, detail: string) => new ApiError('not-found', code, detail),
  conflict: (code: string, detail: string, extra?: Record<string, unknown>) =>
    new ApiError('conflict', code, detail, extra),
  preconditionFailed: (detail: string, extra?: Record<string, unknown>) =>
    new ApiError('precondition-failed', 'record.version_mismatch', detail, extra),
  unprocessable: (code: string, detail: string) => new ApiError('unprocessable', code, detail),
  gone: (code: string, detail: string) => new ApiError('gone', code, detail),
  /** 503 with `Retry-After`: `service.shutting_down` (this instance drains; another answers), `service.not_ready` (a dependency is down). */
  unavailable: (code: string, detail: string, extra?: Record<string, unknown>) =>
    new ApiError('unavailable', code, detail, extra, { 'Retry-After': '5' })
}

/** The public part of a domain error, for problems carried inside a larger answer (bulk row outcomes, failed export jobs). */
export function problemFields(err: ApiError): Record<string, unknown> {
  return { status: err.code, code: err.problemCode, detail: err.message, ...err.extra }
}

export interface ProblemBody {
  type: string
  title: string
  status: number
  detail: string
  code: string
  traceId: string
  [extra: string]: unknown
}

/** Maps any thrown value onto a problem body; unknown errors become a 500 that reveals nothing. */
export function toProblem(
  err: unknown,
  traceId: string,
  errorsUrl: string
): { body: ProblemBody; headers: Record<string, string>; internal: boolean } {
  if (err instanceof ApiError && err.replayBody) return { body: err.replayBody, headers: err.headers, internal: false }
  if (err instanceof ApiError) {
    return {
      body: {
        type: `${errorsUrl}/${err.kind}`,
        title: problemKinds[err.kind].title,
        status: err.code,
        detail: err.message,
        code: err.problemCode,
        traceId,
        ...err.extra
      },
      headers: err.headers,
      internal: false
    }
  }
  const e = err as { code?: unknown; status?: unknown; statusCode?: unknown; message?: string; expose?: boolean }
  // Feathers errors carry `code`; Koa/http-errors carry `status` and `expose`.
  const status =
    err instanceof FeathersError
      ? err.code
      : typeof e?.status === 'number'
        ? e.status
        : typeof e?.statusCode === 'number'
          ? e.statusCode
          : 500
  const internal = status >= 500 && !(err instanceof FeathersError && status === 503)
  const kind = kindForStatus(status)
  const code = internal ? 'internal.error' : `http.${kind.replace(/-/g, '_')}`
  const detail = internal
    ? 'The service failed to process the request; nothing was changed.'
    : e?.message || problemKinds[kind].title
  return {
    body: { type: `${errorsUrl}/${kind}`, title: problemKinds[kind].title, status, detail, code, traceId },
    headers: {},
    internal
  }
}
