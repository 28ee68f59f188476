import { assertScope } from '../../core/auth/access.ts'
import type { CredentialInfo, CredentialStore } from '../../core/auth/credentials.ts'
import { isAdmin, requirePrincipal, type Principal } from '../../core/auth/principal.ts'
import { scopeCatalogue, scopesBeyond, unknownScopes } from '../../core/auth/scopes.ts'
import type { CredentialKind } from '../../core/auth/tokens.ts'
import type { UserDirectory } from '../../core/auth/users.ts'
import { problems } from '../../core/errors/index.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'
import { actsAsTenant, tokenGrant, typeRefusal, type GrantContext, type TokenGrant } from './tokens.grant.ts'
import { assertValid, validationError } from '../../core/validation.ts'
import {
  tokenDataValidator,
  tokenQueryValidator,
  type TokenData,
  type TokenOut,
  type TokenQuery,
  type TokenType
} from './tokens.schema.ts'
import type { CallParams } from '../../core/hooks/call-params.ts'

type TokenParams = CallParams<TokenQuery>

const kindOf: Record<TokenType, CredentialKind> = {
  'api-key': 'api_key',
  personal: 'personal',
  'service-account': 'service_account'
}
const typeOf: Record<CredentialKind, TokenType> = {
  api_key: 'api-key',
  personal: 'personal',
  service_account: 'service-account'
}

export function tokenOut(c: CredentialInfo, token?: string): TokenOut {
  const state = c.revokedAt ? 'revoked' : c.expiresAt && Date.parse(c.expiresAt) <= Date.now() ? 'expired' : 'active'
  const out: TokenOut = {
    id: c.id,
    type: typeOf[c.kind],
    name: c.name,
    prefix: c.prefix,
    userId: c.userId,
    scopes: c.scopes,
    roles: c.roles,
    state,
    createdAt: c.createdAt,
    createdBy: c.createdBy,
    lastUsedAt: c.lastUsedAt,
    expiresAt: c.expiresAt,
    revokedAt: c.revokedAt
  }
  if (token) out.token = token
  return out
}

const rolesText = (roles: Principal['roles']) =>
  roles === 'all' ? 'every role' : roles.length ? `the roles ${roles.join(', ')}` : 'no role'
const scopesText = (scopes: Principal['scopes']) =>
  scopes === 'all' ? 'every scope' : `the scopes ${scopes.join(', ')}`

/**
 * What a creator may hand on: a created token never has more than its creator's rights
 * (type reach, roles, scopes: its grant, tokenGrant) and never outlives it. What the request
 * leaves out (roles of a service account, scopes, expiresAt) is the creator's own, so it is
 * within them; what it names beyond them is a 403 naming what the creator holds.
 */
export function withinCreator(
  p: Principal,
  type: TokenType,
  asked: { scopes: string[] | null; roles: string[] | null; expiresAt?: string | null },
  tenant: GrantContext
): { scopes: string[] | null; roles: string[] | null; expiresAt: string | null } {
  // A tenant API key acts as the tenant with every role: only a creator with that reach hands it on.
  if (type === 'api-key' && !actsAsTenant(p, tenant.knownRoles)) {
    throw problems.forbidden(
      'token.escalation',
      `A tenant API key acts as the whole tenant, with every role; only a credential that does so itself (an unscoped tenant API key, the CLI, or a person holding every role of the tenant, ${tenant.knownRoles.join(', ')}) creates one. This credential acts with ${rolesText(p.roles)} and ${scopesText(p.scopes)}: create a service-account token within them instead.`,
      { escalation: 'type', heldRoles: p.roles, heldScopes: p.scopes }
    )
  }
  let roles = asked.roles
  // A personal token acts with its user's roles, which are the creator's own (or the CLI's on a user's behalf).
  if (type === 'service-account' && p.roles !== 'all') {
    // A service account without roles would act as the tenant within its scopes.
    if (!roles) roles = [...p.roles]
    const held = p.roles
    const notHeld = roles.filter((r) => !held.includes(r))
    if (notHeld.length) {
      throw problems.forbidden(
        'token.escalation',
        `This credential acts with ${rolesText(held)}; it cannot give a token ${notHeld.length > 1 ? 'the roles' : 'the role'} ${notHeld.join(', ')}, which it does not hold itself.`,
        {
          escalation: 'roles',
          notHeld,
          heldRoles: held
        }
      )
    }
  }
  let scopes = asked.scopes
  if (p.scopes !== 'all') {
    if (!scopes) scopes = [...p.scopes]
    const notHeld = scopesBeyond(scopes, p.scopes)
    if (notHeld.length) {
      throw problems.forbidden(
        'scope.escalation',
        `This credential holds ${scopesText(p.scopes)}; it cannot give a token ${notHeld.join(', ')}, which they do not cover.`,
        { escalation: 'scopes', notHeld, heldScopes: p.scopes }
      )
    }
  }
  // What the creator's roles cannot use is not handed on either (a reporter's token gets no scim).
  const grant: TokenGrant = tokenGrant(p, tenant)
  const unusable = (scopes ?? []).filter((s) => !grant.scopes.includes(s))
  if (unusable.length) {
    throw problems.forbidden(
      'scope.escalation',
      `This credential acts with ${rolesText(p.roles)}, which cannot use ${unusable.join(', ')}; a token is given only scopes its creator could use: ${grant.scopes.join(', ') || 'none'}.`,
      { escalation: 'scopes', notHeld: unusable, heldScopes: grant.scopes }
    )
  }
  // A browser session is its user signed in with their password, not a credential handed to a
  // program: signing in again renews it, so its end does not bound the tokens it creates.
  const limit = p.kind === 'session' ? undefined : p.expiresAt
  let expiresAt = asked.expiresAt ?? null
  if (limit) {
    if (asked.expiresAt === undefined) expiresAt = limit
    else if (asked.expiresAt === null || Date.parse(asked.expiresAt) > Date.parse(limit)) {
      throw problems.forbidden(
        'token.escalation',
        `This credential expires at ${limit}, and a token it creates may not outlive it; ${asked.expiresAt === null ? 'no expiry was' : `${asked.expiresAt} was`} asked for. Give an expiresAt no later than ${limit}, or leave it out to get ${limit}.`,
        { escalation: 'expiresAt', creatorExpiresAt: limit }
      )
    }
  }
  // Milliseconds, as the creator's expiry is known: a sub-millisecond remainder cannot outlive it.
  return { scopes, roles, expiresAt: expiresAt && new Date(expiresAt).toISOString() }
}

/**
 * The one place tokens are created, listed and revoked: REST, the settings pages and
 * the CLI all come here. A user manages their own personal tokens; admins (and
 * tenant API keys) manage every token of the tenant. No token ever mints a wider one
 * (withinCreator).
 */
export class TokensService {
  constructor(private readonly o: { credentials: CredentialStore; users: UserDirectory; tenants: TenantDirectory }) {}

  private principal(params: TokenParams): Principal {
    const p = requirePrincipal(params, 'A tokens call')
    assertScope(p, 'tokens:write')
    if (p.kind === 'service_account' && !isAdmin(p))
      throw problems.forbidden(
        'permission.denied',
        'A service account manages tokens only when it acts with the admin role.',
        { missing: 'admin' }
      )
    return p
  }

  /** The tenant's modules and roles, which bound what a creator may give (tokenGrant). */
  grantContext(tenantId: string): GrantContext {
    const tenant = this.o.tenants.get(tenantId)
    return { modules: [...(tenant?.modules.values() ?? [])], knownRoles: this.o.users.knownRoles(tenantId) }
  }

  /** What the principal may give a token it creates: the settings page offers exactly this. */
  grant(params: TokenParams): TokenGrant {
    const p = this.principal(params)
    return tokenGrant(p, this.grantContext(p.tenantId))
  }

  /** Whether the principal may see and revoke this token. */
  private owns(p: Principal, c: CredentialInfo): boolean {
    return isAdmin(p) || (!!p.userId && c.userId === p.userId)
  }

  async find(params: TokenParams): Promise<{ items: TokenOut[] }> {
    const p = this.principal(params)
    const query = { ...(params.query ?? {}) }
    assertValid<TokenQuery>(tokenQueryValidator, query)
    const everyone = isAdmin(p) && (query.all || !p.userId)
    if (!everyone && !p.userId) return { items: [] }
    const list = await this.o.credentials.list(p.tenantId, everyone ? {} : { userId: p.userId })
    return { items: list.filter((c) => query.includeRevoked || !c.revokedAt).map((c) => tokenOut(c)) }
  }

  async get(id: string, params: TokenParams): Promise<TokenOut> {
    const p = this.principal(params)
    const c = await this.o.credentials.get(p.tenantId, String(id))
    if (!c || !this.owns(p, c))
      throw problems.notFound('token.not_found', `No token ${id} that this credential can see.`)
    return tokenOut(c)
  }

  async create(data: TokenData, params: TokenParams): Promise<TokenOut> {
    const p = this.principal(params)
    if (params.idempotencyKey !== undefined) {
      // A replay would need the secret stored to send it again; tokens are stored only as hashes.
      throw problems.badRequest(
        'idempotency.unsupported',
        'Token creation does not take an Idempotency-Key: the token is never stored, so a replay could not return it. Create a new one if a response was lost, and revoke the orphan.'
      )
    }
    assertValid<TokenData>(tokenDataValidator, data)
    const tenant = this.o.tenants.get(p.tenantId)!
    const moduleKeys = [...tenant.modules.keys()]
    const unknown = unknownScopes(data.scopes ?? [], moduleKeys)
    if (unknown.length) {
      const allowed = Object.keys(scopeCatalogue)
      throw validationError([
        {
          pointer: '/scopes',
          field: 'scopes',
          code: 'enum',
          detail: `names unknown scope ${unknown.join(', ')}; scopes: ${allowed.join(', ')} (records, bulk, exports and attachments scopes take an optional :<moduleKey> suffix)`,
          allowed
        }
      ])
    }
    if (data.expiresAt && Date.parse(data.expiresAt) <= Date.now()) {
      throw validationError([
        { pointer: '/expiresAt', field: 'expiresAt', code: 'future', detail: 'must be in the future' }
      ])
    }
    const kind = kindOf[data.type]
    // Who may create which type (tokens.grant.ts, the rule the settings page offers by); the API key's escalation is
    // worded below, with what the creator holds (withinCreator).
    const grant = this.grantContext(p.tenantId)
    const refused = typeRefusal(p, data.type, grant.knownRoles)
    if (refused && refused !== 'escalation') throw refused
    let roles: string[] | null = null
    if (kind === 'personal') {
      if (data.roles)
        throw validationError([
          {
            pointer: '/roles',
            field: 'roles',
            code: 'not_allowed',
            detail: "personal tokens act with their user's roles; narrow them with scopes instead"
          }
        ])
    } else {
      if (kind === 'service_account') {
        if (!data.scopes?.length)
          throw validationError([
            {
              pointer: '/scopes',
              field: 'scopes',
              code: 'required',
              detail: 'a service-account token needs at least one scope'
            }
          ])
        if (data.roles) {
          const known = this.o.users.knownRoles(p.tenantId)
          const bad = data.roles.filter((r) => !known.includes(r))
          if (bad.length)
            throw validationError([
              {
                pointer: '/roles',
                field: 'roles',
                code: 'enum',
                detail: `names unknown role ${bad.join(', ')}; roles of this tenant: ${known.join(', ')}`,
                allowed: known
              }
            ])
          roles = data.roles
        }
      } else if (data.roles) {
        throw validationError([
          {
            pointer: '/roles',
            field: 'roles',
            code: 'not_allowed',
            detail: 'a tenant API key acts as the tenant; give roles to a service account instead'
          }
        ])
      }
    }
    const asked = { scopes: data.scopes ?? null, roles, expiresAt: data.expiresAt }
    const bounded = withinCreator(p, data.type, asked, grant)
    const { token, credential } = await this.o.credentials.create({
      tenantId: p.tenantId,
      kind,
      name: data.name,
      userId: kind === 'personal' ? p.userId : null,
      ...bounded,
      createdBy: p.actor
    })
    return tokenOut(credential, token)
  }

  /** Revokes: the token is 401 from its next call, on every instance. */
  async remove(id: string | null, params: TokenParams): Promise<TokenOut> {
    const p = this.principal(params)
    const c = id ? await this.o.credentials.get(p.tenantId, String(id)) : undefined
    if (!c || !this.owns(p, c))
      throw problems.notFound('token.not_found', `No token ${id} that this credential can see.`)
    return tokenOut((await this.o.credentials.revoke(c.id, p.tenantId)) ?? c)
  }
}
