import { problems } from '../errors/index.ts'

/** The `Idempotency-Key` header's format, as the OpenAPI document states it: 1 to 255 visible ASCII characters. */
export const idempotencyKeySchema = { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' }

const shape = new RegExp(idempotencyKeySchema.pattern)

/** Refuses a key not of that format with 400 `idempotency.key_invalid` (the records hook and bulk use it). */
export function assertIdempotencyKey(key: string): void {
  if (key.length > idempotencyKeySchema.maxLength || !shape.test(key)) {
    throw problems.badRequest(
      'idempotency.key_invalid',
      'Idempotency-Key must be 1 to 255 visible ASCII characters, e.g. a UUID.'
    )
  }
}
