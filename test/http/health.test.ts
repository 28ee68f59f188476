import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'

// A low rate limit, so that a probe that counted would show. Jobs stay off: a job run here would hold the
// process open for minutes after close (Agenda's lock check); test/http/shutdown.test.ts sees the jobs check.
const server = await startTestServer({ limits: { requestsPerMinute: 3 }, health: { timeoutMs: 300 } })
t.teardown(() => server.close())
const redis = !!server.platform.config.redis.url

t.test('liveness and readiness answer without a credential, and probes count against no limit', async (t) => {
  for (let i = 0; i < 6; i++) {
    const live = await server.request('GET', '/livez', { token: null })
    t.equal(live.status, 200)
    t.same(live.body, { status: 'alive' })
    const ready = await server.request('GET', i % 2 ? '/healthz' : '/readyz', { token: null })
    t.equal(ready.status, 200, 'ready, /healthz the same')
    t.equal(ready.body.status, 'ready')
    t.same(
      Object.keys(ready.body.checks).sort(),
      ['database', ...(redis ? ['redis'] : [])].sort(),
      'the database and Redis (when configured) are checked'
    )
    t.ok(Object.values(ready.body.checks).every((c: any) => c.ok === true && typeof c.ms === 'number'))
    t.equal(ready.headers.get('cache-control'), 'no-store')
  }
  t.equal((await server.request('HEAD', '/readyz', { token: null })).status, 200, 'HEAD too')
  const api = await server.request('GET', '/api/v1/records?moduleKey=incident')
  t.equal(api.status, 200, 'eighteen probes later the API still has its three requests a minute')
  t.equal(api.headers.get('x-ratelimit-remaining'), '2')
})

t.test('a check that does not answer in time makes readiness 503 and names it, never its error', async (t) => {
  const readiness = server.running.app.get('readiness')
  readiness.set('stuck', () => new Promise(() => undefined))
  readiness.set('broken', async () => {
    throw new Error('connect ECONNREFUSED 10.1.2.3:5432')
  })
  t.teardown(() => {
    readiness.delete('stuck')
    readiness.delete('broken')
  })
  const ready = await server.request('GET', '/readyz', { token: null })
  t.equal(ready.status, 503)
  t.equal(ready.headers.get('content-type'), 'application/problem+json')
  t.equal(ready.body.code, 'service.not_ready')
  t.match(ready.body.detail, /stuck, broken|broken, stuck/)
  t.equal(ready.body.checks.stuck.ok, false)
  t.equal(ready.body.checks.database.ok, true)
  t.notMatch(ready.text, /10\.1\.2\.3|ECONNREFUSED/, 'the cause goes to the log, not to an unauthenticated caller')
  t.ok(ready.headers.get('retry-after'))
  t.equal((await server.request('GET', '/livez', { token: null })).status, 200, 'liveness does no I/O and stays 200')
})

t.test(
  'a check that has not answered is not started again by the next probes: one call waits, however often the balancers ask',
  async (t) => {
    const readiness = server.running.app.get('readiness')
    let calls = 0
    let answer!: () => void
    readiness.set('slow', () => {
      // The first call hangs until answered; later ones answer at once.
      if (calls++) return Promise.resolve()
      return new Promise<void>((resolve) => (answer = resolve))
    })
    t.teardown(() => readiness.delete('slow'))
    for (let i = 0; i < 4; i++) {
      const ready = await server.request('GET', '/readyz', { token: null })
      t.equal(ready.status, 503, `probe ${i + 1}: not ready while the check has not answered`)
    }
    t.equal(calls, 1, 'four probes, one call of the check')
    answer()
    const ready = await server.request('GET', '/readyz', { token: null })
    t.equal(ready.status, 200, 'ready once it answers')
    t.equal(calls, 2, 'and the next probe checks afresh')
  }
)

t.test(
  'once the instance drains, readiness is 503 at once, liveness stays 200, and responses close their connection',
  async (t) => {
    server.platform.shutdown.begin('test')
    const ready = await server.request('GET', '/readyz', { token: null })
    t.equal(ready.status, 503)
    t.equal(ready.body.code, 'service.shutting_down')
    t.match(ready.body.type, /\/errors\/unavailable$/)
    t.equal(ready.headers.get('connection'), 'close')
    const live = await server.request('GET', '/livez', { token: null })
    t.equal(live.status, 200)
    t.equal(live.headers.get('connection'), 'close')
  }
)
