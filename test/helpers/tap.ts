/**
 * The `t` every test file imports instead of tap's: run on its own (`npx tap file`), it is
 * tap's root test; run by `npm test` in an area's process (test/suite/grouped.ts), it is
 * the subtest that file runs in, so the file's tests, teardowns and timeout stay its own.
 */
import tap from 'tap'
import type { Test } from 'tap'

export type { Test }

let current: Test = tap

/** Points `t` at the subtest the next file runs in (test/suite/grouped.ts only). */
export function runningIn(test: Test) {
  current = test
}

const t = new Proxy({} as typeof tap, {
  get(_, key) {
    const holder = current
    const value = Reflect.get(holder, key, holder)
    return typeof value === 'function' ? value.bind(holder) : value
  }
})

export default t
