import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import type { Platform } from '../../core/declarations.ts'
import { platformSecret } from '../../core/db/index.ts'

/*
 * What a single sign-on flow must remember between the redirect to the IdP and its answer
 * (state, nonce, PKCE verifier, tenant, where to go next) travels in one short-lived
 * HttpOnly cookie, sealed with AES-256-GCM under a key kept in the database: any instance
 * can finish a flow another started, nothing is stored per attempt, and the browser can
 * neither read nor change it. One flow per browser at a time: starting another replaces it.
 */

export const flowCookie = 'records_oidc'
export const flowSeconds = 600
const flowPath = '/sign-in/oidc/'

export const flowCookieHeader = (value: string, maxAge: number) =>
  `${flowCookie}=${value}; HttpOnly; Secure; SameSite=Lax; Path=${flowPath}; Max-Age=${maxAge}`

export interface Flow {
  tenant: string
  state: string
  nonce: string
  /** The PKCE code verifier; the IdP was sent its S256 challenge. */
  verifier: string
  /** Where to go once signed in (a path of this site). */
  next: string
  /** Epoch milliseconds; the cookie's Max-Age says the same to the browser. */
  expires: number
}

/** Seals and opens flow cookies; the key comes from `platform_secrets`, made on first use. */
export class FlowSeal {
  private key?: Promise<Buffer>
  constructor(private readonly platform: Platform) {}

  private keyOf(): Promise<Buffer> {
    this.key ??= (async () => {
      return Buffer.from(
        hkdfSync(
          'sha256',
          await platformSecret(this.platform.db.pool, 'oidc-flow-sealing'),
          '',
          'records oidc flow',
          32
        )
      )
    })().catch((err) => {
      this.key = undefined
      throw err
    })
    return this.key
  }

  async seal(flow: Flow): Promise<string> {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', await this.keyOf(), iv)
    const body = Buffer.concat([cipher.update(JSON.stringify(flow), 'utf8'), cipher.final()])
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')
  }

  /** The flow in a cookie value, or undefined when it is absent, not ours, changed or expired. */
  async open(value: string | undefined): Promise<Flow | undefined> {
    if (!value || value.length > 2048) return undefined
    const sealed = Buffer.from(value, 'base64url')
    if (sealed.length < 29) return undefined
    try {
      const decipher = createDecipheriv('aes-256-gcm', await this.keyOf(), sealed.subarray(0, 12))
      decipher.setAuthTag(sealed.subarray(12, 28))
      const flow = JSON.parse(
        Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8')
      ) as Flow
      return flow.expires > Date.now() ? flow : undefined
    } catch {
      return undefined
    }
  }
}
