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

/** An explicit, named internal action (CLI, jobs): never implied by a missing provider. */
export function systemPrincipal(tenantId: string, name: string): Principal {
  return { tenantId, credentialId: '00000000-0000-0000-0000-000000000000', kind: 'system', actor: { type: 'system', id: name, name }, roles: 'all' }
}
