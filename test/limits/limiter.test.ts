import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import t, { type Test } from '../helpers/tap.ts'
import { createLimiter, type Limiter, type WindowResult } from '../../core/limits/limiter.ts'

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
/** Slack for comparing times taken on either side of a call (and of Redis's clock). */
const slackMs = 25

interface Backend {
  name: 'memory' | 'redis'
  /** Opens a limiter; with Redis, limiters opened in one test share state through its prefix. */
  open(prefix: string): Promise<Limiter>
}

const backends: Backend[] = [
  { name: 'memory', open: () => createLimiter({}) },
  { name: 'redis', open: (prefix) => createLimiter({ redisUrl, prefix }) }
]

/** Gives a test its own limiter factory and Redis prefix; closes the limiters and deletes the prefix's keys at the end. */
function setup(t: Test, backend: Backend) {
  const prefix = `test:${randomBytes(6).toString('hex')}:`
  const opened: Limiter[] = []
  t.teardown(async () => {
    await Promise.all(opened.map((limiter) => limiter.close()))
    if (backend.name === 'redis') await deleteKeys(prefix)
  })
  return async () => {
    const limiter = await backend.open(prefix)
    opened.push(limiter)
    return limiter
  }
}

async function deleteKeys(prefix: string) {
  const admin = new Redis(redisUrl)
  try {
    let cursor = '0'
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      if (keys.length > 0) await admin.del(...keys)
      cursor = next
    } while (cursor !== '0')
  } finally {
    await admin.quit()
  }
}

for (const backend of backends) {
  t.test(`${backend.name} backend`, async (t) => {
    t.test('allows exactly limit hits in a window, then refuses until the oldest hit leaves it', async (t) => {
      const limiter = await setup(t, backend)()
      t.equal(limiter.backend, backend.name)
      const before = Date.now()
      const first = await limiter.hit('k', 3, 60_000)
      await limiter.hit('k', 3, 60_000)
      const third = await limiter.hit('k', 3, 60_000)
      const refused = await limiter.hit('k', 3, 60_000)
      t.ok(first.allowed && third.allowed, 'the first three are allowed')
      t.equal(third.retryAfterMs, 0)
      t.notOk(refused.allowed, 'the fourth is refused')
      t.equal(refused.limit, 3)
      t.equal(refused.remaining, 0)
      t.equal(refused.resetAt, first.resetAt, 'resetAt is the oldest hit + window')
      t.ok(
        Math.abs(refused.resetAt - (before + 60_000)) <= slackMs,
        `resetAt ${refused.resetAt - before} ms after the first hit`
      )
      t.ok(refused.retryAfterMs > 59_000 && refused.retryAfterMs <= 60_000, `retryAfterMs ${refused.retryAfterMs}`)
    })

    t.test('a weighted hit counts as that many hits, all or none', async (t) => {
      const limiter = await setup(t, backend)()
      const a = await limiter.hit('k', 10, 60_000, 4)
      t.ok(a.allowed)
      t.equal(a.remaining, 6)
      const tooHeavy = await limiter.hit('k', 10, 60_000, 7)
      t.notOk(tooHeavy.allowed, 'seven more do not fit in six')
      t.equal(tooHeavy.remaining, 0)
      const b = await limiter.hit('k', 10, 60_000, 6)
      t.ok(b.allowed, 'the refused weight was not counted: six still fit')
      t.equal(b.remaining, 0)
      t.notOk((await limiter.hit('k', 10, 60_000)).allowed)
      await t.rejects(limiter.hit('k', 10, 60_000, 0), RangeError)
      await t.rejects(limiter.hit('k', 10, 60_000, 1.5), RangeError)
    })

    t.test('counts remaining down and reports when the oldest hit leaves', async (t) => {
      const limiter = await setup(t, backend)()
      const results: WindowResult[] = []
      for (let i = 0; i < 4; i++) results.push(await limiter.hit('k', 3, 60_000))
      t.same(
        results.map((r) => r.remaining),
        [2, 1, 0, 0]
      )
      t.same(
        results.map((r) => r.allowed),
        [true, true, true, false]
      )
      t.ok(
        results.every((r) => r.resetAt === results[0].resetAt),
        'the oldest hit sets resetAt throughout'
      )
    })

    t.test('slides: a hit is allowed again once the oldest leaves, not when a fixed bucket turns over', async (t) => {
      const limiter = await setup(t, backend)()
      const windowMs = 500
      const a = await limiter.hit('k', 2, windowMs)
      await sleep(250)
      const bBefore = Date.now()
      const b = await limiter.hit('k', 2, windowMs)
      const bAfter = Date.now()
      const refused = await limiter.hit('k', 2, windowMs)
      t.ok(a.allowed && b.allowed)
      t.notOk(refused.allowed)
      t.equal(refused.resetAt, a.resetAt, 'the wait ends when a leaves')
      await sleep(Math.max(0, refused.resetAt - Date.now()) + slackMs)
      const c = await limiter.hit('k', 2, windowMs)
      t.ok(c.allowed, 'a has left the window, so one more fits')
      t.equal(c.remaining, 0, 'b still counts')
      t.ok(c.resetAt >= bBefore + windowMs - slackMs && c.resetAt <= bAfter + windowMs + slackMs, 'the oldest is now b')
      const again = await limiter.hit('k', 2, windowMs)
      t.notOk(again.allowed, 'b and c fill the window: no fresh bucket')
      t.equal(again.resetAt, c.resetAt, 'the wait ends when b leaves')
    })

    t.test('does not count refused hits, so hammering does not extend the wait', async (t) => {
      const limiter = await setup(t, backend)()
      const windowMs = 400
      const first = await limiter.hit('k', 1, windowMs)
      const deadline = first.resetAt - slackMs
      let refusals = 0
      while (Date.now() < deadline) {
        const r = await limiter.hit('k', 1, windowMs)
        t.equal(r.resetAt, first.resetAt, 'resetAt never moves')
        if (!r.allowed) refusals++
        await sleep(20)
      }
      t.ok(refusals > 5, `${refusals} refused hits`)
      await sleep(Math.max(0, first.resetAt - Date.now()) + slackMs)
      t.ok((await limiter.hit('k', 1, windowMs)).allowed, 'allowed right after the one counted hit left')
    })

    t.test('keeps keys independent', async (t) => {
      const limiter = await setup(t, backend)()
      t.ok((await limiter.hit('tenant-a', 1, 60_000)).allowed)
      t.notOk((await limiter.hit('tenant-a', 1, 60_000)).allowed)
      const other = await limiter.hit('tenant-b', 1, 60_000)
      t.ok(other.allowed, 'another key has its own window')
      t.equal(other.remaining, 0)
      t.ok((await limiter.acquire('tenant-a', 1, 60_000)).lease, 'slots do not share a key with windows')
    })

    t.test('refuses everything at limit 0 and rejects arguments that cannot be a limit', async (t) => {
      const limiter = await setup(t, backend)()
      const before = Date.now()
      const r = await limiter.hit('k', 0, 1000)
      t.notOk(r.allowed)
      t.ok(
        r.retryAfterMs > 0 && Math.abs(r.resetAt - (before + 1000)) <= slackMs,
        'callers are told to back off a whole window'
      )
      t.notOk((await limiter.acquire('k', 0, 1000)).lease)
      await t.rejects(limiter.hit('k', Number.NaN, 1000), RangeError)
      await t.rejects(limiter.hit('k', 1.5, 1000), RangeError)
      await t.rejects(limiter.hit('k', 5, 0), RangeError)
      await t.rejects(limiter.acquire('k', 1, -1), RangeError)
      await t.rejects(limiter.hit('', 1, 1000), TypeError)
    })

    t.test('concurrency: refuses the slot after the limit and frees it on release', async (t) => {
      const limiter = await setup(t, backend)()
      const one = await limiter.acquire('export', 2, 60_000)
      const two = await limiter.acquire('export', 2, 60_000)
      t.ok(one.lease && two.lease)
      t.equal(one.active, 1)
      t.equal(two.active, 2)
      t.not(one.lease!.id, two.lease!.id)
      const three = await limiter.acquire('export', 2, 60_000)
      t.notOk(three.lease, 'the third is refused')
      t.equal(three.active, 2)
      t.equal(three.limit, 2)
      t.ok(three.retryAfterMs > 59_000 && three.retryAfterMs <= 60_000, `retryAfterMs ${three.retryAfterMs}`)
      await one.lease!.release()
      await one.lease!.release() // twice is harmless
      const four = await limiter.acquire('export', 2, 60_000)
      t.ok(four.lease, 'release freed a slot')
      t.equal(four.active, 2)
      t.equal(await one.lease!.extend(60_000), false, 'a released lease cannot be extended')
    })

    t.test('concurrency: an unreleased lease expires after its ttl', async (t) => {
      const limiter = await setup(t, backend)()
      const held = await limiter.acquire('export', 1, 300)
      t.ok(held.lease)
      const refused = await limiter.acquire('export', 1, 300)
      t.notOk(refused.lease)
      t.ok(refused.retryAfterMs > 0 && refused.retryAfterMs <= 300)
      await sleep(300 + slackMs)
      t.ok((await limiter.acquire('export', 1, 300)).lease, 'the crashed holder freed its slot')
      t.equal(await held.lease!.extend(1000), false, 'too late to extend')
    })

    t.test('concurrency: extend keeps the slot beyond its first ttl', async (t) => {
      const limiter = await setup(t, backend)()
      const held = await limiter.acquire('export', 1, 300)
      await sleep(150)
      t.equal(await held.lease!.extend(1000), true)
      await sleep(300)
      const refused = await limiter.acquire('export', 1, 300)
      t.notOk(refused.lease, 'still held after the first ttl')
      t.ok(refused.retryAfterMs > 500 && refused.retryAfterMs <= 1000, `retryAfterMs ${refused.retryAfterMs}`)
      await held.lease!.release()
      t.ok((await limiter.acquire('export', 1, 300)).lease)
    })

    if (backend.name === 'redis') {
      t.test('two instances on the same Redis and prefix share one window', async (t) => {
        const open = setup(t, backend)
        const [a, b] = [await open(), await open()]
        const results: WindowResult[] = []
        for (let i = 0; i < 6; i++) results.push(await a.hit('shared', 10, 60_000))
        for (let i = 0; i < 5; i++) results.push(await b.hit('shared', 10, 60_000))
        t.equal(results.filter((r) => !r.allowed).length, 1, 'exactly one of eleven is refused')
        t.notOk(results[10].allowed, 'the last one')
        const concurrent = await Promise.all(
          Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).hit('burst', 4, 60_000))
        )
        t.equal(concurrent.filter((r) => r.allowed).length, 4, 'simultaneous hits from both never exceed the limit')
      })

      t.test('two instances on the same Redis share concurrency slots', async (t) => {
        const open = setup(t, backend)
        const [a, b] = [await open(), await open()]
        const held = await a.acquire('export', 1, 60_000)
        t.ok(held.lease)
        t.notOk((await b.acquire('export', 1, 60_000)).lease, 'the other instance sees the slot taken')
        await held.lease!.release()
        t.ok((await b.acquire('export', 1, 60_000)).lease, 'and sees it freed')
      })

      t.test('a different prefix is a different set of limits', async (t) => {
        const a = await setup(t, backend)()
        const b = await setup(t, backend)()
        t.ok((await a.hit('k', 1, 60_000)).allowed)
        t.ok((await b.hit('k', 1, 60_000)).allowed)
      })
    }
  })
}

t.test('createLimiter picks memory without a Redis URL', async (t) => {
  const limiter = await createLimiter({ redisUrl: null })
  t.teardown(() => limiter.close())
  t.equal(limiter.backend, 'memory')
})

t.test('createLimiter rejects with a message naming the host when Redis is unreachable', async (t) => {
  const started = Date.now()
  const err = await createLimiter({ redisUrl: 'redis://:secret@127.0.0.1:6390' }).then(
    async (limiter) => {
      await limiter.close()
      t.fail('connected to a port nothing listens on')
    },
    (err: unknown) => err
  )
  t.type(err, Error)
  const message = (err as Error).message
  t.match(message, /Redis/)
  t.match(message, /127\.0\.0\.1:6390/, `names the host: ${message}`)
  t.notMatch(message, /secret/, 'the password stays out of the message')
  t.ok(Date.now() - started < 5_000, 'fails at once instead of retrying')
})

t.test('the memory log stays exact over many windows while its expired front is cut off', async (t) => {
  // A clock of our own: 3,000 hits per 1,000 ms window for 20 windows crosses the cut many times.
  let clock = 1_000_000
  const realNow = Date.now
  Date.now = () => clock
  t.teardown(() => void (Date.now = realNow))
  const limiter = await createLimiter({})
  t.teardown(() => limiter.close())
  const limit = 2_500
  const windowMs = 1_000
  const model: number[] = []
  let mismatches = 0
  for (let i = 0; i < 60_000; i++) {
    clock += i % 3 === 0 ? 1 : 0
    while (model.length && model[0] <= clock - windowMs) model.shift()
    const allowed = model.length < limit
    if (allowed) model.push(clock)
    const expected = {
      allowed,
      remaining: allowed ? limit - model.length : 0,
      resetAt: model.length ? model[0] + windowMs : clock + windowMs
    }
    const got = await limiter.hit('key', limit, windowMs)
    if (got.allowed !== expected.allowed || got.remaining !== expected.remaining || got.resetAt !== expected.resetAt)
      if (mismatches++ < 3) t.same(got, { ...got, ...expected }, `hit ${i}`)
  }
  t.equal(mismatches, 0, 'every hit answered as an exact sliding log would')
})

t.test("a memory log's cost per hit does not grow with the hits in its window", async (t) => {
  // Cutting the expired front off on every hit moved the whole window each time: 50 times slower a hit at 200,000 hits than at 2,000 (measured).
  let clock = 1_000_000
  const realNow = Date.now
  Date.now = () => clock
  t.teardown(() => void (Date.now = realNow))
  const limiter = await createLimiter({})
  t.teardown(() => limiter.close())
  const windowMs = 60_000
  const msPerHit = async (key: string, inWindow: number) => {
    // Fill the window, then time hits that each push one hit out of it: the best of three batches, so a pause elsewhere does not count.
    for (let i = 0; i < inWindow; i++, clock += windowMs / inWindow) await limiter.hit(key, 1e9, windowMs)
    let best = Infinity
    for (let batch = 0; batch < 3; batch++) {
      const started = performance.now()
      for (let i = 0; i < 5_000; i++, clock += windowMs / inWindow) await limiter.hit(key, 1e9, windowMs)
      best = Math.min(best, (performance.now() - started) / 5_000)
    }
    return best
  }
  const small = await msPerHit('small', 2_000)
  const large = await msPerHit('large', 200_000)
  t.ok(large < small * 5, `200,000 hits in the window: ${large.toFixed(4)} ms a hit, 2,000: ${small.toFixed(4)} ms`)
})
