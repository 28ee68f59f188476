import { systemPrincipal, type Principal } from '../../core/auth/principal.ts'
import type { CliCommand, CliContext } from '../../core/plugin.ts'
import { TokensService } from './tokens.class.ts'
import type { TokenType } from './tokens.schema.ts'

const list = (v: unknown) => (typeof v === 'string' && v ? v.split(',').map((s) => s.trim()).filter(Boolean) : undefined)
const text = (c: CliContext, flag: string) => {
  const v = c.values[flag]
  return typeof v === 'string' ? v : c.fail(`--${flag} is required`)
}
const tenantOf = (c: CliContext) => {
  const t = text(c, 'tenant')
  if (!c.platform.tenants.get(t)) c.fail(`no tenant "${t}" (see: records tenant list)`)
  return t
}

/**
 * `records token create|list|revoke`: tokens from the command line, through the same tokens
 * service the API uses, acting as the named system actor `cli` (which may grant anything).
 */
export const tokensCli: CliCommand[] = [
  {
    area: 'token',
    action: 'create',
    async run(c) {
      const { platform: p, values: v } = c
      const t = tenantOf(c)
      const type = v.type as TokenType
      if (!['api-key', 'personal', 'service-account'].includes(type)) c.fail('--type must be one of: api-key, personal, service-account')
      const expires = typeof v.expires === 'string' ? v.expires : undefined
      if (expires && Number.isNaN(Date.parse(expires))) c.fail('--expires must be an ISO 8601 date-time')
      let principal: Principal = systemPrincipal(t, 'cli')
      if (type === 'personal') {
        // A personal token is issued by its user; the operator issues it on the user's behalf.
        const u = await p.users.find(t, text(c, 'user'))
        principal = { ...principal, userId: u.id }
      }
      const service = new TokensService({ credentials: p.credentials, users: p.users, tenants: p.tenants })
      const token = await service.create(
        { type, name: text(c, 'name'), scopes: list(v.scopes), roles: list(v.roles), expiresAt: expires ? new Date(expires).toISOString() : undefined },
        { principal }
      )
      const narrowed = [token.scopes ? `scopes ${token.scopes.join(', ')}` : '', token.roles ? `roles ${token.roles.join(', ')}` : ''].filter(Boolean).join('; ')
      c.out(`Created ${type} ${token.id} "${token.name}" for tenant ${t}${narrowed ? ` (${narrowed})` : ''}${token.expiresAt ? `, expires ${token.expiresAt}` : ''}.\nThe token is shown once:\n${token.token}`)
    }
  },
  {
    area: 'token',
    action: 'list',
    async run(c) {
      for (const t of await c.platform.credentials.list(text(c, 'tenant'))) {
        const state = t.revokedAt ? `revoked ${t.revokedAt}` : t.expiresAt && Date.parse(t.expiresAt) < Date.now() ? `expired ${t.expiresAt}` : 'active'
        c.out(`${t.id}\t${t.kind}\t${t.prefix}…\t${t.name}\t${state}\tlast used ${t.lastUsedAt ?? 'never'}`)
      }
    }
  },
  {
    area: 'token',
    action: 'revoke',
    async run(c) {
      const id = c.arg
      if (!id || !/^[0-9a-f-]{36}$/i.test(id)) c.fail('give the id of the token to revoke (see: records token list --tenant ID)')
      const revoked = (await c.platform.credentials.revoke(id!)) ?? c.fail(`no token ${id}`)
      c.out(`Revoked ${revoked.id} "${revoked.name}" of tenant ${revoked.tenantId} at ${revoked.revokedAt}.`)
    }
  }
]
