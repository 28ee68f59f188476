import type { Reply, TestServer } from '../helpers/server.ts'

export const scimType = 'application/scim+json'
export const userUrn = 'urn:ietf:params:scim:schemas:core:2.0:User'
export const groupUrn = 'urn:ietf:params:scim:schemas:core:2.0:Group'
export const enterpriseUrn = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'
export const recordsGroupUrn = 'urn:qehs:params:scim:schemas:extension:records:2.0:Group'
export const patchUrn = 'urn:ietf:params:scim:api:messages:2.0:PatchOp'
export const errorUrn = 'urn:ietf:params:scim:api:messages:2.0:Error'
/** Where a SCIM error carries this service's problem members (type, title, code, traceId, details). */
export const errorExtensionUrn = 'urn:qehs:params:scim:schemas:extension:records:2.0:Error'

/** A service-account token with only the scim scope: what an identity provider is given. */
export async function scimToken(server: TestServer, tenantId: string, roles: string[] | null = null): Promise<string> {
  return (
    await server.platform.credentials.create({
      tenantId,
      kind: 'service_account',
      name: `${tenantId} scim`,
      scopes: ['scim'],
      roles
    })
  ).token
}

/** A SCIM call: bodies sent as application/scim+json. */
export function scim(server: TestServer, token: string) {
  return (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> =>
    server.request(method, `/api/scim/v2${path}`, {
      token,
      ...(body !== undefined
        ? { raw: JSON.stringify(body), headers: { 'content-type': scimType, ...headers } }
        : { headers })
    })
}

/** A user body as Okta sends it. */
export function oktaUser(userName: string, extra: Record<string, unknown> = {}) {
  const [given, family] = userName.split('.')
  return {
    schemas: [userUrn],
    userName,
    name: { givenName: given ?? 'Given', familyName: family ?? 'Family' },
    emails: [{ primary: true, value: userName.includes('@') ? userName : `${userName}@example.com`, type: 'work' }],
    displayName: `${given} ${family}`,
    active: true,
    ...extra
  }
}
