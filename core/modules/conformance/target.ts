import { randomBytes } from 'node:crypto'
import type { Platform } from '../../declarations.ts'
import type { ConformanceTarget } from './kit.ts'

/**
 * The kit's target on a platform listening at `url`: a tenant API key, and users made through the user directory
 * with personal tokens from the credential store (as `records user create` and `records token create` do).
 */
export async function platformTarget(platform: Platform, url: string, tenantId: string): Promise<ConformanceTarget> {
  const tenant = platform.tenants.get(tenantId)
  if (!tenant) throw new Error(`no tenant "${tenantId}"`)
  const run = randomBytes(3).toString('hex')
  let counter = 0
  const adminToken = (await platform.credentials.create({ tenantId, kind: 'api_key', name: `conformance kit ${run}` }))
    .token
  return {
    url,
    tenantId,
    adminToken,
    modules: [...tenant.modules.values()].map((m) => m.definition),
    async newUser(roles) {
      const user = await platform.users.create(tenantId, {
        userName: `kit-${run}-${++counter}-${roles.join('+') || 'no-role'}`.slice(0, 100),
        roles
      })
      const { token } = await platform.credentials.create({
        tenantId,
        kind: 'personal',
        name: `${user.userName} token`,
        userId: user.id
      })
      return { id: user.id, token, roles }
    }
  }
}
