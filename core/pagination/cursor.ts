import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'
import { problems } from '../errors/index.ts'

/**
 * Opaque, tamper-proof page cursors: the sort key of the last row plus a hash of the
 * filters it was issued for, sealed (AES-256-GCM) and signed with keys from a secret kept
 * in the database. Sealed, not only signed: sort keys such as `records.seq` are numbered
 * across tenants, so a readable one would tell a tenant how many records all the others
 * created in between. The nonce is derived from the content, so a page always gets the
 * same cursor. The JSON envelope carries a version for a later format.
 */
export class CursorCodec {
  private readonly sealKey: Buffer
  private readonly nonceKey: Buffer

  constructor(private readonly secret: Buffer) {
    this.sealKey = Buffer.from(hkdfSync('sha256', secret, '', 'records cursor seal', 32))
    this.nonceKey = Buffer.from(hkdfSync('sha256', secret, '', 'records cursor nonce', 32))
  }

  private sign(body: string) {
    return createHmac('sha256', this.secret).update(body).digest().subarray(0, 12)
  }

  private scopeHash(scope: string) {
    return createHash('sha256').update(scope).digest('base64url').slice(0, 22)
  }

  encode(scope: string, position: unknown[]): string {
    const plain = Buffer.from(JSON.stringify({ h: this.scopeHash(scope), p: position }))
    const iv = createHmac('sha256', this.nonceKey).update(plain).digest().subarray(0, 12)
    const cipher = createCipheriv('aes-256-gcm', this.sealKey, iv)
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()])
    const body = Buffer.from(JSON.stringify({ v: 2, c: sealed.toString('base64url') })).toString('base64url')
    return `${body}.${this.sign(body).toString('base64url')}`
  }

  /** The position encoded in a cursor issued for the same scope; 400 otherwise. */
  decode(cursor: string, scope: string): unknown[] {
    const [body, sig] = cursor.split('.')
    const invalid = () => problems.badRequest('cursor.invalid', 'The cursor is not one this service issued for this query; pass back the nextCursor of the previous page with the same filters.')
    if (!body || !sig) throw invalid()
    const expected = this.sign(body)
    const given = Buffer.from(sig, 'base64url')
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid()
    let parsed: { h?: unknown; p?: unknown }
    try {
      const sealed = Buffer.from(JSON.parse(Buffer.from(body, 'base64url').toString('utf8')).c, 'base64url')
      const decipher = createDecipheriv('aes-256-gcm', this.sealKey, sealed.subarray(0, 12))
      decipher.setAuthTag(sealed.subarray(-16))
      parsed = JSON.parse(Buffer.concat([decipher.update(sealed.subarray(12, -16)), decipher.final()]).toString('utf8'))
    } catch {
      throw invalid()
    }
    if (parsed.h !== this.scopeHash(scope) || !Array.isArray(parsed.p)) throw invalid()
    return parsed.p
  }
}
