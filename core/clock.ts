/**
 * The platform's clock: every rule that depends on the time of day (number patterns, date rules, due dates, overdue,
 * recurrence) reads it here, never `new Date()` on its own, so that tests and operators can move it (one clock, one
 * place). Today it is the system's; a controllable source comes with the rules that need it.
 */
export interface Clock {
  /** The current instant. */
  now(): Date
}

const systemClock: Clock = { now: () => new Date() }

/** The clock in force. */
export function clock(): Clock {
  return systemClock
}
