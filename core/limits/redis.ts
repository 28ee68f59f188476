import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { logger } from '../logger.ts'
import { checkLimitArgs, type AcquireResult, type Lease, type Limiter, type WindowResult } from './limiter.ts'

const connectTimeoutMs = 5_000

// Every script reads the Redis server's clock, so instances with skewed clocks agree on
// one timeline. Scores are integer epoch ms. Each script touches one key, so it also runs
// unchanged on a Redis Cluster. Redis >= 5 replicates script effects, not the script, so
// a non-deterministic TIME before writes is allowed.
const nowMs = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`

/** KEYS[1] log; ARGV limit, windowMs, unique member, weight -> { allowed, counted, resetAt, now } */
const hitScript = `${nowMs}
local limit, window, weight = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local allowed = 0
if count + weight <= limit then
  for i = 1, weight do redis.call('ZADD', KEYS[1], now, ARGV[3] .. ':' .. i) end
  -- The newest hit is the last to leave, so the key lives exactly as long as it matters.
  redis.call('PEXPIRE', KEYS[1], window)
  count = count + weight
  allowed = 1
end
local resetAt = now + window
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if oldest[2] then resetAt = tonumber(oldest[2]) + window end
return { allowed, count, resetAt, now }`

/** KEYS[1] slots; ARGV limit, ttlMs, lease id -> { acquired, active, retryAfterMs } */
const acquireScript = `${nowMs}
local limit, ttl = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  local earliest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if earliest[2] then return { 0, count, tonumber(earliest[2]) - now } end
  return { 0, count, ttl }
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
local latest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], tonumber(latest[2]))
return { 1, count + 1, 0 }`

/** KEYS[1] slots; ARGV lease id, ttlMs -> 1 if renewed, 0 if the lease was gone. */
const extendScript = `${nowMs}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
-- Expired leases were just removed, so a lapsed holder cannot take back a slot that may be someone else's.
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
local latest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], tonumber(latest[2]))
return 1`

/** ioredis adds these methods at runtime through defineCommand (EVALSHA, falling back to EVAL). */
interface ScriptCommands {
  limiterHit(
    key: string,
    limit: number,
    windowMs: number,
    member: string,
    weight: number
  ): Promise<[number, number, number, number]>
  limiterAcquire(key: string, limit: number, ttlMs: number, id: string): Promise<[number, number, number]>
  limiterExtend(key: string, id: string, ttlMs: number): Promise<number>
}

/** Connects to Redis and resolves once it answers; rejects naming the host if it cannot be reached. */
export async function connectRedisLimiter(redisUrl: string, prefix: string): Promise<RedisLimiter> {
  const host = describeHost(redisUrl)
  const client = new Redis(redisUrl, {
    lazyConnect: true,
    connectTimeout: connectTimeoutMs,
    // A limiter call sits in front of every request: fail fast while Redis is away
    // (callers let traffic through) instead of queueing requests behind a reconnect.
    maxRetriesPerRequest: 2,
    enableOfflineQueue: false
  })
  let lastError: Error | undefined
  const remember = (err: Error) => (lastError = err)
  client.on('error', remember)
  try {
    await withTimeout(client.connect(), connectTimeoutMs * 2)
  } catch (err) {
    // Without this ioredis keeps reconnecting in the background and holds the process open.
    client.disconnect()
    const cause = lastError ?? (err as Error)
    // eslint-disable-next-line preserve-caught-error -- the client's last error says why (ECONNREFUSED, auth); the caught one says only that connecting timed out
    throw new Error(`cannot connect to Redis at ${host} (REDIS_URL): ${cause.message}`, { cause })
  }
  client.off('error', remember)
  client.on('error', throttledWarning(host))
  return new RedisLimiter(client, prefix)
}

export class RedisLimiter implements Limiter {
  readonly backend = 'redis' as const
  private readonly commands: ScriptCommands

  constructor(
    private readonly client: Redis,
    private readonly prefix: string
  ) {
    client.defineCommand('limiterHit', { numberOfKeys: 1, lua: hitScript })
    client.defineCommand('limiterAcquire', { numberOfKeys: 1, lua: acquireScript })
    client.defineCommand('limiterExtend', { numberOfKeys: 1, lua: extendScript })
    this.commands = client as unknown as ScriptCommands
  }

  async hit(key: string, limit: number, windowMs: number, weight = 1): Promise<WindowResult> {
    checkLimitArgs(key, limit, windowMs, 'windowMs', weight)
    // The member only has to be unique within the key; two hits in one millisecond are two hits.
    const [allowed, counted, resetAt, now] = await this.commands.limiterHit(
      `${this.prefix}rl:${key}`,
      limit,
      windowMs,
      randomUUID(),
      weight
    )
    return {
      allowed: allowed === 1,
      limit,
      remaining: allowed === 1 ? Math.max(0, limit - counted) : 0,
      resetAt,
      retryAfterMs: allowed === 1 ? 0 : Math.max(0, resetAt - now)
    }
  }

  async acquire(key: string, limit: number, ttlMs: number): Promise<AcquireResult> {
    checkLimitArgs(key, limit, ttlMs, 'ttlMs')
    const slotsKey = `${this.prefix}cc:${key}`
    const id = randomUUID()
    const [acquired, active, retryAfterMs] = await this.commands.limiterAcquire(slotsKey, limit, ttlMs, id)
    if (acquired !== 1) return { active, limit, retryAfterMs: Math.max(0, retryAfterMs) }
    return { lease: this.lease(slotsKey, id), active, limit, retryAfterMs: 0 }
  }

  async ping(): Promise<void> {
    await this.client.ping()
  }

  async close(): Promise<void> {
    if (this.client.status === 'end') return
    try {
      await this.client.quit()
    } catch {
      // Already disconnected (Redis went away): nothing left to close gracefully.
      this.client.disconnect()
    }
  }

  private lease(slotsKey: string, id: string): Lease {
    return {
      id,
      extend: async (ttlMs: number) => {
        checkLimitArgs(slotsKey, 0, ttlMs, 'ttlMs')
        return (await this.commands.limiterExtend(slotsKey, id, ttlMs)) === 1
      },
      release: async () => {
        await this.client.zrem(slotsKey, id)
      }
    }
  }
}

/** host:port only: a REDIS_URL may carry a password, which must not reach logs or errors. */
function describeHost(redisUrl: string): string {
  try {
    const url = new URL(redisUrl)
    return `${url.hostname}:${url.port || '6379'}`
  } catch {
    return '(unparseable REDIS_URL)'
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** ioredis emits an error on every reconnect attempt; one line per outage burst is enough. */
function throttledWarning(host: string) {
  let last = 0
  return (err: Error) => {
    if (Date.now() - last < 10_000) return
    last = Date.now()
    logger.warn('Redis limiter connection error; ioredis is reconnecting', { host, error: err.message })
  }
}
