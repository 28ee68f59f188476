import type { ParameterizedContext } from 'koa'
import { readCapped } from '../../core/http/read-capped.ts'
import { PageError } from './page-error.ts'

/** Browser forms are small: a few short fields. Anything larger is not from our forms. */
export const maxFormBytes = 8 * 1024

/**
 * Reads an application/x-www-form-urlencoded body of at most `maxBytes`. The JSON body
 * reader only handles /api/, so the pages read their own bodies here: 415 for another
 * media type, 413 past the cap (the rest is discarded unread and the connection closed).
 */
export async function readForm(ctx: ParameterizedContext, maxBytes = maxFormBytes): Promise<URLSearchParams> {
  const type = (ctx.get('content-type') || '').split(';')[0].trim().toLowerCase()
  if (type !== 'application/x-www-form-urlencoded') {
    throw new PageError(
      415,
      'Unsupported form',
      'This page accepts only forms sent by a browser (application/x-www-form-urlencoded).'
    )
  }
  const tooLarge = () => {
    ctx.set('Connection', 'close')
    return new PageError(
      413,
      'Form too large',
      `The form is larger than ${maxBytes} bytes, the most this page accepts.`
    )
  }
  const length = Number(ctx.get('content-length') || 0)
  if (length > maxBytes) {
    ctx.req.resume()
    throw tooLarge()
  }
  const body = await readCapped(
    ctx.req,
    maxBytes,
    () => new PageError(400, 'Form incomplete', 'The form ended before it was complete.')
  )
  if (!body) throw tooLarge()
  return new URLSearchParams(body.toString('utf8'))
}

/** One text field, trimmed unless told otherwise; '' when absent. */
export function field(form: URLSearchParams, name: string, { trim = true } = {}): string {
  const value = form.get(name) ?? ''
  return trim ? value.trim() : value
}
