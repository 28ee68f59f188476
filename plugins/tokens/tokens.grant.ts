import { can } from '../../core/auth/access.ts'
import { problems, type ApiError } from '../../core/errors/index.ts'
import { hasTenantReach, isAdmin, type Principal } from '../../core/auth/principal.ts'
import { scopeCatalogue, scopesBeyond, type Scope } from '../../core/auth/scopes.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { TokenType } from './tokens.schema.ts'

/**
 * What a creator may hand on to a token it creates: the one rule behind both the tokens
 * service (withinCreator refuses what lies outside it) and the settings page (which offers
 * exactly it). A scope is given only where the creator's roles could use it, so a reporter
 * is not handed `scim`; a tenant API key only by a creator that acts as the whole tenant.
 */
export interface TokenGrant {
  /** The token types it may create. */
  types: TokenType[]
  /** Roles it may give a service account: the roles it holds (every role of the tenant for 'all'). */
  roles: string[]
  /**
   * Every scope it may give, module-bound ones both plain (`records:read`: usable on at
   * least one module) and narrowed (`records:read:incident`: usable on that module).
   */
  scopes: string[]
}

/** What the tenant offers to give: its modules and the roles it can grant. */
export interface GrantContext {
  modules: readonly RegisteredModule[]
  knownRoles: readonly string[]
}

type ModuleScope = { [S in Scope]: (typeof scopeCatalogue)[S]['perModule'] extends true ? S : never }[Scope]

/** The module actions each module-bound scope lets a token do (see scopeForAction and the services that assert them). */
const actionsOf: Record<ModuleScope, (m: RegisteredModule) => string[]> = {
  'records:read': () => ['read'],
  'records:write': () => ['create', 'update'],
  'records:delete': () => ['delete'],
  'records:transition': (m) => m.definition.workflow.transitions.map((t) => `transition:${t.key}`),
  'bulk:write': () => ['create', 'update'],
  'exports:read': () => ['export'],
  'exports:write': () => ['export'],
  'attachments:read': () => ['read'],
  'attachments:write': () => ['attachments']
}

/**
 * Whether the principal acts as the whole tenant: an unscoped credential with every role,
 * whether as `'all'` (a tenant API key, the CLI) or as a person holding every role the
 * tenant can grant. Only such a creator may make a tenant API key, which acts with every role.
 */
export function actsAsTenant(p: Principal, knownRoles: readonly string[]): boolean {
  if (hasTenantReach(p)) return true
  const held = p.roles
  return p.scopes === 'all' && held !== 'all' && knownRoles.every((r) => held.includes(r))
}

/** Scopes the principal's roles can use: module-bound ones per module, the others by what they need behind them. */
function usableScopes(p: Principal, modules: readonly RegisteredModule[]): string[] {
  const byRoles = { ...p, scopes: 'all' as const }
  const out: string[] = []
  for (const [scope, entry] of Object.entries(scopeCatalogue) as [Scope, { perModule: boolean }][]) {
    if (entry.perModule) {
      const actions = actionsOf[scope as ModuleScope]
      const on = modules.filter((m) => actions(m).some((a) => can(byRoles, m, a)))
      if (on.length) out.push(scope, ...on.map((m) => `${scope}:${m.definition.key}`))
    } else if (scope === 'scim' || scope === 'tokens:write' || scope === 'webhooks:write') {
      // Each needs an admin behind the call.
      if (isAdmin(p)) out.push(scope)
    } else if (scope === 'events:read') {
      // Identity events need admin, module events the read right on their module.
      if (isAdmin(p) || modules.some((m) => can(byRoles, m, 'read'))) out.push(scope)
    } else out.push(scope)
  }
  return out
}

/**
 * Why the principal may not create a token of `type`, as the problem the tokens service answers; undefined when it
 * may: a personal token is its issuing user's, the others are an admin's, and a tenant API key needs a creator that
 * acts as the tenant (`escalation`: the service words that one, with what the creator holds).
 */
export function typeRefusal(
  p: Principal,
  type: TokenType,
  knownRoles: readonly string[]
): ApiError | 'escalation' | undefined {
  if (type === 'personal')
    return p.userId
      ? undefined
      : problems.forbidden(
          'token.user_required',
          'A personal access token acts as its issuing user; create it signed in as that user (or with the CLI).'
        )
  if (!isAdmin(p))
    return problems.forbidden('permission.denied', `Only tenant admins create ${type} tokens.`, { missing: 'admin' })
  return type === 'api-key' && !actsAsTenant(p, knownRoles) ? 'escalation' : undefined
}

/** The token types (tokens.schema.ts) in the order a creator is offered them. */
const offerOrder: readonly TokenType[] = ['personal', 'service-account', 'api-key']

/** The grant of a creator in a tenant: types, roles and scopes it may give (see TokenGrant). */
export function tokenGrant(p: Principal, c: GrantContext): TokenGrant {
  const types = offerOrder.filter((t) => !typeRefusal(p, t, c.knownRoles))
  const usable = usableScopes(p, c.modules)
  // A scoped creator gives only what its own scopes cover too.
  const scopes = p.scopes === 'all' ? usable : usable.filter((s) => scopesBeyond([s], p.scopes).length === 0)
  return { types, roles: p.roles === 'all' ? [...c.knownRoles] : [...p.roles], scopes }
}
