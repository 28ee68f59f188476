import t from '../helpers/tap.ts'
import pg from 'pg'
import { assertClockAllowed, clock, readClock, startClock, syncClock } from '../../core/clock.ts'
import { parseOffset } from '../../core/cli/clock.ts'
import { records } from '../helpers/cli.ts'
import { freshDatabase } from '../helpers/database.ts'

/** The controllable clock (core/clock.ts): refused in production, moved for every process by one row, and its CLI. */
const db = await freshDatabase()
const config = { database: { url: db.url } }
const migrated = await records(['migrate'], { config })
if (migrated.code !== 0) throw new Error(`setup: ${migrated.stderr}`)
const pool = new pg.Pool({ connectionString: db.url, max: 2 })
t.teardown(async () => {
  await pool.end()
  await db.drop()
})

t.test('a controllable clock is refused under NODE_ENV=production', async (t) => {
  const was = process.env.NODE_ENV
  t.teardown(() => void (process.env.NODE_ENV = was))
  process.env.NODE_ENV = 'production'
  t.throws(() => assertClockAllowed(true), /refused under NODE_ENV=production/)
  t.doesNotThrow(() => assertClockAllowed(false), 'the system clock is always allowed')
  await t.rejects(startClock(pool, { controllable: true, refreshMs: 100 }), /refused under NODE_ENV=production/)
})

t.test('records clock refuses to move a clock that is not controllable', async (t) => {
  const r = await records(['clock', 'set', '--offset', '30d'], { config })
  t.equal(r.code, 2)
  t.match(r.stderr, /clock\.controllable/)
  t.same(await readClock(pool), { offsetMs: 0, fixedAt: null }, 'nothing written')
})

t.test('records clock moves the time every process with a controllable clock reads', async (t) => {
  const controllable = { ...config, clock: { controllable: true, refreshMs: 100 } }
  const stop = await startClock(pool, { controllable: true, refreshMs: 100 })
  t.teardown(stop)
  const set = await records(['clock', 'set', '--offset', '30d'], { config: controllable })
  t.equal(set.code, 0, set.stderr)
  t.match(set.stdout, /system time \+2592000000 ms/)
  await syncClock()
  const ahead = clock().now().getTime() - Date.now()
  t.ok(ahead > 29.9 * 86_400_000 && ahead <= 30 * 86_400_000, `thirty days ahead (${ahead} ms)`)
  const fixed = await records(['clock', 'set', '--at', '2030-01-01T00:00:00Z'], { config: controllable })
  t.equal(fixed.code, 0, fixed.stderr)
  await syncClock()
  t.equal(clock().now().toISOString(), '2030-01-01T00:00:00.000Z', 'a fixed instant stands still')
  const bad = await records(['clock', 'set', '--offset', 'soon'], { config: controllable })
  t.equal(bad.code, 2)
  const reset = await records(['clock', 'reset'], { config: controllable })
  t.match(reset.stdout, /\tsystem time$/m)
  await syncClock()
  t.ok(Math.abs(clock().now().getTime() - Date.now()) < 1000, 'back to the system time')
})

t.test('an offset is a whole number of seconds, minutes, hours or days', async (t) => {
  t.equal(parseOffset('30d'), 30 * 86_400_000)
  t.equal(parseOffset('-2h'), -7_200_000)
  t.equal(parseOffset('90m'), 5_400_000)
  t.equal(parseOffset('1.5d'), undefined)
  t.equal(parseOffset('soon'), undefined)
})
