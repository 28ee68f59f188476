import { createHash } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Middleware } from 'koa'
import type pg from 'pg'
import { ApiError, problems } from '../../core/errors/index.ts'
import { setRouteTemplate } from '../../core/http/route-template.ts'
import { attachmentDisposition } from '../../core/storage/disposition.ts'
import type { LocalStorage } from '../../core/storage/local.ts'
import * as repo from './attachments.repository.ts'
import { tenantPool } from '../../core/db/tenant-scope.ts'

const refusals: Record<'tampered' | 'expired' | 'wrong-method', [string, string]> = {
  tampered: ['storage.signature_invalid', 'The URL is not one this service signed, or was changed after signing.'],
  expired: ['storage.url_expired', 'The signed URL has expired; ask the API for a new one.'],
  'wrong-method': ['storage.wrong_method', 'The signed URL was issued for another HTTP method.']
}

/**
 * The local driver's side of the signed URLs: `PUT /storage/<key>?…` receives an upload,
 * `GET /storage/<key>?…` serves it (HEAD: its headers). The signature is the only credential; every refusal
 * is a problem response. An upload is written to a temporary file while it is counted and
 * hashed, and moved into place only when size and checksum match what was declared;
 * otherwise nothing is kept and the attachment stays pending.
 */
export const localStorageRoutes =
  (storage: LocalStorage, pool: pg.Pool): Middleware =>
  async (ctx, next) => {
    const m = ctx.path.match(/^\/storage\/([^/]+(?:\/[^/]+)*)$/)
    if (!m) return next()
    setRouteTemplate(ctx, '/storage/:key')
    // Signed URLs are only ever issued for these; any other method is no use of a signed URL.
    if (!['GET', 'HEAD', 'PUT'].includes(ctx.method)) {
      throw new ApiError(
        'method-not-allowed',
        'http.method_not_allowed',
        `${ctx.method} is not allowed on a storage URL; allowed: GET, HEAD, PUT.`,
        {},
        { Allow: 'GET, HEAD, PUT' }
      )
    }
    let key: string
    try {
      key = decodeURIComponent(m[1])
    } catch {
      throw problems.forbidden(...refusals.tampered)
    }
    const checked = storage.verify(ctx.method, key, new URLSearchParams(ctx.querystring))
    if ('refused' in checked) throw problems.forbidden(...refusals[checked.refused])
    const grant = checked.grant
    const [tenantId, , id] = key.split('/')
    // The signed key names the tenant: its rows are the ones this URL may touch (row-level security).
    const db = tenantPool(pool, tenantId)

    if (grant.method === 'GET') {
      const stat = await storage.stat(key)
      if (!stat) throw problems.notFound('attachment.not_found', 'The file is no longer stored.')
      ctx.set('Content-Type', grant.contentType)
      ctx.set('Content-Disposition', attachmentDisposition(grant.fileName ?? 'download'))
      ctx.set('Content-Length', String(stat.size))
      ctx.set('Cache-Control', 'private, no-store')
      ctx.set('X-Content-Type-Options', 'nosniff')
      ctx.status = 200
      // HEAD: the same headers and no body. Leaving the body unset (not null, which Koa turns into
      // a 204 without Content-Type and Content-Length) opens no file; Koa sends no body for HEAD.
      if (ctx.method === 'GET') ctx.body = createReadStream(storage.path(key))
      return
    }

    const row = await repo.selectAttachment(db, tenantId, id)
    if (!row)
      throw problems.notFound(
        'attachment.not_found',
        'This attachment no longer exists (an unfinished upload is removed after a while).'
      )
    if (row.state === 'ready')
      throw problems.conflict(
        'attachment.already_uploaded',
        'This attachment is already uploaded and verified; it cannot be replaced.'
      )
    const type = (ctx.get('content-type') || '').split(';')[0].trim().toLowerCase()
    if (type !== grant.contentType.toLowerCase()) {
      throw problems.forbidden(
        'storage.header_mismatch',
        `The upload must be sent with Content-Type: ${grant.contentType}, as signed (got ${type || 'none'}).`
      )
    }
    const size = grant.size!
    const tooLarge = () => {
      ctx.set('Connection', 'close')
      return new ApiError(
        'payload-too-large',
        'attachment.too_large',
        `The upload is larger than the ${size} bytes declared for it; nothing was stored.`
      )
    }
    if (Number(ctx.get('content-length') || 0) > size) {
      ctx.req.resume()
      throw tooLarge()
    }
    const temp = await storage.tempPath()
    const hash = createHash('sha256')
    let received = 0
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        received += chunk.length
        if (received > size) return done(tooLarge())
        hash.update(chunk)
        done(null, chunk)
      }
    })
    try {
      await pipeline(ctx.req, meter, createWriteStream(temp))
      if (received !== size)
        throw new ApiError(
          'unprocessable',
          'attachment.size_mismatch',
          `The upload has ${received} bytes, but ${size} were declared; nothing was stored and the attachment stays pending.`
        )
      if (grant.sha256 && hash.digest('hex') !== grant.sha256) {
        throw new ApiError(
          'unprocessable',
          'attachment.checksum_mismatch',
          "The upload's SHA-256 differs from the one declared; nothing was stored and the attachment stays pending."
        )
      }
      await storage.commit(temp, key)
    } catch (err) {
      await rm(temp, { force: true })
      if (err instanceof ApiError) {
        if (err.code === 413) ctx.req.resume()
        throw err
      }
      throw err
    }
    // Another request may have completed it first: answer with the row as it is now, not as read before.
    const ready =
      (await repo.markReady(db, tenantId, id, row.created_by)) ?? (await repo.selectAttachment(db, tenantId, id))
    ctx.status = 200
    ctx.body = repo.toAttachment(ready ?? row)
  }
