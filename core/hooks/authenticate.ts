import type { HookContext, NextFunction } from '@feathersjs/feathers'
import type { CredentialStore } from '../auth/credentials.ts'
import { requirePrincipal, type Principal } from '../auth/principal.ts'
import { currentScope, inTenant } from '../db/tenant-scope.ts'

/**
 * Around hook on every service: an external call (params.provider set) carries the
 * principal the HTTP layer resolved (bearer token or session), or is authenticated
 * here from its Authorization header (401 without one); an internal call must carry
 * an explicit principal (see systemPrincipal), so nothing is trusted by accident. The call
 * runs in its principal's tenant scope: the database shows it that tenant's rows only.
 */
export const authenticate = (credentials: CredentialStore) => async (context: HookContext, next: NextFunction) => {
  const params = context.params as {
    provider?: string
    principal?: Principal
    headers?: Record<string, string | undefined>
  }
  const principal = params.provider
    ? (params.principal ??= await credentials.authenticate(params.headers?.authorization))
    : requirePrincipal(params, `Internal call to ${context.path}.${context.method}`)
  await (currentScope() === principal.tenantId ? next() : inTenant(principal.tenantId, next))
}
