import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/**
 * Token format: `<prefix><marker>_<40 base62 chars>` where the marker tells the type
 * without a lookup: `svc_k_` tenant API key, `svc_p_` personal access token,
 * `sa_` service-account token. 40 base62 characters carry 238 bits of randomness.
 */
export type CredentialKind = 'api_key' | 'personal' | 'service_account'

const prefixes: Record<CredentialKind, string> = { api_key: 'svc_k_', personal: 'svc_p_', service_account: 'sa_' }
const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const bodyLength = 40
const shape = /^(svc_k_|svc_p_|sa_)([0-9A-Za-z]{40})$/

export function generateToken(kind: CredentialKind): { token: string; hash: Buffer; prefix: string } {
  let body = ''
  while (body.length < bodyLength) {
    for (const byte of randomBytes(64)) {
      // Rejection sampling keeps every character equally likely.
      if (byte < 248 && body.length < bodyLength) body += alphabet[byte % 62]
    }
  }
  const token = prefixes[kind] + body
  return { token, hash: hashToken(token), prefix: token.slice(0, prefixes[kind].length + 6) }
}

/** SHA-256 suits high-entropy tokens: no dictionary to slow down, and lookups stay fast. */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

/** The kind a token claims by its shape, or undefined for anything that is not one of ours. */
export function tokenKind(token: string): CredentialKind | undefined {
  const m = token.match(shape)
  if (!m) return undefined
  return m[1] === 'svc_k_' ? 'api_key' : m[1] === 'svc_p_' ? 'personal' : 'service_account'
}

export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b)
}
