import { problems } from '../errors/index.ts'
import type { Principal } from './principal.ts'

/**
 * No credential reaches further than the roles it acts with, through the user directory:
 * the one rule every door (SCIM, the CLI, any page that edits users) meets, because the
 * directory (core/auth/users.ts, groups.ts) applies it inside the change's own transaction,
 * on the state it locked.
 *
 * A caller that acts with some roles only (an admin's session or personal token, a service
 * account with roles) may
 * - give, take or change a group only if it holds every role the group grants, before and after;
 * - grant or revoke a direct role only if it holds that role;
 * - change the sign-in identity of a user (`userName`, `emails`, `externalId`), its `active`
 *   flag, its direct roles or its group memberships, or delete it, only if it holds every
 *   role that user holds now (directly and through groups): otherwise an admin could point a
 *   health officer's e-mail at an identity-provider account it controls and sign in as them.
 *
 * A caller acting with every role (a tenant API key, a service account without roles, the
 * CLI and other system actions) acts as the tenant and passes.
 */

/** User attributes that say who signs in as the user, whether it may, and what it holds. */
export const identityAttributes: ReadonlySet<string> = new Set([
  'userName',
  'email',
  'emails',
  'externalId',
  'active',
  'roles'
])

/** 403 `role.escalation` unless `caller` holds every role of `roles`; `subject` says whose roles they are ("User x holds", "This group grants"). */
export function assertHoldsRoles(caller: Principal | undefined, roles: Iterable<string>, subject: string): void {
  if (!caller || caller.roles === 'all') return
  const held = caller.roles
  const notHeld = [...new Set(roles)].filter((r) => !held.includes(r)).sort()
  if (!notHeld.length) return
  throw problems.forbidden(
    'role.escalation',
    `${subject} ${notHeld.join(', ')}, which this credential does not hold (it acts with ${held.join(', ') || 'no role'}); only a credential holding every such role changes this.`,
    { notHeld, heldRoles: [...held] }
  )
}
