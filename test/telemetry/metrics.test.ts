import { randomUUID } from 'node:crypto'
import t from '../helpers/tap.ts'
import { defaultTenants, incidentPayload, startTestServer } from '../helpers/server.ts'
import { metricValue as value } from '../helpers/metrics.ts'
import { sendPage } from '../helpers/pages.ts'

/**
 * Prometheus metrics, HTTP in and out: requests are made on the API port, then the
 * metrics listener (its own port) is scraped as Prometheus would.
 */
const server = await startTestServer({
  metrics: { enabled: true, port: 0 },
  // One tenant with a tiny request limit, for a 429.
  tenants: { ...defaultTenants, initech: { ...defaultTenants.initech, limits: { requestsPerMinute: 2 } } }
})
t.teardown(() => server.close())
const metricsUrl = server.running.metricsUrl!

async function scrape(): Promise<string> {
  const res = await fetch(metricsUrl)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
  return res.text()
}

/** Every series of `name` (its label text), e.g. to show only one exists. */
const series = (text: string, name: string) => text.split('\n').filter((l) => l.startsWith(`${name}{`))

t.test('the metrics listen on a port of their own: the API port does not serve /metrics', async (t) => {
  t.not(new URL(metricsUrl).port, new URL(server.url).port)
  const onApi = await fetch(`${server.url}/metrics`)
  t.equal(onApi.status, 404)
  t.notMatch(await onApi.text(), /records_http_requests_total/)
  t.equal((await fetch(new URL('/other', metricsUrl))).status, 404, 'the listener serves /metrics only')
})

t.test('requests are counted by route template and status, never by the path sent', async (t) => {
  const unmatchedBefore =
    value(await scrape(), 'records_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }) ?? 0
  const created = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload() }
  })
  t.equal(created.status, 201)
  t.equal((await server.request('GET', `/api/v1/records/${created.body.id}`)).status, 200)
  const invalid = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload({ severity: 'huge' }) }
  })
  t.equal(invalid.status, 400)
  const ids = Array.from({ length: 25 }, () => randomUUID())
  for (const id of ids) t.equal((await server.request('GET', `/api/v1/records/${id}`)).status, 404)
  // Paths no route serves, and an operation no service has, each many times over.
  for (const id of ids.slice(0, 10)) t.equal((await server.request('GET', `/api/v1/nothing-${id}`)).status, 404)
  for (const id of ids.slice(0, 5))
    t.equal((await server.request('POST', `/api/v1/records/${id}:frobnicate`, { body: {} })).status, 404)
  const unauthenticated = await server.request('GET', `/api/v1/records/${ids[0]}`, { token: 'not-a-token' })
  t.equal(unauthenticated.status, 401)

  const text = await scrape()
  const count = (method: string, route: string, status: number) =>
    value(text, 'records_http_requests_total', { method, route, status: String(status) })
  t.equal(count('POST', '/api/v1/records', 201), 1)
  t.equal(count('POST', '/api/v1/records', 400), 1)
  t.equal(count('GET', '/api/v1/records/:id', 200), 1)
  t.equal(count('GET', '/api/v1/records/:id', 404), 25, 'one series for 25 ids')
  t.equal(count('GET', '/api/v1/records/:id', 401), 1, 'a request refused before routing still has its route')
  t.equal(count('GET', 'unmatched', 404)! - unmatchedBefore, 10, 'paths no route serves share one label')
  t.equal(count('POST', '/api/v1/records/:id:method', 404), 5, 'an operation no service has is not named')
  t.equal(
    value(text, 'records_http_request_duration_seconds_count', {
      method: 'GET',
      route: '/api/v1/records/:id',
      status: '404'
    }),
    25
  )
  t.ok(
    value(text, 'records_http_request_duration_seconds_sum', {
      method: 'GET',
      route: '/api/v1/records/:id',
      status: '404'
    })! > 0
  )
  for (const id of [created.body.id, ...ids]) t.notOk(text.includes(id), 'no id in any label')
  t.notMatch(text, /nothing-/)
  t.equal(
    series(text, 'records_http_requests_total').filter(
      (l) => l.includes('route="/api/v1/records/:id"') && l.includes('method="GET"')
    ).length,
    3,
    'GET on a record: one series per status (200, 401, 404)'
  )
})

t.test("pages, error pages and the API's own documents are labelled by their routes", async (t) => {
  const id = randomUUID()
  t.equal((await server.request('GET', '/sign-in', { token: null })).status, 200)
  const refused = (await fetch(`${server.url}/settings/webhooks/${id}/test`, { method: 'POST', redirect: 'manual' }))
    .status
  t.equal((await server.request('GET', '/errors/not-found', { token: null })).status, 200)
  t.equal((await server.request('GET', '/api/graphql/schema.graphql')).status, 200)
  const text = await scrape()
  t.equal(value(text, 'records_http_requests_total', { method: 'GET', route: '/sign-in', status: '200' }), 1)
  t.equal(
    value(text, 'records_http_requests_total', {
      method: 'POST',
      route: '/settings/webhooks/:id/test',
      status: String(refused)
    }),
    1
  )
  t.equal(value(text, 'records_http_requests_total', { method: 'GET', route: '/errors/:kind', status: '200' }), 1)
  t.equal(
    value(text, 'records_http_requests_total', { method: 'GET', route: '/api/graphql/schema.graphql', status: '200' }),
    1
  )
  t.notOk(text.includes(id))
})

t.test('a rate-limited 429 is counted, by its problem code', async (t) => {
  const statuses = []
  for (let i = 0; i < 4; i++)
    statuses.push(
      (await server.request('GET', '/api/v1/records?moduleKey=incident', { token: server.keys.initech })).status
    )
  t.same(statuses.slice(2), [429, 429])
  const text = await scrape()
  t.equal(value(text, 'records_rate_limit_refusals_total', { code: 'rate_limit.exceeded' }), 2)
  t.equal(value(text, 'records_http_requests_total', { method: 'GET', route: '/api/v1/records', status: '429' }), 2)
})

t.test("the sign-in throttle's 429 is counted too", async (t) => {
  const limit = server.platform.limitsFor('acme').signInAttemptsPerMinute
  const statuses = []
  for (let i = 0; i <= limit; i++)
    statuses.push(
      (
        await sendPage(server, 'POST', '/sign-in', {
          form: { tenant: 'acme', userName: 'nobody-here', password: 'wrong password here' }
        })
      ).status
    )
  t.equal(statuses.at(-1), 429)
  const text = await scrape()
  t.equal(value(text, 'records_rate_limit_refusals_total', { code: 'sign_in.throttled' }), 1)
  t.equal(value(text, 'records_http_requests_total', { method: 'POST', route: '/sign-in', status: '429' }), 1)
})

t.test('bulk rows are counted by outcome', async (t) => {
  const rows = [incidentPayload(), incidentPayload({ severity: 'huge' }), incidentPayload()]
    .map((payload) => JSON.stringify({ payload }))
    .join('\n')
  const res = await server.request('POST', '/api/modules/incident/bulk', {
    raw: rows,
    headers: { 'content-type': 'application/x-ndjson' }
  })
  t.equal(res.status, 200)
  const text = await scrape()
  t.equal(value(text, 'records_bulk_rows_total', { outcome: 'created' }), 2)
  t.equal(value(text, 'records_bulk_rows_total', { outcome: 'error' }), 1)
  t.equal(
    value(text, 'records_http_requests_total', {
      method: 'POST',
      route: '/api/modules/:moduleKey/bulk',
      status: '200'
    }),
    1
  )
})

t.test('the job queue and the database pool are read at each scrape', async (t) => {
  let text = await scrape()
  t.equal(
    value(text, 'records_jobs_queued', { job: 'exports.render' }),
    0,
    'every job the service defines has its series'
  )
  // Jobs do not run on this server: the export waits in the queue.
  const started = await server.request('POST', '/api/v1/exports', { body: { moduleKey: 'incident', format: 'csv' } })
  t.equal(started.status, 202)
  // The job is queued as the export is created; the scrape reads the queue as it is then (a loaded machine
  // may answer it before the row is visible to another connection, so read until it shows, briefly).
  const deadline = Date.now() + 10_000
  do {
    await new Promise((r) => setTimeout(r, 20))
    text = await scrape()
  } while (value(text, 'records_jobs_queued', { job: 'exports.render' }) !== 1 && Date.now() < deadline)
  t.equal(value(text, 'records_jobs_queued', { job: 'exports.render' }), 1)
  t.ok(value(text, 'records_jobs_oldest_queued_age_seconds', { job: 'exports.render' })! > 0)
  t.equal(value(text, 'records_jobs_locked', { job: 'exports.render' }), 0)
  t.ok(value(text, 'records_db_pool_connections')! >= 1)
  t.equal(value(text, 'records_db_pool_max'), server.platform.config.database.poolSize)
  t.type(value(text, 'records_db_pool_idle'), 'number')
  t.equal(value(text, 'records_db_pool_waiting'), 0)
  t.type(value(text, 'process_cpu_user_seconds_total'), 'number', "prom-client's process metrics")
  t.type(value(text, 'nodejs_eventloop_lag_seconds'), 'number')
})

t.test('two servers in one process count apart', async (t) => {
  const other = await startTestServer({ metrics: { enabled: true, port: 0 } })
  t.teardown(() => other.close())
  t.equal((await other.request('GET', '/api/v1/records?moduleKey=incident')).status, 200)
  const text = await (await fetch(other.running.metricsUrl!)).text()
  t.equal(value(text, 'records_http_requests_total', { method: 'GET', route: '/api/v1/records', status: '200' }), 1)
  t.equal(
    value(text, 'records_http_requests_total', { method: 'GET', route: '/api/v1/records/:id', status: '404' }),
    undefined
  )
})

t.test('a metrics port already taken leaves the API running, without metrics', async (t) => {
  const other = await startTestServer({ metrics: { enabled: true, port: Number(new URL(metricsUrl).port) } })
  t.teardown(() => other.close())
  t.equal(other.running.metricsUrl, undefined)
  t.equal((await other.request('GET', '/api/v1/records?moduleKey=incident')).status, 200)
})
