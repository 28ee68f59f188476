/**
 * Rate and concurrency limits. Two backends behind one interface: memory (one process,
 * for development and single-instance deployments) and Redis (shared by every instance
 * on the same Redis, so a limit holds across the fleet rather than per instance).
 */

export interface WindowResult {
  allowed: boolean
  limit: number
  /** Requests still allowed in the current window after this one (0 when refused). */
  remaining: number
  /**
   * Epoch milliseconds at which the oldest hit still counted leaves the window: its time
   * plus windowMs. When allowed with remaining > 0, that is the moment remaining grows
   * again; when allowed with remaining 0, or refused, it is the moment the next request
   * will be accepted. Hits leave the window exactly windowMs after they were counted, so
   * a request at resetAt is accepted. With limit 0 nothing is ever accepted and resetAt is
   * now + windowMs, so callers that honour it back off instead of retrying at once.
   * With Redis the clock is the Redis server's, which every instance shares.
   */
  resetAt: number
  /** Milliseconds until resetAt when refused, else 0. */
  retryAfterMs: number
}

export interface Lease {
  readonly id: string
  /**
   * Keeps the slot for ttlMs more (long exports renew while working). Resolves false if
   * the lease already expired or was released: its slot may be someone else's by now, so
   * the holder should treat its work as no longer covered by the limit.
   */
  extend(ttlMs: number): Promise<boolean>
  /** Frees the slot; releasing twice, or after expiry, does nothing. */
  release(): Promise<void>
}

export interface AcquireResult {
  /** Present only when a slot was taken. */
  lease?: Lease
  /** Slots held after this call, including the one just taken. */
  active: number
  limit: number
  /** When refused: ms until the earliest held slot expires at the latest (a release may free one sooner). Else 0. */
  retryAfterMs: number
}

export interface Limiter {
  readonly backend: 'memory' | 'redis'
  /**
   * Sliding-log window: counts the hit only if it is allowed (refused requests do not extend the wait).
   * A hit of `weight` counts as that many hits, all or none (an expensive request, core/limits/budget.ts).
   */
  hit(key: string, limit: number, windowMs: number, weight?: number): Promise<WindowResult>
  /** Concurrency slots: takes one of `limit` slots for at most ttlMs, so a crashed holder's slot frees itself. */
  acquire(key: string, limit: number, ttlMs: number): Promise<AcquireResult>
  /** Resolves when the store answers (readiness, core/http/health.ts). */
  ping(): Promise<void>
  close(): Promise<void>
}

export interface LimiterOptions {
  /** When set, limits live in this Redis and are shared by every instance using it. */
  redisUrl?: string | null
  /** Namespace for Redis keys (default `records:`); tests use a random one to stay apart. */
  prefix?: string
}

/** Opens the Redis limiter when redisUrl is set (rejecting if Redis cannot be reached), else an in-process one. */
export async function createLimiter(options: LimiterOptions): Promise<Limiter> {
  const prefix = options.prefix ?? 'records:'
  // Imported on demand so a deployment without Redis never loads ioredis.
  if (options.redisUrl) {
    const { connectRedisLimiter } = await import('./redis.ts')
    return connectRedisLimiter(options.redisUrl, prefix)
  }
  const { MemoryLimiter } = await import('./memory.ts')
  return new MemoryLimiter()
}

/**
 * Rejects arguments that would otherwise fail silently: a NaN limit compares false with
 * everything and would let every request through. Limit 0 is valid and refuses everything.
 */
export function checkLimitArgs(key: string, limit: number, periodMs: number, periodName: string, weight = 1): void {
  if (!Number.isInteger(weight) || weight < 1) throw new RangeError(`weight must be an integer >= 1, got ${weight}`)
  if (typeof key !== 'string' || key === '') throw new TypeError('limiter key must be a non-empty string')
  if (!Number.isInteger(limit) || limit < 0) throw new RangeError(`limit must be an integer >= 0, got ${limit}`)
  if (!Number.isInteger(periodMs) || periodMs <= 0)
    throw new RangeError(`${periodName} must be a positive integer, got ${periodMs}`)
}
