import fc from 'fast-check'
import type { Test } from '../helpers/tap.ts'

/**
 * Seeds, bounds and reporting shared by the fuzz tests: FUZZ_RUNS, FUZZ_SEED, FUZZ_OPS,
 * FUZZ_BOUND_MS and FUZZ_SHRINK_MS as `npm run fuzz` sets them (run.ts), and a property
 * runner that shrinks within a budget and reports a failure as one `not ok` with its repro
 * and how to replay it.
 */
export const fuzzEnv = {
  runs: Number(process.env.FUZZ_RUNS ?? 25),
  seed: Number(process.env.FUZZ_SEED ?? 20261123),
  only: process.env.FUZZ_OPS ? new RegExp(process.env.FUZZ_OPS) : undefined,
  /** Per answer; each test says its default and why. */
  boundMs: (fallback: number) => Number(process.env.FUZZ_BOUND_MS ?? fallback),
  // Shrinking a failure replays requests; past this budget it stops and reports the smallest so far.
  shrinkBudgetMs: Number(process.env.FUZZ_SHRINK_MS ?? 15_000)
}

/**
 * Runs `numRuns` cases of `arbitrary` under fast-check seeded `seed`; a shrink that outlives
 * the budget stops and reports the smallest failure so far (a failure to answer in time is
 * not shrunk at all: each step would wait as long again). A failure fails `t` with the
 * counterexample as a ready repro; returns whether every case passed.
 */
export async function fuzzProperty<C>(
  t: Test,
  arbitrary: fc.Arbitrary<C>,
  o: { seed: number; numRuns: number; show: (c: C) => string },
  send: (c: C) => Promise<void>
): Promise<boolean> {
  let failedAt: number | undefined
  const printable = arbitrary.map((c) =>
    typeof c === 'object' && c !== null ? Object.assign(c, { [fc.toStringMethod]: () => o.show(c) }) : c
  )
  const property = fc.asyncProperty(printable, async (c) => {
    if (failedAt !== undefined && performance.now() - failedAt > fuzzEnv.shrinkBudgetMs) return true
    try {
      await send(c)
    } catch (err) {
      failedAt ??= (err as { slow?: boolean }).slow ? -Infinity : performance.now()
      throw err
    }
  })
  const details = await fc.check(property, { seed: o.seed, numRuns: o.numRuns })
  if (!details.failed) return true
  const error = details.errorInstance as Error | undefined
  const repro = error?.message ?? String(details.errorInstance)
  t.fail(repro.split('\n').slice(0, 2).join(' '), {
    repro,
    replay: `FUZZ_SEED=${fuzzEnv.seed} FUZZ_RUNS=${fuzzEnv.runs} (this property: fast-check seed ${details.seed}, path "${details.counterexamplePath}", after ${details.numRuns} case(s), shrunk ${details.numShrinks} time(s))`,
    counterexample: fc.stringify(details.counterexample),
    stack: ''
  })
  return false
}
