/** Where SCIM 2.0 is served (no `/v1`, as the spec has it), its media type and message URNs. */
export const scimBase = 'api/scim/v2'
export const scimPaths = {
  users: `${scimBase}/Users`,
  groups: `${scimBase}/Groups`,
  serviceProviderConfig: `${scimBase}/ServiceProviderConfig`,
  resourceTypes: `${scimBase}/ResourceTypes`,
  schemas: `${scimBase}/Schemas`
} as const
export const scimMethods = ['find', 'get', 'create', 'update', 'patch', 'remove'] as const
/** Every path under the SCIM base, with or without a trailing slash (SCIM clients send `/Users/`). */
export const scimPathPattern = new RegExp(`^/${scimBase}(?:/.*)?$`)
export const scimMediaType = 'application/scim+json'

export const urn = {
  user: 'urn:ietf:params:scim:schemas:core:2.0:User',
  group: 'urn:ietf:params:scim:schemas:core:2.0:Group',
  enterpriseUser: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
  /** This service's Group extension: the roles a group grants. */
  recordsGroup: 'urn:qehs:params:scim:schemas:extension:records:2.0:Group',
  listResponse: 'urn:ietf:params:scim:api:messages:2.0:ListResponse',
  patchOp: 'urn:ietf:params:scim:api:messages:2.0:PatchOp',
  error: 'urn:ietf:params:scim:api:messages:2.0:Error',
  /** This service's extension of a SCIM error: the problem members (type, title, code, traceId, details), out of a strict client's way. */
  recordsError: 'urn:qehs:params:scim:schemas:extension:records:2.0:Error',
  serviceProviderConfig: 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig',
  resourceType: 'urn:ietf:params:scim:schemas:core:2.0:ResourceType',
  schema: 'urn:ietf:params:scim:schemas:core:2.0:Schema'
} as const

/** The identity audit trail: user and group changes, from SCIM and the CLI alike. */
export const identityLogPath = 'api/v1/identity-log'

const endpointNames = ['Users', 'Groups', 'ServiceProviderConfig', 'ResourceTypes', 'Schemas']

const scimEndpoint = new RegExp(`^/${scimBase}/([^/]+)(/.*)?$`)

/** `/api/scim/v2/users/…` → `/api/scim/v2/Users/…`: endpoint names in any case (Microsoft's collection asks for `/users`). Runs on every request: a prefix test first. */
export function canonicalScimPath(path: string): string | undefined {
  if (!path.startsWith(`/${scimBase}/`)) return undefined
  const m = scimEndpoint.exec(path)
  const name = m && endpointNames.find((n) => n.toLowerCase() === m[1].toLowerCase())
  return name && name !== m[1] ? `/${scimBase}/${name}${m[2] ?? ''}` : undefined
}
