import type { Middleware } from 'koa'
import { span } from '../../core/telemetry/tracing.ts'
import { scimBase, scimMediaType } from './scim.shared.ts'

/**
 * The SCIM paths that take a body (the plugin's body rule): the app's JSON reader reads them as
 * `application/scim+json` or `application/json`, with its size cap and shape limits, and its
 * refusals go out as SCIM errors (scim.errors.ts). Other SCIM paths take none: the route guard
 * answers a changing verb there (405), or Feathers does (404).
 */
export const scimBodyPaths = new RegExp(`^/${scimBase}/(?:Users|Groups)(?:/[^/]+)?/?$`)

/**
 * SCIM's side of HTTP, around each SCIM service's REST call (Feathers koa `before` middleware):
 * answers go out as `application/scim+json`, and each call is a span
 * `scim <METHOD> <resource type>`, the service call's span under it.
 */
export const scimHttp = (): Middleware => (ctx, next) =>
  span(`scim ${ctx.method} ${resourceType.exec(ctx.path)?.[1] ?? 'other'}`, { 'scim.path': ctx.path }, async (s) => {
    const operations = (ctx.request.body as { Operations?: unknown } | undefined)?.Operations
    if (Array.isArray(operations)) s.setAttribute('scim.operations', operations.length)
    await next()
    if (ctx.body !== undefined && ctx.body !== null && ctx.status !== 204) ctx.type = scimMediaType
  })

const resourceType = /\/scim\/v2\/([A-Za-z]+)/
