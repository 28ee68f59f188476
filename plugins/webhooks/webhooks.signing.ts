import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'
import type pg from 'pg'
import { platformSecret } from '../../core/db/index.ts'

/**
 * Signing secrets. A secret must be readable to sign with, so it is sealed, not hashed:
 * AES-256-GCM under the platform secret `webhook-secrets` (made on first use, as the
 * cursor and storage signing keys are), stored as iv (12) | tag (16) | ciphertext.
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  static async open(pool: pg.Pool): Promise<SecretBox> {
    return new SecretBox(await platformSecret(pool, 'webhook-secrets'))
  }

  seal(secret: string): Buffer {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()])
    return Buffer.concat([iv, cipher.getAuthTag(), body])
  }

  unseal(sealed: Buffer): string {
    const decipher = createDecipheriv('aes-256-gcm', this.key, sealed.subarray(0, 12))
    decipher.setAuthTag(sealed.subarray(12, 28))
    return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8')
  }
}

/** A new Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed with the secret's bytes (Standard Webhooks). */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
}

/** The `webhook-signature` header: one signature per secret in use, space-separated. */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets.map((s) => signature(s, id, timestamp, body)).join(' ')
}
