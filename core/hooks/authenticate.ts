import type { HookContext, NextFunction } from '@feathersjs/feathers'
import type { CredentialStore } from '../auth/credentials.ts'
import { requirePrincipal, type Principal } from '../auth/principal.ts'

/**
 * Around hook on every service: an external call (params.provider set) carries the
 * principal the HTTP layer resolved (bearer token or session), or is authenticated
 * here from its Authorization header (401 without one); an internal call must carry
 * an explicit principal (see systemPrincipal), so nothing is trusted by accident.
 */
export const authenticate = (credentials: CredentialStore) => async (context: HookContext, next: NextFunction) => {
  const params = context.params as {
    provider?: string
    principal?: Principal
    headers?: Record<string, string | undefined>
  }
  if (params.provider) {
    params.principal ??= await credentials.authenticate(params.headers?.authorization)
  } else {
    requirePrincipal(params, `Internal call to ${context.path}.${context.method}`)
  }
  await next()
}
