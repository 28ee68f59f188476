/**
 * Wall-clock time to a fraction of a millisecond, comparable between processes on one machine
 * (bench/webhooks.ts times a create in one process and its delivery in another). Date.now()
 * ticks once a millisecond: the base is read just after a tick, so `base + performance.now()`
 * is wall time within tens of microseconds in every process that does the same.
 */
export function wallClock(): () => number {
  const before = Date.now()
  let tick: number
  while ((tick = Date.now()) === before) {
    /* spin to the next millisecond, at most one */
  }
  const base = tick - performance.now()
  return () => base + performance.now()
}
