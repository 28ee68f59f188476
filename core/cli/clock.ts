import { assertClockAllowed, readClock, setClock } from '../clock.ts'
import type { CliContext } from '../plugin.ts'

const units: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `30d`, `-2h`, `90m`, `45s` in milliseconds; undefined when it is none of these. */
export function parseOffset(text: string): number | undefined {
  const m = /^([+-]?\d+)([smhd])$/.exec(text.trim())
  return m ? Number(m[1]) * units[m[2]] : undefined
}

/**
 * `records clock show|set|reset`: the platform_clock row every instance with `clock.controllable` follows
 * (core/clock.ts; docs/operations.md, "Moving the clock"). Refused where the clock is not controllable.
 */
export async function clockCommand(c: CliContext, action: string | undefined): Promise<void> {
  const controllable = c.platform.config.clock.controllable
  try {
    assertClockAllowed(controllable)
  } catch (err) {
    c.fail((err as Error).message)
  }
  if (!controllable)
    c.fail('the clock is the system clock here: set clock.controllable (never in production) to move it')
  const pool = c.platform.db.pool
  if (action === 'set') {
    const offset = typeof c.values.offset === 'string' ? c.values.offset : undefined
    const at = typeof c.values.at === 'string' ? c.values.at : undefined
    if (!!offset === !!at) c.fail('clock set takes --offset (e.g. 30d, -2h, 90m) or --at (an ISO 8601 instant)')
    if (offset !== undefined) {
      const ms = parseOffset(offset)
      if (ms === undefined) c.fail(`--offset ${offset}: a whole number of s, m, h or d, e.g. 30d`)
      await setClock(pool, { offsetMs: ms })
    } else {
      const instant = new Date(at!)
      if (Number.isNaN(instant.getTime())) c.fail(`--at ${at}: not an ISO 8601 instant`)
      await setClock(pool, { fixedAt: instant })
    }
  } else if (action === 'reset') await setClock(pool, {})
  else if (action !== 'show') c.fail('records clock show|set|reset')
  const s = await readClock(pool)
  const now = s.fixedAt ?? new Date(Date.now() + s.offsetMs)
  c.out(
    `${now.toISOString()}\t${s.fixedAt ? 'fixed' : s.offsetMs ? `system time ${s.offsetMs >= 0 ? '+' : ''}${s.offsetMs} ms` : 'system time'}`
  )
}
