import { ApiError, type ProblemBody, type ProblemKind } from '../../core/errors/index.ts'
import type { ProblemFormat } from '../../core/plugin.ts'
import { scimMediaType, scimPathPattern, urn } from './scim.shared.ts'

/** RFC 7644 §3.12 scimType values this service sends. */
export const scimTypes = [
  'invalidFilter',
  'tooMany',
  'uniqueness',
  'mutability',
  'invalidSyntax',
  'invalidPath',
  'noTarget',
  'invalidValue',
  'invalidVers',
  'sensitive'
] as const
export type ScimType = (typeof scimTypes)[number]

const kindOf: Record<number, ProblemKind> = {
  400: 'bad-request',
  403: 'forbidden',
  404: 'not-found',
  409: 'conflict',
  412: 'precondition-failed',
  413: 'payload-too-large'
}
const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

/** A refusal with a SCIM `scimType`; its code is `scim.<scim_type>` unless given. */
export function scimError(
  status: 400 | 403 | 404 | 409 | 412 | 413,
  scimType: ScimType | undefined,
  detail: string,
  o: { code?: string; extra?: Record<string, unknown> } = {}
): ApiError {
  return new ApiError(kindOf[status], o.code ?? (scimType ? `scim.${snake(scimType)}` : 'scim.refused'), detail, {
    ...(scimType ? { scimType } : {}),
    ...o.extra
  })
}

/** The scimType of problems raised outside the SCIM code (the JSON reader, the data checks, the directory). */
const scimTypeOfCode: Record<string, ScimType> = {
  'field.invalid': 'invalidValue',
  'request.malformed_json': 'invalidSyntax',
  'user.exists': 'uniqueness',
  'group.exists': 'uniqueness'
}

/** A field problem of the `filter` query parameter only (e.g. a NUL character in it, refused before SCIM's parser): an invalid filter to SCIM. */
function isFilterProblem(problem: ProblemBody): boolean {
  const errors = problem.errors
  return (
    problem.code === 'field.invalid' &&
    Array.isArray(errors) &&
    errors.length > 0 &&
    errors.every((e) => (e as { pointer?: unknown })?.pointer === '/filter')
  )
}

/**
 * A problem as a SCIM error (RFC 7644 §3.12): `schemas`, `status` as a string, `scimType`
 * where one applies and `detail` at the top level, as a strict SCIM client reads it; the
 * problem's other members (`type`, `title`, `code`, `traceId`, details such as `notHeld`)
 * under this service's extension URN, which `schemas` lists (as a resource lists its
 * extensions), so the rest of the API's tooling still finds them.
 */
export function scimErrorBody(problem: ProblemBody): Record<string, unknown> {
  const { status, scimType, detail, ...rest } = problem
  const type =
    (typeof scimType === 'string' ? scimType : undefined) ??
    (isFilterProblem(problem) ? 'invalidFilter' : scimTypeOfCode[problem.code])
  return {
    schemas: [urn.error, urn.recordsError],
    status: String(status),
    ...(type ? { scimType: type } : {}),
    detail,
    [urn.recordsError]: rest
  }
}

/** Every refusal under /api/scim/v2, whichever layer makes it. */
export const scimProblemFormat: ProblemFormat = {
  paths: scimPathPattern,
  contentType: scimMediaType,
  render: scimErrorBody
}
