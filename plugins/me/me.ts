import type { Params } from '@feathersjs/feathers'
import { seesModule } from '../../core/auth/access.ts'
import { requirePrincipal, type Principal } from '../../core/auth/principal.ts'
import type { App, Platform } from '../../core/declarations.ts'
import { meMethods, mePath } from './me.shared.ts'
import { describeMe } from './me.openapi.ts'
import { meGraphQL } from './me.graphql.ts'
import type { Plugin } from '../../core/plugin.ts'

declare module '../../core/declarations.ts' {
  interface ServiceTypes {
    [mePath]: MeService
  }
}

/**
 * Who the caller is and what it may do: the kind of credential, the actor, roles,
 * scopes, the module actions its roles grant, and its rate limit. Any valid credential
 * may ask; it reveals nothing about anyone else.
 */
export class MeService {
  constructor(private readonly platform: Platform) {}

  async find(params: Params & { principal?: Principal; csrfToken?: string }) {
    const p = requirePrincipal(params, 'A me call')
    const tenant = this.platform.tenants.get(p.tenantId)!
    const modules: Record<string, string[]> = {}
    for (const m of tenant.modules.values()) {
      if (!seesModule(p, m)) continue
      const perms = m.definition.permissions
      const actions =
        p.roles === 'all'
          ? [...new Set(Object.values(perms).flat())]
          : [...new Set(p.roles.flatMap((r) => perms[r] ?? []))]
      modules[m.definition.key] = actions.sort()
    }
    return {
      tenantId: p.tenantId,
      tenantName: tenant.name,
      credential: {
        id: p.credentialId,
        type: p.kind === 'api_key' ? 'api-key' : p.kind === 'service_account' ? 'service-account' : p.kind
      },
      actor: p.actor,
      userId: p.userId ?? null,
      roles: p.roles,
      scopes: p.scopes,
      modules,
      rateLimit: { requestsPerMinute: this.platform.limitsFor(p.tenantId).requestsPerMinute },
      // Only for a browser session: what its scripts send as X-CSRF-Token on writes.
      ...(p.kind === 'session' && params.csrfToken ? { csrfToken: params.csrfToken } : {})
    }
  }
}

export function me(app: App) {
  app.use(mePath, new MeService(app.get('platform')), { methods: [...meMethods] })
}

export const mePlugin: Plugin = { name: 'me', configure: me, describe: describeMe, graphql: meGraphQL }
