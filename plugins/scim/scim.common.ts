import type { HookContext, NextFunction } from '@feathersjs/feathers'
import { assertScope } from '../../core/auth/access.ts'
import { isAdmin, requirePrincipal, type Principal } from '../../core/auth/principal.ts'
import type { Platform } from '../../core/declarations.ts'
import { problems } from '../../core/errors/index.ts'
import type { CallParams } from '../../core/hooks/call-params.ts'
import { ifMatchPasses, ifMatchTags } from '../../core/http/entity-tag.ts'
import { scimError } from './scim.errors.ts'
import { etagOf } from './scim.schemas.ts'
import { scimBase, urn } from './scim.shared.ts'

/** What every SCIM service is handed. */
export interface ScimContext {
  platform: Platform
  /** Most resources one page lists (`count` above it is lowered to it). */
  maxResults: number
}

export type ScimParams = CallParams<Record<string, unknown>>

/**
 * SCIM is the tenant's user administration: a credential with the `scim` scope (a token
 * without scopes has every scope) acting with the `admin` role (a tenant API key, a service
 * account without roles or with admin, an admin's personal token or session).
 */
export function scimPrincipal(params: ScimParams): Principal {
  const p = requirePrincipal(params, 'A SCIM call')
  assertScope(p, 'scim')
  if (!isAdmin(p))
    throw problems.forbidden(
      'permission.denied',
      "SCIM provisions the tenant's users and groups: it needs a credential acting with the admin role.",
      { missing: 'admin' }
    )
  return p
}

/** Around hook of every SCIM service: the caller must be allowed SCIM before anything is read. */
export async function requireScim(context: HookContext, next: NextFunction) {
  scimPrincipal(context.params as ScimParams)
  await next()
}

/** Where SCIM resources are, as clients reach them (meta.location, $ref). */
export const scimUrl = (platform: Platform) => `${platform.urls.public}/${scimBase}`

/** A query parameter given once, as a string (SCIM parameters are never repeated). */
export function single(query: Record<string, unknown> | undefined, name: string): string | undefined {
  const v = query?.[name]
  if (v === undefined) return undefined
  if (typeof v !== 'string')
    throw scimError(400, 'invalidValue', `The query parameter ${name} must be given once, as text.`)
  return v
}

/** `startIndex` (1-based, default 1; below 1 counts as 1) and `count` (default and most: maxResults; below 0 counts as 0), RFC 7644 §3.4.2.4. */
export function paging(
  query: Record<string, unknown> | undefined,
  maxResults: number
): { startIndex: number; count: number } {
  const int = (name: string, fallback: number) => {
    const raw = single(query, name)
    if (raw === undefined || raw === '') return fallback
    if (!/^[+-]?\d{1,15}$/.test(raw.trim()))
      throw scimError(400, 'invalidValue', `${name} must be a whole number, not ${JSON.stringify(raw.slice(0, 40))}.`)
    return Number(raw.trim())
  }
  return {
    startIndex: Math.max(1, int('startIndex', 1)),
    count: Math.min(maxResults, Math.max(0, int('count', maxResults)))
  }
}

/** A ListResponse message (RFC 7644 §3.4.2). */
export function listResponse(total: number, startIndex: number, resources: unknown[]) {
  return {
    schemas: [urn.listResponse],
    totalResults: total,
    startIndex,
    itemsPerPage: resources.length,
    Resources: resources
  }
}

/**
 * The version an `If-Match` names, for the directory to hold the change to: `*` and no header
 * name none; the current ETag (alone or in a list) names the current version; any other list
 * names no version a resource has, so the change is refused (412), and a value that is no list
 * of ETags is 400 (core/http/entity-tag.ts). Weak comparison: SCIM's ETags are weak (RFC 7644 §3.14),
 * so `W/"3"` and `"3"` both name version 3.
 */
export function ifMatchVersion(header: string | undefined, current: () => number): number | undefined {
  if (header === undefined || ifMatchTags(header) === '*') return undefined
  const now = current()
  return ifMatchPasses(header, etagOf(now), 'weak') ? now : -1
}

/** Where a shown resource keeps its ETag and location when `attributes` left meta out (not serialized). */
const answerOf = Symbol('scim answer')

/** A resource as answered (projected) with the ETag and location of the whole, for the headers. */
export function answered<T extends object>(shown: T, version: number, location: string): T {
  Object.defineProperty(shown, answerOf, { value: { etag: etagOf(version), location }, enumerable: false })
  return shown
}

/** ETag and, for a new resource, Location and 201. */
export function resourceHeaders(context: HookContext, resource: object | null) {
  const answer = resource ? (resource as { [answerOf]?: { etag: string; location: string } })[answerOf] : undefined
  if (!answer) return
  const headers: Record<string, string> = { ...(context.http?.headers as Record<string, string> | undefined) }
  headers.ETag = answer.etag
  if (context.method === 'create') headers.Location = answer.location
  context.http = { ...context.http, headers, ...(context.method === 'create' ? { status: 201 } : {}) }
}
