import type { Middleware } from 'koa'
import { ApiError } from '../../core/errors/index.ts'
import { readBodyText } from '../../core/http/body.ts'
import { jsonTextProblem } from '../../core/json-text.ts'
import { span } from '../../core/telemetry/tracing.ts'
import { validationError } from '../../core/validation.ts'
import { scimError } from './scim.errors.ts'
import { scimMediaType } from './scim.shared.ts'

const bodyTypes = [scimMediaType, 'application/json']

/**
 * SCIM's side of HTTP, before and after each SCIM service's REST call (Feathers koa `before`
 * middleware): the body is read here, as `application/scim+json` or `application/json` (the
 * app's JSON reader takes JSON media types only and leaves these paths to the feature, see
 * streamingPaths), with the same size cap and shape limits; answers go out as
 * `application/scim+json`. Refusals are thrown: the problem renderer writes them as SCIM
 * errors on these paths (scim.errors.ts). Each call is a span `scim <METHOD> <resource type>`,
 * the service call's span under it.
 */
export const scimHttp =
  (maxBytes: number): Middleware =>
  (ctx, next) =>
    span(`scim ${ctx.method} ${resourceType.exec(ctx.path)?.[1] ?? 'other'}`, { 'scim.path': ctx.path }, async (s) => {
      if (['POST', 'PUT', 'PATCH'].includes(ctx.method))
        ctx.request.body = (await readBody(ctx, maxBytes)) as typeof ctx.request.body
      const operations = (ctx.request.body as { Operations?: unknown } | undefined)?.Operations
      if (Array.isArray(operations)) s.setAttribute('scim.operations', operations.length)
      await next()
      if (ctx.body !== undefined && ctx.body !== null && ctx.status !== 204) ctx.type = scimMediaType
    })

const resourceType = /\/scim\/v2\/([A-Za-z]+)/

async function readBody(ctx: Parameters<Middleware>[0], maxBytes: number): Promise<unknown> {
  const length = Number(ctx.get('content-length') || 0)
  if (!length && !ctx.get('transfer-encoding')) return undefined
  const type = (ctx.get('content-type') || '').split(';')[0].trim().toLowerCase()
  if (!bodyTypes.includes(type))
    throw new ApiError(
      'unsupported-media-type',
      'request.unsupported_media_type',
      `Send the body as ${scimMediaType} (or application/json); got ${type || 'no Content-Type'}.`
    )
  const text = await readBodyText(ctx, maxBytes)
  if (!text.trim()) return undefined
  const shape = jsonTextProblem(text)
  if (shape) throw validationError([shape])
  try {
    return JSON.parse(text)
  } catch (err) {
    throw scimError(400, 'invalidSyntax', `The body is not valid JSON: ${(err as Error).message}`, {
      code: 'request.malformed_json'
    })
  }
}
