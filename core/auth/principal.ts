import { problems } from '../errors/index.ts'
import type { Scopes } from './scopes.ts'
import type { CredentialKind } from './tokens.ts'

export interface Actor {
  type: 'api-key' | 'user' | 'service-account' | 'system'
  id: string
  name: string
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
  return { tenantId, credentialId: '00000000-0000-0000-0000-000000000000', kind: 'system', actor: { type: 'system', id: name, name }, roles: 'all', scopes: 'all' }
}
