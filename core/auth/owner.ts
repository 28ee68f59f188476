import type pg from 'pg'
import { principalOfCredential } from './credentials.ts'
import { systemPrincipal, type Principal } from './principal.ts'
import { principalOfUser } from './sessions.ts'

/**
 * The owner of something that acts later on its creator's rights (a webhook subscription):
 * the credential it was made with, or the user for a browser session (sessions end, the
 * user's standing does not), or a named system action.
 */
export interface Owner {
  kind: Principal['kind']
  id: string
}

/** Who owns what the principal creates now. */
export function ownerOf(p: Principal): Owner {
  if (p.kind === 'system') return { kind: 'system', id: p.actor.id }
  if (p.kind === 'session') return { kind: 'session', id: p.userId ?? p.credentialId }
  return { kind: p.kind, id: p.credentialId }
}

/**
 * What the owner may do now: the token as it would authenticate now (undefined once revoked,
 * expired or its user deactivated), the user with the roles held now, or the system.
 */
export async function principalOfOwner(
  db: pg.Pool | pg.PoolClient,
  tenantId: string,
  owner: Owner
): Promise<Principal | undefined> {
  if (owner.kind === 'system') return systemPrincipal(tenantId, owner.id)
  if (owner.kind === 'session') return principalOfUser(db, tenantId, owner.id)
  return principalOfCredential(db, tenantId, owner.id)
}
