import { systemPrincipal, type Principal } from '../../core/auth/principal.ts'
import type { CliCommand } from '../../core/plugin.ts'
import { tokensPath } from './tokens.shared.ts'
import type { TokenType } from './tokens.schema.ts'

/**
 * `records token create|list|revoke`: tokens from the command line, through the same tokens
 * service the API uses, acting as the named system actor `cli` (which may grant anything).
 */
export const tokensCli: CliCommand[] = [
  {
    area: 'token',
    action: 'create',
    async run(c) {
      const t = c.tenant()
      const type = c.values.type as TokenType
      if (!['api-key', 'personal', 'service-account'].includes(type))
        c.fail('--type must be one of: api-key, personal, service-account')
      const expires = typeof c.values.expires === 'string' ? c.values.expires : undefined
      if (expires && Number.isNaN(Date.parse(expires))) c.fail('--expires must be an ISO 8601 date-time')
      let principal: Principal = systemPrincipal(t, 'cli')
      if (type === 'personal') {
        // A personal token is issued by its user; the operator issues it on the user's behalf.
        const u = await c.platform.users.find(t, c.required('user'))
        principal = { ...principal, userId: u.id }
      }
      // Through the app: the tokens service with its hooks, as REST and the settings pages call it.
      const token = await c.app.service(tokensPath).create(
        {
          type,
          name: c.required('name'),
          scopes: c.list('scopes'),
          roles: c.list('roles'),
          expiresAt: expires ? new Date(expires).toISOString() : undefined
        },
        { principal }
      )
      const narrowed = [
        token.scopes ? `scopes ${token.scopes.join(', ')}` : '',
        token.roles ? `roles ${token.roles.join(', ')}` : ''
      ]
        .filter(Boolean)
        .join('; ')
      c.out(
        `Created ${type} ${token.id} "${token.name}" for tenant ${t}${narrowed ? ` (${narrowed})` : ''}${token.expiresAt ? `, expires ${token.expiresAt}` : ''}.\nThe token is shown once:\n${token.token}`
      )
    }
  },
  {
    area: 'token',
    action: 'list',
    async run(c) {
      for (const t of await c.platform.credentials.list(c.required('tenant'))) {
        const state = t.revokedAt
          ? `revoked ${t.revokedAt}`
          : t.expiresAt && Date.parse(t.expiresAt) < Date.now()
            ? `expired ${t.expiresAt}`
            : 'active'
        c.out(`${t.id}\t${t.kind}\t${t.prefix}…\t${t.name}\t${state}\tlast used ${t.lastUsedAt ?? 'never'}`)
      }
    }
  },
  {
    area: 'token',
    action: 'revoke',
    async run(c) {
      const id = c.arg
      if (!id || !/^[0-9a-f-]{36}$/i.test(id))
        c.fail('give the id of the token to revoke (see: records token list --tenant ID)')
      const revoked = (await c.platform.credentials.revoke(id!)) ?? c.fail(`no token ${id}`)
      c.out(`Revoked ${revoked.id} "${revoked.name}" of tenant ${revoked.tenantId} at ${revoked.revokedAt}.`)
    }
  }
]
