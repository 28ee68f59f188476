import { problems } from '../errors/index.ts'
import type { CredentialKind } from './tokens.ts'

export interface Actor {
  type: 'api-key' | 'user' | 'service-account' | 'system'
  id: string
  name: string
}

/** Who is calling, for which tenant, with which rights. Every service call carries one. */
export interface Principal {
  tenantId: string
  credentialId: string
  kind: CredentialKind | 'system'
  actor: Actor
  /** 'all' for tenant API keys and system actions; otherwise the roles held now. */
  roles: 'all' | readonly string[]
  scopes?: readonly string[]
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
  return { tenantId, credentialId: '00000000-0000-0000-0000-000000000000', kind: 'system', actor: { type: 'system', id: name, name }, roles: 'all' }
}
