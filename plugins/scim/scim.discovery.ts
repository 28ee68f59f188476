import type { Id } from '@feathersjs/feathers'
import { decodeSegment } from '../../core/http/custom-methods.ts'
import { listResponse, scimPrincipal, scimUrl, type ScimContext, type ScimParams } from './scim.common.ts'
import { scimError } from './scim.errors.ts'
import {
  enterpriseDefinition,
  groupDefinition,
  recordsGroupDefinition,
  suggestedValues,
  userDefinition
} from './scim.schemas.ts'
import { urn } from './scim.shared.ts'

/**
 * SCIM discovery (RFC 7644 §4): what this service provider supports, its resource types and
 * their schemas (scimmy's descriptions of RFC 7643's schemas, and this service's Group
 * extension). Read-only: the services serve GET only, so a write is 405 with `Allow`.
 */

export function serviceProviderConfig(base: string) {
  return {
    schemas: [urn.serviceProviderConfig],
    documentationUri: 'https://datatracker.ietf.org/doc/html/rfc7644',
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: 0 },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'OAuth Bearer Token',
        description:
          'Authorization: Bearer <token>: a service-account token with the scim scope (or another credential of the tenant acting with the admin role and the scim scope).',
        specUri: 'https://datatracker.ietf.org/doc/html/rfc6750',
        primary: true
      }
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` }
  }
}

function resourceTypes(base: string) {
  return [
    {
      schemas: [urn.resourceType],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: 'User Account',
      schema: urn.user,
      schemaExtensions: [{ schema: urn.enterpriseUser, required: false }],
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` }
    },
    {
      schemas: [urn.resourceType],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      description: 'Group: grants roles of the tenant to its members',
      schema: urn.group,
      schemaExtensions: [{ schema: urn.recordsGroup, required: false }],
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` }
    }
  ]
}

type Described = Record<string, unknown> & { name?: string; attributes?: Described[]; subAttributes?: Described[] }

/**
 * The schemas as this tenant's clients see them: scimmy's descriptions, with the suggested
 * `type` values of the User's multi-valued attributes (accepted or not, see suggestedValues)
 * and, as canonical values of the records extension's `roles`, the roles this tenant's
 * groups can grant, so a generic client can create a group that grants one. Built per call:
 * four small documents.
 */
function schemas(base: string, roles: readonly string[]) {
  return [userDefinition, enterpriseDefinition, groupDefinition, recordsGroupDefinition].map((d) => {
    const described = JSON.parse(JSON.stringify(d.describe('/Schemas'))) as Described
    for (const a of described.attributes ?? []) {
      for (const sub of a.subAttributes ?? []) {
        const suggested = suggestedValues.get(`${a.name}.${sub.name}`)
        if (d === userDefinition && suggested) sub.canonicalValues = suggested
      }
      if (d === recordsGroupDefinition && a.name === 'roles') a.canonicalValues = [...roles]
    }
    return { ...described, id: d.id, meta: { resourceType: 'Schema', location: `${base}/Schemas/${d.id}` } }
  })
}

export class ServiceProviderConfigService {
  constructor(private readonly o: ScimContext) {}

  async find(params: ScimParams) {
    scimPrincipal(params)
    const config = serviceProviderConfig(scimUrl(this.o.platform))
    return { ...config, filter: { supported: true, maxResults: this.o.maxResults } }
  }
}

export class ResourceTypesService {
  constructor(private readonly o: ScimContext) {}

  async find(params: ScimParams) {
    scimPrincipal(params)
    const all = resourceTypes(scimUrl(this.o.platform))
    return listResponse(all.length, 1, all)
  }

  async get(id: Id, params: ScimParams) {
    scimPrincipal(params)
    const found = resourceTypes(scimUrl(this.o.platform)).find((r) => r.id === id)
    if (!found)
      throw scimError(404, undefined, `No resource type ${String(id)}: this service provides User and Group.`, {
        code: 'scim.not_found'
      })
    return found
  }
}

export class SchemasService {
  constructor(private readonly o: ScimContext) {}

  async find(params: ScimParams) {
    const p = scimPrincipal(params)
    const all = schemas(scimUrl(this.o.platform), this.o.platform.users.knownRoles(p.tenantId))
    return listResponse(all.length, 1, all)
  }

  async get(id: Id, params: ScimParams) {
    const p = scimPrincipal(params)
    // A URN's colons may come percent-encoded; Feathers hands the segment on as sent.
    const urnId = decodeSegment(String(id)).toLowerCase()
    const found = schemas(scimUrl(this.o.platform), this.o.platform.users.knownRoles(p.tenantId)).find(
      (s) => String(s.id).toLowerCase() === urnId
    )
    if (!found) throw scimError(404, undefined, `No schema ${String(id)}.`, { code: 'scim.not_found' })
    return found
  }
}
