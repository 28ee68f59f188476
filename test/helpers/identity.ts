import { systemPrincipal } from '../../core/auth/principal.ts'
import { TokensService } from '../../plugins/tokens/tokens.class.ts'
import type { TestServer } from './server.ts'

export interface TestUser {
  id: string
  userName: string
  /** A personal access token of the user. */
  token: string
}

let counter = 0

/** A user of the tenant with the given direct roles and a personal access token (issued as the CLI does). */
export async function userWithToken(
  server: TestServer,
  tenantId: string,
  roles: string[],
  options: { userName?: string; scopes?: string[]; password?: string } = {}
): Promise<TestUser> {
  const { users, credentials, tenants } = server.platform
  const user = await users.create(tenantId, {
    userName: options.userName ?? `user-${++counter}-${roles.join('+') || 'none'}`,
    roles,
    password: options.password
  })
  const service = new TokensService({ credentials, users, tenants })
  const created = await service.create(
    { type: 'personal', name: `${user.userName} token`, scopes: options.scopes },
    { principal: { ...systemPrincipal(tenantId, 'test'), userId: user.id } }
  )
  return { id: user.id, userName: user.userName, token: created.token! }
}

/** Polls until `check` is true (cache invalidations travel by NOTIFY) or the deadline passes. */
export async function eventually(check: () => Promise<boolean>, ms = 3000): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise((r) => setTimeout(r, 25))
  }
  return check()
}
