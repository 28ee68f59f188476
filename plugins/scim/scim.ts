import type { HookContext, NextFunction } from '@feathersjs/feathers'
import type { App } from '../../core/declarations.ts'
import type { Plugin } from '../../core/plugin.ts'
import { IdentityLogService } from './identity-log.class.ts'
import { requireScim, resourceHeaders, type ScimContext } from './scim.common.ts'
import { ResourceTypesService, SchemasService, ServiceProviderConfigService } from './scim.discovery.ts'
import { scimProblemFormat } from './scim.errors.ts'
import { ScimGroupsService } from './scim.groups.class.ts'
import { scimBodyPaths, scimHttp } from './scim.http.ts'
import { describeScim } from './scim.openapi.ts'
import {
  canonicalScimPath,
  identityLogPath,
  scimMediaType,
  scimMethods,
  scimPathPattern,
  scimPaths
} from './scim.shared.ts'
import { ScimUsersService } from './scim.users.class.ts'

declare module '../../core/declarations.ts' {
  interface ServiceTypes {
    [scimPaths.users]: ScimUsersService
    [scimPaths.groups]: ScimGroupsService
    [scimPaths.serviceProviderConfig]: ServiceProviderConfigService
    [scimPaths.resourceTypes]: ResourceTypesService
    [scimPaths.schemas]: SchemasService
    [identityLogPath]: IdentityLogService
  }
}

/**
 * The answer's status and headers: ETag on a resource, Location and 201 on a create, 204 for a
 * delete, and for a PATCH unless the query asks for attributes (RFC 7644 §3.5.2 allows either;
 * Microsoft's collection expects 204).
 */
async function scimAnswer(context: HookContext, next: NextFunction) {
  await next()
  if (context.method === 'remove') {
    context.http = { ...context.http, status: 204 }
    return
  }
  resourceHeaders(context, context.result as object | null)
  const query = (context.params.query ?? {}) as Record<string, unknown>
  if (context.method === 'patch' && query.attributes === undefined && query.excludedAttributes === undefined) {
    context.http = { ...context.http, status: 204 }
    context.dispatch = null
  }
}

export function scim(app: App) {
  const platform = app.get('platform')
  const o: ScimContext = { platform, maxResults: platform.config.pagination.maxLimit }
  const koa = { before: [scimHttp()] }
  const resource = { methods: [...scimMethods], koa }
  app.use(scimPaths.users, new ScimUsersService(o), resource)
  app.use(scimPaths.groups, new ScimGroupsService(o), resource)
  app.use(scimPaths.serviceProviderConfig, new ServiceProviderConfigService(o), { methods: ['find'], koa })
  app.use(scimPaths.resourceTypes, new ResourceTypesService(o), { methods: ['find', 'get'], koa })
  app.use(scimPaths.schemas, new SchemasService(o), { methods: ['find', 'get'], koa })
  for (const path of [scimPaths.users, scimPaths.groups])
    app.service(path).hooks({ around: { all: [requireScim, scimAnswer] } })
  for (const path of [scimPaths.serviceProviderConfig, scimPaths.resourceTypes, scimPaths.schemas])
    app.service(path).hooks({ around: { all: [requireScim] } })
  app.use(
    identityLogPath,
    new IdentityLogService({
      pool: platform.db.pool,
      cursors: platform.cursors,
      defaultLimit: platform.config.pagination.defaultLimit,
      maxLimit: platform.config.pagination.maxLimit
    }),
    { methods: ['find'] }
  )
}

/**
 * SCIM 2.0 provisioning at /api/scim/v2 (docs/scim.md), and the identity audit trail at
 * /api/v1/identity-log. Its paths read their own bodies (application/scim+json) and answer
 * refusals as SCIM errors.
 */
export const scimPlugin: Plugin = {
  name: 'scim',
  configure: scim,
  ownRoutes: [scimPathPattern],
  bodies: [{ paths: scimBodyPaths, mediaTypes: [scimMediaType, 'application/json'] }],
  canonicalPath: canonicalScimPath,
  problemFormats: [scimProblemFormat],
  describe: describeScim
}
