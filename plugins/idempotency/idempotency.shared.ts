// What other plugins use of idempotency: the Idempotency-Key around hook for their own services,
// and the key state machine that bulk calls extend with their per-row outcomes.
export { idempotencyFor } from './idempotency.ts'
export { claimKey, renewKey, storeAnswer, unlockKey, type KeyRef } from './idempotency.keys.ts'
