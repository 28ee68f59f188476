import type { Params } from '@feathersjs/feathers'
import { assertScope } from '../../core/auth/access.ts'
import type { CredentialInfo, CredentialStore } from '../../core/auth/credentials.ts'
import { isAdmin, requirePrincipal, type Principal } from '../../core/auth/principal.ts'
import { scopeCatalogue, scopesWithin, unknownScopes } from '../../core/auth/scopes.ts'
import type { CredentialKind } from '../../core/auth/tokens.ts'
import type { UserDirectory } from '../../core/auth/users.ts'
import { problems } from '../../core/errors/index.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'
import { assertValid, validationError } from '../../core/validation.ts'
import { tokenDataValidator, tokenQueryValidator, type TokenData, type TokenOut, type TokenQuery, type TokenType } from './tokens.schema.ts'

interface TokenParams extends Params<TokenQuery> {
  principal?: Principal
  headers?: Record<string, string | undefined>
}

const kindOf: Record<TokenType, CredentialKind> = { 'api-key': 'api_key', personal: 'personal', 'service-account': 'service_account' }
const typeOf: Record<CredentialKind, TokenType> = { api_key: 'api-key', personal: 'personal', service_account: 'service-account' }

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

/**
 * The one place tokens are created, listed and revoked: REST, the settings pages and
 * the CLI all come here. A user manages their own personal tokens; admins (and
 * tenant API keys) manage every token of the tenant. No token ever mints a wider one.
 */
export class TokensService {
  constructor(private readonly o: { credentials: CredentialStore; users: UserDirectory; tenants: TenantDirectory }) {}

  private principal(params: TokenParams): Principal {
    const p = requirePrincipal(params, 'A tokens call')
    assertScope(p, 'tokens:write')
    if (p.kind === 'service_account' && !isAdmin(p)) throw problems.forbidden('permission.denied', 'A service account manages tokens only when it acts with the admin role.', { missing: 'admin' })
    return p
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
    if (!c || !this.owns(p, c)) throw problems.notFound('token.not_found', `No token ${id} that this credential can see.`)
    return tokenOut(c)
  }

  async create(data: TokenData, params: TokenParams): Promise<TokenOut> {
    const p = this.principal(params)
    if (params.headers?.['idempotency-key'] !== undefined) {
      // A replay would need the secret stored to send it again; tokens are stored only as hashes.
      throw problems.badRequest('idempotency.unsupported', 'Token creation does not take an Idempotency-Key: the token is never stored, so a replay could not return it. Create a new one if a response was lost, and revoke the orphan.')
    }
    assertValid<TokenData>(tokenDataValidator, data)
    const tenant = this.o.tenants.get(p.tenantId)!
    const moduleKeys = [...tenant.modules.keys()]
    const unknown = unknownScopes(data.scopes ?? [], moduleKeys)
    if (unknown.length) {
      const allowed = Object.keys(scopeCatalogue)
      throw validationError([{ pointer: '/scopes', field: 'scopes', code: 'enum', detail: `names unknown scope ${unknown.join(', ')}; scopes: ${allowed.join(', ')} (records, bulk, exports and attachments scopes take an optional :<moduleKey> suffix)`, allowed }])
    }
    if (data.expiresAt && Date.parse(data.expiresAt) <= Date.now()) {
      throw validationError([{ pointer: '/expiresAt', field: 'expiresAt', code: 'future', detail: 'must be in the future' }])
    }
    const kind = kindOf[data.type]
    let scopes: string[] | null = data.scopes ?? null
    let roles: string[] | null = null
    if (kind === 'personal') {
      if (!p.userId) throw problems.forbidden('token.user_required', 'A personal access token acts as its issuing user; create it signed in as that user (or with the CLI).')
      if (data.roles) throw validationError([{ pointer: '/roles', field: 'roles', code: 'not_allowed', detail: 'personal tokens act with their user\'s roles; narrow them with scopes instead' }])
    } else {
      if (!isAdmin(p)) throw problems.forbidden('permission.denied', `Only tenant admins create ${data.type} tokens.`, { missing: 'admin' })
      if (kind === 'service_account') {
        if (!scopes?.length) throw validationError([{ pointer: '/scopes', field: 'scopes', code: 'required', detail: 'a service-account token needs at least one scope' }])
        if (data.roles) {
          const known = this.o.users.knownRoles(p.tenantId)
          const bad = data.roles.filter((r) => !known.includes(r))
          if (bad.length) throw validationError([{ pointer: '/roles', field: 'roles', code: 'enum', detail: `names unknown role ${bad.join(', ')}; roles of this tenant: ${known.join(', ')}`, allowed: known }])
          roles = data.roles
        }
      } else if (data.roles) {
        throw validationError([{ pointer: '/roles', field: 'roles', code: 'not_allowed', detail: 'a tenant API key acts as the tenant; give roles to a service account instead' }])
      }
    }
    // A narrowed token may only mint tokens within its own scopes.
    if (p.scopes !== 'all') {
      if (!scopes) scopes = [...p.scopes]
      if (!scopesWithin(scopes, p.scopes)) throw problems.forbidden('scope.escalation', `A token may not create a token with scopes it does not hold (${p.scopes.join(', ')}).`)
    }
    const { token, credential } = await this.o.credentials.create({
      tenantId: p.tenantId,
      kind,
      name: data.name,
      userId: kind === 'personal' ? p.userId : null,
      scopes,
      roles,
      expiresAt: data.expiresAt ?? null,
      createdBy: p.actor
    })
    return tokenOut(credential, token)
  }

  /** Revokes: the token is 401 from its next call, on every instance. */
  async remove(id: string | null, params: TokenParams): Promise<TokenOut> {
    const p = this.principal(params)
    const c = id ? await this.o.credentials.get(p.tenantId, String(id)) : undefined
    if (!c || !this.owns(p, c)) throw problems.notFound('token.not_found', `No token ${id} that this credential can see.`)
    return tokenOut((await this.o.credentials.revoke(c.id, p.tenantId)) ?? c)
  }
}
