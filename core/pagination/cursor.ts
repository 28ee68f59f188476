import { createHmac, timingSafeEqual } from 'node:crypto'
import { problems } from '../errors/index.ts'

/**
 * Opaque, tamper-proof page cursors: the sort key of the last row plus a hash of the
 * filters it was issued for, signed with a secret kept in the database.
 */
export class CursorCodec {
  constructor(private readonly secret: Buffer) {}

  private sign(body: string) {
    return createHmac('sha256', this.secret).update(body).digest().subarray(0, 12)
  }

  encode(scope: string, position: unknown[]): string {
    const body = Buffer.from(JSON.stringify({ s: scope, p: position })).toString('base64url')
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
    const parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'))
    if (parsed.s !== scope || !Array.isArray(parsed.p)) throw invalid()
    return parsed.p
  }
}
