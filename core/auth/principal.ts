import { problems } from '../errors/index.ts'
import type { Scopes } from './scopes.ts'
import type { CredentialKind } from './tokens.ts'

/**
 * Who did something, as records, activity, events and audit entries keep it (a snapshot at
 * the time). A call through a token names the token (`token`); a service account or API key
 * also names the person behind it (`onBehalfOf`: the user who created it). The person a
 * four-eyes rule compares is `personOf`.
 */
export interface Actor {
  type: 'api-key' | 'user' | 'service-account' | 'system'
  id: string
  name: string
  /** The token the call came through (absent for sessions and system actions). */
  token?: { type: 'api-key' | 'personal' | 'service-account'; id: string; name: string }
  /** The person behind a service account or API key: its creator, or the person behind its creator. */
  onBehalfOf?: { userId: string; name: string }
}

/**
 * A user id as the platform stores and compares it: a UUID in lower case, without a `urn:uuid:` prefix. A payload's
 * user field takes any way of writing one (JSON Schema's uuid format); the record keeps this one, so row rules and
 * separation of duties compare one person one way.
 */
export function canonicalUserId(v: string): string {
  return v.toLowerCase().replace(/^urn:uuid:/, '')
}

/** The person behind an actor: itself if a user, else whom it acts for; undefined if nobody is recorded. */
export function personOf(actor: Partial<Actor> | null | undefined): { userId: string; name: string } | undefined {
  if (!actor) return undefined
  if (actor.type === 'user' && typeof actor.id === 'string') return { userId: actor.id, name: String(actor.name ?? '') }
  const o = actor.onBehalfOf
  return o && typeof o.userId === 'string' ? { userId: o.userId, name: String(o.name ?? '') } : undefined
}

/** Whether two actors are one: the same credential, or the same person behind two credentials (four-eyes rules). */
export function sameActor(a: Partial<Actor> | null | undefined, b: Actor): boolean {
  if (!a) return false
  if (a.id === b.id) return true
  const pa = personOf(a)
  return !!pa && pa.userId === personOf(b)?.userId
}

/** Who is calling, for which tenant, with which rights. Every service call carries one. */
export interface Principal {
  tenantId: string
  /** The token or session behind the call (rate limits and idempotency keys are per credential). */
  credentialId: string
  kind: CredentialKind | 'session' | 'system'
  actor: Actor
  /** The user behind a personal token or a session. */
  userId?: string
  /** 'all' for tenant API keys and system actions; otherwise the roles held now. */
  roles: 'all' | readonly string[]
  /** 'all' unless the token was narrowed to scopes (always narrowed for service accounts). */
  scopes: Scopes
  /** When the credential behind the call stops working (a token's expiry, a session's absolute end); unset if never. */
  expiresAt?: string
}

/** The built-in tenant role that manages users, groups and every token of the tenant. */
export const adminRole = 'admin'

/** Whether the principal administers its tenant (API keys act as the tenant). */
export function isAdmin(p: Principal): boolean {
  return p.roles === 'all' || p.roles.includes(adminRole)
}

/**
 * Whether the principal acts as the whole tenant: every role and every scope (an unscoped
 * tenant API key, a system action). Only such a principal may hand that reach on.
 */
export function hasTenantReach(p: Principal): boolean {
  return p.roles === 'all' && p.scopes === 'all'
}

/**
 * The principal a service call carries. The app-wide authenticate hook sets it for
 * every external call and refuses internal calls without one; services read it here.
 */
export function requirePrincipal(params: { principal?: Principal }, what: string): Principal {
  if (!params.principal) throw problems.forbidden('auth.internal_without_principal', `${what} without a principal.`)
  return params.principal
}

/** An explicit, named internal action (CLI, jobs): never implied by a missing provider. */
export function systemPrincipal(tenantId: string, name: string): Principal {
  return {
    tenantId,
    credentialId: '00000000-0000-0000-0000-000000000000',
    kind: 'system',
    actor: { type: 'system', id: name, name },
    roles: 'all',
    scopes: 'all'
  }
}
