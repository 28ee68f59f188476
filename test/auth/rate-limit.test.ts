import { randomUUID } from 'node:crypto'
import t, { type Test } from '../helpers/tap.ts'
import { createPlatform } from '../../core/app.ts'
import { loadConfig } from '../../core/config.ts'
import { createLimiter } from '../../core/limits/limiter.ts'
import { plugins } from '../../plugins/index.ts'
import { assertContract, startCheckedServer, startTestServer, type Reply, type TestServer } from '../helpers/server.ts'

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

/** Sends `count` requests, `parallel` at a time, and returns the replies in sending order. */
async function burst(send: (i: number) => Promise<Reply>, count: number, parallel = 8): Promise<Reply[]> {
  const replies: Reply[] = new Array(count)
  let next = 0
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        const i = next++
        replies[i] = await send(i)
      }
    })
  )
  return replies
}

function checkOne429(t: Test, replies: Reply[], startedAt: number, finishedAt: number) {
  const refused = replies.filter((r) => r.status === 429)
  t.equal(refused.length, 1, 'exactly one request is refused')
  t.equal(replies.filter((r) => r.status === 200).length, replies.length - 1, 'all the others succeed')
  const r = refused[0]
  t.match(r.headers.get('content-type'), /^application\/problem\+json/)
  t.equal(r.body.code, 'rate_limit.exceeded')
  t.match(r.body.type, /\/rate-limited$/)
  t.equal(r.body.status, 429)
  t.type(r.body.traceId, 'string')
  const reset = Number(r.headers.get('x-ratelimit-reset'))
  // The window frees its first slot one minute after the first request was counted.
  t.ok(
    reset >= Math.floor((startedAt + 60_000) / 1000) && reset <= Math.ceil((finishedAt + 60_000) / 1000),
    `X-RateLimit-Reset ${reset} is one minute after the first request`
  )
  const retryAfter = Number(r.headers.get('retry-after'))
  t.ok(retryAfter >= 1 && retryAfter <= 61, `Retry-After ${retryAfter} s`)
  t.ok(Math.abs(reset - (Math.floor(Date.now() / 1000) + retryAfter)) <= 2, 'Retry-After and X-RateLimit-Reset agree')
  t.equal(r.headers.get('x-ratelimit-limit'), '300')
  t.equal(r.headers.get('x-ratelimit-remaining'), '0')
}

t.test(
  'the 301st request within a minute is the only one refused, with the time a request will be allowed again',
  async (t) => {
    const server = await startTestServer({ limits: { requestsPerMinute: 300 } })
    t.teardown(() => server.close())
    const startedAt = Date.now()
    const replies = await burst(() => server.request('GET', '/api/v1/modules'), 301)
    checkOne429(t, replies, startedAt, Date.now())
    const remaining = replies
      .filter((r) => r.status === 200)
      .map((r) => Number(r.headers.get('x-ratelimit-remaining')))
      .sort((a, b) => b - a)
    t.same(
      remaining,
      Array.from({ length: 300 }, (_, i) => 299 - i),
      'X-RateLimit-Remaining counts down on every response'
    )
    t.ok(
      replies.every((r) => r.headers.get('x-ratelimit-limit') === '300'),
      'X-RateLimit-Limit on every response'
    )

    const other = await server.request('GET', '/api/v1/modules', { token: server.keys.globex })
    t.equal(other.status, 200, 'another credential has its own window')
    t.equal(other.headers.get('x-ratelimit-remaining'), '299')
    const stillRefused = await server.request('GET', '/api/v1/records?moduleKey=incident')
    t.equal(stillRefused.status, 429, 'every endpoint counts against the same window')
    const unauthenticated = await server.request('GET', '/api/v1/modules', { token: null })
    t.equal(unauthenticated.status, 401, 'a call without a credential is counted by address, not against the key')
    t.ok(unauthenticated.headers.get('x-ratelimit-limit'))
  }
)

t.test('an enterprise tenant gets its own limit from config', async (t) => {
  const server = await startTestServer({
    limits: { requestsPerMinute: 300 },
    tenants: {
      acme: { name: 'Acme', modules: ['incident'], limits: { requestsPerMinute: 5 } },
      globex: { name: 'Globex', modules: ['incident'] }
    }
  })
  t.teardown(() => server.close())
  const acme = await burst(() => server.request('GET', '/api/v1/me', { token: server.keys.acme }), 6, 1)
  t.same(
    acme.map((r) => r.status),
    [200, 200, 200, 200, 200, 429]
  )
  t.equal(acme[0].headers.get('x-ratelimit-limit'), '5')
  const globex = await server.request('GET', '/api/v1/me', { token: server.keys.globex })
  t.equal(globex.headers.get('x-ratelimit-limit'), '300')
})

const redisReachable = await createLimiter({ redisUrl, prefix: 'probe:' }).then(
  async (l) => (await l.close(), true),
  () => false
)

t.test(
  'two service instances on one Redis share the window of a credential',
  { skip: !redisReachable && !process.env.CI ? `no Redis at ${redisUrl}` : false },
  async (t) => {
    const prefix = `test:${randomUUID()}:`
    const first: TestServer = await startTestServer({
      limits: { requestsPerMinute: 300 },
      redis: { url: redisUrl, prefix }
    })
    t.teardown(() => first.close())
    t.equal(first.platform.limiter?.backend, 'redis')
    // A second instance: its own process state, the same database and the same Redis.
    const platform = await createPlatform(loadConfig({ ...first.platform.config, port: 0 }), plugins)
    const second = await startCheckedServer(platform)
    t.teardown(async () => {
      await second.close()
      assertContract(second.violations)
    })
    const token = first.keys.acme
    const send = (i: number) => {
      const base = i % 2 === 0 ? first.url : second.url
      return fetch(`${base}/api/v1/modules`, { headers: { authorization: `Bearer ${token}` } }).then(async (res) => {
        const text = await res.text()
        return { status: res.status, headers: res.headers, text, body: JSON.parse(text) } as Reply
      })
    }
    const startedAt = Date.now()
    const replies = await burst(send, 301)
    checkOne429(t, replies, startedAt, Date.now())
    t.ok(
      replies.filter((_, i) => i % 2 === 0).some((r) => r.status === 200) &&
        replies.filter((_, i) => i % 2 === 1).some((r) => r.status === 200),
      'both instances served requests'
    )
    const afterOnFirst = await send(0)
    const afterOnSecond = await send(1)
    t.same([afterOnFirst.status, afterOnSecond.status], [429, 429], 'both instances now refuse the credential')
  }
)
