// What other plugins use of idempotency: the Idempotency-Key around hook for their own services.
export { idempotencyFor } from './idempotency.ts'
