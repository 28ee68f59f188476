import type pg from 'pg'
import { logger } from '../logger.ts'

export interface ListenOptions {
  /** Called once for each NOTIFY on the channel, with its payload. */
  onNotify(payload: string | undefined): void
  /** After a reconnect (not the first subscribe): NOTIFYs sent meanwhile were missed, so caches reload or forget here. A failure counts as a failed reconnect. */
  onResubscribed?(): void | Promise<void>
  /** Names the listener in log lines, e.g. 'credential listener'. */
  logName: string
  /** Wait before reconnect attempt `attempt` (0-based); default 250 ms doubling, at most 30 s. */
  retryDelayMs?(this: void, attempt: number): number
}

export interface Listening {
  /** Stops listening: cancels a pending reconnect, waits for one in flight and releases its connection. */
  close(): Promise<void>
}

type State = 'connecting' | 'listening' | 'waiting' | 'closed'

const defaultDelay = (attempt: number) => Math.min(30_000, 250 * 2 ** attempt)

/**
 * LISTENs on `channel` with one pooled connection held for the purpose. If that connection
 * drops (or a reconnect fails), it reconnects with backoff; exactly one attempt or one timer is
 * pending at a time, and a connection that failed is released to the pool (as broken) whatever
 * reported the failure first: a disconnect while LISTEN is in flight both rejects the query and
 * emits 'error'/'end', and only the first of them counts. Resolves once listening; a failure of
 * the first subscribe rejects (and leaves nothing behind).
 */
export async function listenWithReconnect(pool: pg.Pool, channel: string, options: ListenOptions): Promise<Listening> {
  const delay = options.retryDelayMs ?? defaultDelay
  let state: State = 'connecting'
  let current: pg.PoolClient | undefined
  let timer: NodeJS.Timeout | undefined
  let inflight: Promise<void> | undefined
  /** Releases the current connection intact (close() only). */
  let handBack: (() => void) | undefined

  let started = false
  // A function, so TypeScript does not narrow `state` across the awaits (close() changes it meanwhile).
  const closed = () => state === 'closed'

  /** One attempt; a failure schedules the next one, except on the first subscribe, which rejects. */
  async function attempt(n: number): Promise<void> {
    state = 'connecting'
    let client: pg.PoolClient
    try {
      client = await pool.connect()
    } catch (err) {
      return fail(n, err as Error)
    }
    if (closed()) return client.release()
    current = client
    let released = false
    let lostWith: Error | undefined
    // Releases this connection (as broken) once, whoever calls first; true when it was the current one.
    const drop = (err?: Error): boolean => {
      if (released) return false
      released = true
      client.release(err ?? true)
      if (current !== client) return false
      current = undefined
      return true
    }
    const lost = (err?: Error) => {
      const wasListening = state === 'listening' && current === client
      lostWith ??= err ?? new Error('connection ended')
      if (!drop(err) || state === 'closed') return
      // Lost before it listened: this attempt is still awaiting LISTEN (or onResubscribed) and fails below.
      if (!wasListening) return
      logger.warn(`${options.logName} lost; reconnecting`, { error: err?.message })
      schedule(0)
    }
    const onNotification = (msg: pg.Notification) => {
      if (current === client && msg.channel === channel) options.onNotify(msg.payload)
    }
    const onError = (err: Error) => lost(err)
    const onEnd = () => lost()
    client.on('notification', onNotification)
    client.on('error', onError)
    client.on('end', onEnd)
    // close(): back to the pool in working order, for others to use, without this listener's handlers.
    handBack = () => {
      if (released) return
      released = true
      client.off('notification', onNotification).off('error', onError).off('end', onEnd)
      client.release()
    }
    let error: Error | undefined
    try {
      await client.query(`LISTEN ${channel}`)
      if (n > 0 && current === client && !closed()) await options.onResubscribed?.()
    } catch (err) {
      error = err as Error
    }
    if (closed()) {
      drop()
      return
    }
    if (error || current !== client) {
      drop(error)
      return fail(n, error ?? lostWith ?? new Error('connection lost'))
    }
    state = 'listening'
  }

  function fail(n: number, err: Error): void {
    if (state === 'closed') return
    if (!started) throw err
    logger.warn(`${options.logName} could not reconnect`, { error: err.message, attempt: n })
    schedule(n)
  }

  function schedule(n: number) {
    if (closed()) return
    state = 'waiting'
    clearTimeout(timer)
    timer = setTimeout(() => {
      timer = undefined
      if (state !== 'waiting') return
      inflight = attempt(n + 1).finally(() => (inflight = undefined))
    }, delay(n))
    timer.unref()
  }

  try {
    await attempt(0)
  } catch (err) {
    state = 'closed'
    throw err
  }
  started = true

  return {
    async close() {
      if (state === 'closed') return
      state = 'closed'
      clearTimeout(timer)
      timer = undefined
      await inflight?.catch(() => undefined)
      const client = current
      current = undefined
      if (client) {
        await client.query(`UNLISTEN ${channel}`).catch(() => undefined)
        handBack?.()
      }
    }
  }
}
