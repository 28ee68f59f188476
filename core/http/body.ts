import type { Middleware } from 'koa'
import { ApiError, problems } from '../errors/index.ts'
import { readCapped } from './read-capped.ts'
import { jsonTextProblem } from '../json-text.ts'
import { validationError } from '../validation.ts'
import type { BodyRule } from '../plugin.ts'

const jsonTypes = ['application/json', 'application/merge-patch+json', 'application/problem+json']

/**
 * A request body as text, at most `maxBytes`: a larger one is 413 (the rest discarded
 * unread, the connection closed after the answer), a client hanging up mid-body 400. For
 * the JSON reader below and the features that read their own bodies (GraphQL).
 */
export async function readBodyText(ctx: Parameters<Middleware>[0], maxBytes: number): Promise<string> {
  const length = Number(ctx.get('content-length') || 0)
  if (length > maxBytes) {
    ctx.set('Connection', 'close')
    throw new ApiError(
      'payload-too-large',
      'request.too_large',
      `The body is ${length} bytes; at most ${maxBytes} bytes are accepted.`
    )
  }
  const body = await readCapped(ctx.req, maxBytes, () =>
    problems.badRequest('request.aborted', 'The request body ended before it was complete.')
  )
  if (!body) {
    ctx.set('Connection', 'close')
    throw new ApiError('payload-too-large', 'request.too_large', `The body exceeds ${maxBytes} bytes.`)
  }
  return body.toString('utf8')
}

/** What the app's reader knows of the plugins' paths: their body rules and the routes they own. */
export interface BodyPaths {
  bodies: readonly BodyRule[]
  ownRoutes: readonly RegExp[]
}

/**
 * Reads JSON bodies of POST/PATCH/PUT under /api/ with a size cap, for every feature: a path
 * a plugin's body rule names is read as that rule says (SCIM's application/scim+json; bulk's
 * stream is left unread), a path a plugin routes itself and names in no rule is left to it
 * (GraphQL), any other takes the JSON media types. A body of another media type is 415.
 * Refusals are thrown, so a path with its own problem format (SCIM's errors) gets them in it.
 * The browser pages (outside /api/) read their own form bodies.
 */
export const jsonBody =
  (maxBytes: number, paths: BodyPaths = { bodies: [], ownRoutes: [] }): Middleware =>
  async (ctx, next) => {
    if (!['POST', 'PATCH', 'PUT'].includes(ctx.method) || !ctx.path.startsWith('/api/')) return next()
    const rule = paths.bodies.find((r) => r.paths.test(ctx.path))
    if (rule ? 'stream' in rule : paths.ownRoutes.some((p) => p.test(ctx.path))) return next()
    const length = Number(ctx.get('content-length') || 0)
    const chunked = ctx.get('transfer-encoding') !== ''
    if (!length && !chunked) {
      ctx.request.body = undefined
      return next()
    }
    const accepted = rule && 'mediaTypes' in rule ? rule.mediaTypes : jsonTypes
    const type = (ctx.get('content-type') || '').split(';')[0].trim().toLowerCase()
    if (!accepted.includes(type)) {
      throw new ApiError(
        'unsupported-media-type',
        'request.unsupported_media_type',
        // The app's own list names application/json only: the others are its spellings.
        `Send the body as ${(rule ? accepted : accepted.slice(0, 1)).join(' or ')} (got ${type || 'no Content-Type'}).`
      )
    }
    const text = await readBodyText(ctx, maxBytes)
    if (text.trim() === '') {
      ctx.request.body = undefined
      return next()
    }
    // A body past the size limits is refused before it is parsed: parsing is what such a body costs.
    const shape = jsonTextProblem(text)
    if (shape) throw validationError([shape])
    try {
      ctx.request.body = JSON.parse(text)
    } catch (err) {
      throw problems.badRequest('request.malformed_json', `The body is not valid JSON: ${(err as Error).message}`)
    }
    return next()
  }

/** Hands the unread request body of a streaming route (a `stream` body rule) to its service as `params.bodyStream`. */
export const passBodyStream =
  (bodies: readonly BodyRule[]): Middleware =>
  async (ctx, next) => {
    if (ctx.method === 'POST' && bodies.some((r) => 'stream' in r && r.paths.test(ctx.path)))
      ctx.feathers = { ...ctx.feathers, bodyStream: ctx.req } as typeof ctx.feathers
    return next()
  }
