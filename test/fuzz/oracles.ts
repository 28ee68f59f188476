import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type { Workflow } from './bases.ts'
import type { Schema } from './operations.ts'
import { pascal } from './samples.ts'
import type { WireReply } from './wire.ts'

/**
 * Judgements on one answer that need no database: the problem body of a refusal, the
 * rights of a minted token, the guard of a fired transition, the payloads PostgreSQL holds.
 */

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void

/** Why a 4xx answer is not an RFC 7807 problem with the six members the document requires. */
export function problemIssues(reply: WireReply): string[] {
  const type = (reply.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase()
  if (type === 'application/graphql-response+json') return graphqlErrorIssues(reply)
  if (type === 'application/scim+json') return scimErrorIssues(reply)
  if (type !== 'application/problem+json')
    return [
      `a ${reply.status} with Content-Type ${JSON.stringify(reply.headers['content-type'] ?? '(none)')}, not application/problem+json`
    ]
  let body: any
  try {
    body = JSON.parse(reply.text)
  } catch {
    return [`a ${reply.status} whose problem body is not JSON`]
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return [`a ${reply.status} whose problem body is not an object`]
  const issues: string[] = []
  for (const member of ['type', 'title', 'detail', 'code', 'traceId']) {
    if (typeof body[member] !== 'string' || (member !== 'detail' && !body[member]))
      issues.push(`problem member "${member}" is ${JSON.stringify(body[member])}, not a non-empty string`)
  }
  if (body.status !== reply.status)
    issues.push(`problem member "status" is ${JSON.stringify(body.status)}, the answer's status is ${reply.status}`)
  return issues
}

/**
 * GraphQL over HTTP answers a document it refuses (syntax, validation, limits) with a 4xx
 * in GraphQL's own shape when the client accepts application/graphql-response+json: no
 * `data`, and each error carrying the problem's code, status and traceId in `extensions`.
 */
function graphqlErrorIssues(reply: WireReply): string[] {
  let body: any
  try {
    body = JSON.parse(reply.text)
  } catch {
    return [`a ${reply.status} GraphQL response that is not JSON`]
  }
  if (!Array.isArray(body?.errors) || !body.errors.length) return [`a ${reply.status} GraphQL response without errors`]
  if ('data' in body) return [`a ${reply.status} GraphQL response with a data entry`]
  const issues: string[] = []
  for (const e of body.errors) {
    if (typeof e?.message !== 'string' || !e.message) issues.push('a GraphQL error without a message')
    for (const member of ['code', 'traceId'])
      if (typeof e?.extensions?.[member] !== 'string' || !e.extensions[member])
        issues.push(`GraphQL error extension "${member}" is ${JSON.stringify(e?.extensions?.[member])}`)
    if (e?.extensions?.status !== reply.status)
      issues.push(
        `GraphQL error extension "status" is ${JSON.stringify(e?.extensions?.status)}, the answer's status is ${reply.status}`
      )
  }
  return issues
}

/**
 * SCIM (RFC 7644 §3.12) answers its refusals in its own shape under application/scim+json:
 * the Error schema, `status` as a string equal to the answer's, `detail`, a known `scimType`
 * when there is one, and the problem's `code` and `traceId` beside them or under an
 * extension URN of their own.
 */
export function scimErrorIssues(reply: WireReply): string[] {
  let body: any
  try {
    body = JSON.parse(reply.text)
  } catch {
    return [`a ${reply.status} SCIM error that is not JSON`]
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return [`a ${reply.status} SCIM error that is not an object`]
  const issues: string[] = []
  if (!Array.isArray(body.schemas) || !body.schemas.includes('urn:ietf:params:scim:api:messages:2.0:Error'))
    issues.push(
      `SCIM error "schemas" is ${JSON.stringify(body.schemas)}, without urn:ietf:params:scim:api:messages:2.0:Error`
    )
  if (body.status !== String(reply.status))
    issues.push(
      `SCIM error "status" is ${JSON.stringify(body.status)}, not the answer's status "${reply.status}" as a string`
    )
  if (typeof body.detail !== 'string')
    issues.push(`SCIM error "detail" is ${JSON.stringify(body.detail)}, not a string`)
  const scimTypes = [
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
  ]
  if (body.scimType !== undefined && !scimTypes.includes(body.scimType))
    issues.push(`SCIM error "scimType" is ${JSON.stringify(body.scimType)}, not one of RFC 7644's`)
  // The service's own members (code, traceId) at the top level, or under an extension URN the body lists in `schemas`.
  const extensions = (Array.isArray(body.schemas) ? body.schemas : []).filter(
    (s: unknown) =>
      typeof s === 'string' &&
      s !== 'urn:ietf:params:scim:api:messages:2.0:Error' &&
      body[s] &&
      typeof body[s] === 'object'
  )
  for (const member of ['code', 'traceId']) {
    const value = [body, ...extensions.map((s: string) => body[s])].map((o) => o[member]).find((v) => v !== undefined)
    if (typeof value !== 'string' || !value)
      issues.push(
        `SCIM error member "${member}" is ${JSON.stringify(value)}, not a non-empty string (at the top level or under an extension URN listed in "schemas")`
      )
  }
  return issues
}

/** What `GET /api/v1/me` says about a credential. */
export interface Me {
  roles: 'all' | string[]
  scopes: 'all' | string[]
  modules: Record<string, string[]>
}

const scopeOfAction = (a: string) =>
  a.startsWith('transition:')
    ? 'records:transition'
    : (
        {
          read: 'records:read',
          create: 'records:write',
          update: 'records:write',
          delete: 'records:delete',
          export: 'exports:write',
          attachments: 'attachments:write'
        } as Record<string, string>
      )[a]

const has = (scopes: Me['scopes'], scope: string, module?: string) =>
  scopes === 'all' || scopes.includes(scope) || (!!module && scopes.includes(`${scope}:${module}`))

/**
 * What a credential can actually do: each module action its roles grant and its scopes allow,
 * the scoped rights of non-module areas, and token management (scope plus the admin role).
 * Written here from the documented rules, not imported, so a bug in core/auth is not shared.
 */
export function rightsOf(me: Me): Set<string> {
  const out = new Set<string>()
  const admin = me.roles === 'all' || me.roles.includes('admin')
  for (const [m, actions] of Object.entries(me.modules)) {
    for (const a of actions) if (scopeOfAction(a) && has(me.scopes, scopeOfAction(a), m)) out.add(`${m}:${a}`)
    for (const s of ['exports:read', 'attachments:read', 'bulk:write'])
      if (has(me.scopes, s, m) && actions.length) out.add(`${m}:${s}`)
  }
  for (const s of ['modules:read', 'scim', 'graphql']) if (has(me.scopes, s)) out.add(s)
  if (admin && has(me.scopes, 'tokens:write')) out.add('tokens:write (admin)')
  return out
}

/** Rights the minted token has and its minter lacks. */
export function escalation(minter: Me, minted: Me): string[] {
  const mine = rightsOf(minter)
  return [...rightsOf(minted)].filter((r) => !mine.has(r))
}

/** As records.payload.ts defines a filled field (written again here, not imported). */
const filled = (v: unknown) =>
  v !== undefined && v !== null && !(typeof v === 'string' && v.trim() === '') && !(Array.isArray(v) && v.length === 0)

/** Fields a fired transition's guard needs that the stored payload lacks as an own member. */
export function guardMisses(workflow: Workflow | undefined, transition: unknown, payload: unknown): string[] {
  const t = workflow?.transitions.find((x) => x.key === transition)
  if (!t || payload === null || typeof payload !== 'object') return []
  const needs = [...(workflow!.states.find((s) => s.key === t.to)?.requires ?? []), ...(t.requires ?? [])]
  return needs.filter(
    (f) => !Object.prototype.hasOwnProperty.call(payload, f) || !filled((payload as Record<string, unknown>)[f])
  )
}

/** Validates stored payloads against `<Module>Payload` of the tenant document (what create accepts). */
export class PayloadCheck {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: false })
  private readonly byModule = new Map<string, ValidateFunction>()

  constructor(doc: Schema) {
    addFormats(this.ajv)
    this.ajv.addSchema(doc, 'doc')
  }

  /** Why a stored payload would not pass create, or undefined. */
  issue(module: string, payload: unknown): string | undefined {
    let v = this.byModule.get(module)
    if (!v) {
      v = this.ajv.getSchema(`doc#/components/schemas/${pascal(module)}Payload`)
      if (!v) return undefined
      this.byModule.set(module, v)
    }
    return v(payload) ? undefined : JSON.stringify(v.errors?.slice(0, 3))
  }
}

/** Own properties of Object.prototype now, to compare after each request (the server runs in this process). */
export const prototypeKeys = () => Object.getOwnPropertyNames(Object.prototype).sort().join(',')
