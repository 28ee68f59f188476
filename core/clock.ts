import type pg from 'pg'
import { logger } from './logger.ts'

/**
 * The platform's clock: every rule that depends on the time of day (number patterns, date rules, due dates, overdue,
 * recurrence) reads it here, never `new Date()` on its own, so that tests and operators can move it (one clock, one
 * place). By default it is the system's. With config `clock.controllable` (refused under NODE_ENV=production) it is
 * the system's moved by the row of `platform_clock` (an offset, or a fixed instant): one row every instance reads, so
 * moving it moves the time of every process at once (`records clock set`, docs/operations.md). An instance re-reads
 * the row every `clock.refreshMs`; a job reads it afresh before it decides anything (`syncClock`).
 */
export interface Clock {
  /** The current instant. */
  now(): Date
}

/** What the platform_clock row says: the system's time moved by `offsetMs`, or frozen at `fixedAt`. */
export interface ClockSetting {
  offsetMs: number
  fixedAt: Date | null
}

let setting: ClockSetting = { offsetMs: 0, fixedAt: null }
let source: pg.Pool | undefined

const systemClock: Clock = {
  now: () => (setting.fixedAt ? new Date(setting.fixedAt) : new Date(Date.now() + setting.offsetMs))
}

/** The clock in force. */
export function clock(): Clock {
  return systemClock
}

/** What the platform_clock row says now (none: the system time). */
export async function readClock(pool: Pick<pg.Pool, 'query'>): Promise<ClockSetting> {
  const { rows } = await pool.query<{ offset_ms: string; fixed_at: Date | null }>(
    'SELECT offset_ms, fixed_at FROM platform_clock WHERE id = 1'
  )
  return rows[0] ? { offsetMs: Number(rows[0].offset_ms), fixedAt: rows[0].fixed_at } : { offsetMs: 0, fixedAt: null }
}

/** Refuses a controllable clock where it must never be: a production process. */
export function assertClockAllowed(controllable: boolean): void {
  if (controllable && process.env.NODE_ENV === 'production')
    throw new Error('clock.controllable is refused under NODE_ENV=production: production runs on the system clock')
}

/**
 * Starts following the platform_clock row when the clock is controllable (else the system clock stays, and nothing is
 * read). Returns the stop.
 */
export async function startClock(pool: pg.Pool, o: { controllable: boolean; refreshMs: number }): Promise<() => void> {
  assertClockAllowed(o.controllable)
  if (!o.controllable) return () => undefined
  source = pool
  setting = await readClock(pool)
  if (setting.offsetMs || setting.fixedAt) logger.warn('the clock is moved (clock.controllable)', { ...setting })
  const timer = setInterval(() => {
    readClock(pool).then(
      (s) => (setting = s),
      (err: Error) => logger.warn('clock: could not read platform_clock', { error: err.message })
    )
  }, o.refreshMs)
  timer.unref()
  return () => {
    clearInterval(timer)
    if (source === pool) source = undefined
    setting = { offsetMs: 0, fixedAt: null }
  }
}

/** Reads the controllable clock's row now (a job's first step, so that what it decides follows the row exactly). */
export async function syncClock(): Promise<void> {
  if (source) setting = await readClock(source)
}

/** Moves the clock of every instance (controllable clocks only): by an offset from the system's, or to a fixed instant; `null` for both is the system's time. */
export async function setClock(db: Pick<pg.Pool, 'query'>, s: { offsetMs?: number; fixedAt?: Date | null }) {
  await db.query(
    `INSERT INTO platform_clock (id, offset_ms, fixed_at, updated_at) VALUES (1, $1, $2, now())
     ON CONFLICT (id) DO UPDATE SET offset_ms = EXCLUDED.offset_ms, fixed_at = EXCLUDED.fixed_at, updated_at = now()`,
    [Math.round(s.offsetMs ?? 0), s.fixedAt ?? null]
  )
}

/** The day of an instant as the platform counts days: its UTC date, `YYYY-MM-DD` (today(), due dates, date defaults). */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10)
}
