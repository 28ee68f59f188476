import type { Middleware } from 'koa'
import { ApiError, problems } from '../errors/index.ts'
import { readCapped } from './read-capped.ts'
import { jsonTextProblem } from '../json-text.ts'
import { validationError } from '../validation.ts'

const jsonTypes = ['application/json', 'application/merge-patch+json', 'application/problem+json']

/**
 * A request body as text, at most `maxBytes`: a larger one is 413 (the rest discarded
 * unread, the connection closed after the answer), a client hanging up mid-body 400. For
 * the JSON reader below and the features that read their own bodies (GraphQL, SCIM).
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

/**
 * Reads JSON bodies of POST/PATCH/PUT with a size cap. A body with another media type
 * is refused with 415; a streaming route (bulk) declares itself and reads its own body,
 * and the browser pages (outside /api/) read their own form bodies.
 */
export const jsonBody =
  (maxBytes: number, streamingPaths: RegExp[] = []): Middleware =>
  async (ctx, next) => {
    // Only the API takes JSON; the browser pages read their own form bodies.
    if (
      !['POST', 'PATCH', 'PUT'].includes(ctx.method) ||
      !ctx.path.startsWith('/api/') ||
      streamingPaths.some((p) => p.test(ctx.path))
    )
      return next()
    const length = Number(ctx.get('content-length') || 0)
    const chunked = ctx.get('transfer-encoding') !== ''
    if (!length && !chunked) {
      ctx.request.body = undefined
      return next()
    }
    const type = (ctx.get('content-type') || '').split(';')[0].trim().toLowerCase()
    if (!jsonTypes.includes(type)) {
      throw new ApiError(
        'unsupported-media-type',
        'request.unsupported_media_type',
        `Send the body as application/json (got ${type || 'no Content-Type'}).`
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

/** Hands the unread request body of a streaming route to its service as `params.bodyStream`. */
export const passBodyStream =
  (streamingPaths: RegExp[]): Middleware =>
  async (ctx, next) => {
    if (ctx.method === 'POST' && streamingPaths.some((p) => p.test(ctx.path)))
      ctx.feathers = { ...ctx.feathers, bodyStream: ctx.req } as typeof ctx.feathers
    return next()
  }
