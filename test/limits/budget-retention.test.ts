// tap: own process (it asks the collector whether a request's context is gone, which other test files' live state in a shared process can hold)
import t from '../helpers/tap.ts'
import type { Context } from 'koa'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { rateLimit, requestBudget } from '../../core/http/rate-limit.ts'
import { currentBudget, type Budget } from '../../core/limits/budget.ts'
import { MemoryLimiter } from '../../core/limits/memory.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** Runs one request through the rate limit and the budget middleware; returns its budget and a weak hold on its context. */
async function oneRequest(limiter: MemoryLimiter, limit: number) {
  let budget: Budget | undefined
  const headers: Record<string, string> = {}
  const ctx = {
    state: {},
    ip: '127.0.0.1',
    headerSent: false,
    set: (h: Record<string, string>) => Object.assign(headers, h),
    // Stands for the answer a real context holds (ctx.body): a page of records.
    body: Array.from({ length: 1000 }, (_, i) => ({ i }))
  } as unknown as Context
  const middleware = [rateLimit(limiter, () => limit), requestBudget(() => ({ units: 10_000, unitsPerRequest: 100 }))]
  await middleware[0](ctx, () =>
    middleware[1](ctx, async () => {
      budget = currentBudget()
      // Work that costs three requests: counted (and shown in the headers) before the answer.
      budget.charge(250, 'rows read')
      await budget.settleRate()
    })
  )
  return { budget: budget!, context: new WeakRef(ctx), headers }
}

t.test('a request’s budget, kept by work the request started, does not keep the request and its answer', async (t) => {
  const limiter = new MemoryLimiter()
  t.teardown(() => limiter.close())
  const { budget, context, headers } = await oneRequest(limiter, 100)
  t.equal(headers['X-RateLimit-Remaining'], '97', 'the request counted as three')
  // A weak reference's target lives at least until the end of the current job; two rounds, as a collection can
  // leave what the first one's finalization freed.
  for (let i = 0; i < 2; i++) {
    await new Promise((resolve) => setImmediate(resolve))
    gc()
  }
  t.ok(budget, 'the budget is still reachable (from the async context of whatever the request started)')
  t.equal(context.deref(), undefined, 'the request context and its answer are not')
})

t.test('a request whose work does not fit the rate limit is refused with the headers of the count', async (t) => {
  const limiter = new MemoryLimiter()
  t.teardown(() => limiter.close())
  const err = await oneRequest(limiter, 2).then(
    () => undefined,
    (e: { problemCode?: string; headers?: Record<string, string> }) => e
  )
  t.equal(err?.problemCode, 'rate_limit.exceeded')
  t.equal(err?.headers?.['X-RateLimit-Remaining'], '0', 'the count that refused it')
  t.equal(err?.headers?.['X-RateLimit-Limit'], '2')
})
