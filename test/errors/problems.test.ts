import { randomBytes } from 'node:crypto'
import t, { type Test } from '../helpers/tap.ts'
import { problemKinds } from '../../core/errors/kinds.ts'
import { incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

const pool = server.platform.db.system
const recordCount = async () => (await pool.query('SELECT count(*)::int AS n FROM records')).rows[0].n as number
const created = await server.request('POST', '/api/v1/records', {
  body: { moduleKey: 'incident', payload: incidentPayload() }
})
const recordId: string = created.body.id

/** The RFC 7807 shape every client-triggerable error shares; returns the body for further checks. */
function expectProblem(t: Test, r: Reply, status: number, kind: keyof typeof problemKinds, code: string) {
  t.equal(r.status, status, `status ${status}`)
  t.match(r.headers.get('content-type'), /^application\/problem\+json/, 'application/problem+json')
  t.match(
    r.body,
    { type: String, title: String, status: Number, detail: String, code: String, traceId: String },
    'has every problem member'
  )
  t.equal(r.body.status, status, 'body.status equals the HTTP status')
  t.equal(r.body.type, `${server.url}/errors/${kind}`, `type is the ${kind} page`)
  t.equal(r.body.title, problemKinds[kind].title, 'title of the kind')
  t.equal(r.body.code, code, `code ${code}`)
  t.ok(r.body.detail.length > 10, 'detail explains')
  t.match(r.body.traceId, /^[0-9a-f]{32}$/, 'traceId is a 32-hex trace id')
  t.equal(r.headers.get('x-trace-id'), r.body.traceId, 'X-Trace-Id equals body.traceId')
  return r.body
}

t.test('an unknown route is a 404 route.not_found problem', async (t) => {
  expectProblem(t, await server.request('GET', '/api/v1/nowhere'), 404, 'not-found', 'route.not_found')
  expectProblem(t, await server.request('GET', '/no/such/thing', { token: null }), 404, 'not-found', 'route.not_found')
})

t.test('malformed JSON is a 400 request.malformed_json problem', async (t) => {
  const r = await server.request('POST', '/api/v1/records', {
    raw: '{"moduleKey": "incident", ',
    headers: { 'content-type': 'application/json' }
  })
  expectProblem(t, r, 400, 'bad-request', 'request.malformed_json')
})

t.test('a body sent as text/plain is a 415 problem', async (t) => {
  const r = await server.request('POST', '/api/v1/records', {
    raw: JSON.stringify({ moduleKey: 'incident', payload: incidentPayload() }),
    headers: { 'content-type': 'text/plain' }
  })
  expectProblem(t, r, 415, 'unsupported-media-type', 'request.unsupported_media_type')
})

t.test('a body over 1 MiB is a 413 problem and creates nothing', async (t) => {
  const before = await recordCount()
  const big = JSON.stringify({
    moduleKey: 'incident',
    payload: incidentPayload({ description: 'x'.repeat(1024 * 1024 + 10) })
  })
  const r = await server.request('POST', '/api/v1/records', {
    raw: big,
    headers: { 'content-type': 'application/json' }
  })
  const body = expectProblem(t, r, 413, 'payload-too-large', 'request.too_large')
  t.match(body.detail, /1048576/, 'detail names the limit')
  // Without Content-Length the limit is enforced while streaming.
  const chunks = [Buffer.from(big.slice(0, 600_000)), Buffer.from(big.slice(600_000))]
  const stream = new ReadableStream({
    pull(c) {
      const next = chunks.shift()
      if (next) c.enqueue(next)
      else c.close()
    }
  })
  const res = await fetch(`${server.url}/api/v1/records`, {
    method: 'POST',
    body: stream,
    duplex: 'half',
    headers: { authorization: `Bearer ${server.keys.acme}`, 'content-type': 'application/json' }
  } as RequestInit)
  t.equal(res.status, 413, 'chunked body: 413')
  t.equal((await res.json()).code, 'request.too_large')
  t.equal(await recordCount(), before, 'no record created')
})

t.test('an unknown cursor is a 400 cursor.invalid problem', async (t) => {
  for (const cursor of [
    'garbage',
    'abc.def',
    `${Buffer.from('{"s":"[]","p":[1]}').toString('base64url')}.${randomBytes(12).toString('base64url')}`
  ]) {
    expectProblem(
      t,
      await server.request('GET', `/api/v1/records?moduleKey=incident&cursor=${encodeURIComponent(cursor)}`),
      400,
      'bad-request',
      'cursor.invalid'
    )
  }
})

t.test('a cursor issued for other filters is a 400 cursor.invalid problem', async (t) => {
  await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })
  const page = await server.request('GET', '/api/v1/records?moduleKey=incident&limit=1')
  t.type(page.body.nextCursor, 'string')
  const next = await server.request('GET', `/api/v1/records?moduleKey=incident&limit=1&cursor=${page.body.nextCursor}`)
  t.equal(next.status, 200, 'the cursor works for its own query')
  expectProblem(
    t,
    await server.request('GET', `/api/v1/records?moduleKey=incident&state=closed&cursor=${page.body.nextCursor}`),
    400,
    'bad-request',
    'cursor.invalid'
  )
})

t.test('limit=500 is a 400 field.invalid problem naming limit', async (t) => {
  const body = expectProblem(
    t,
    await server.request('GET', '/api/v1/records?moduleKey=incident&limit=500'),
    400,
    'validation',
    'field.invalid'
  )
  t.match(body.detail, /limit/)
  t.match(body.errors, [{ field: 'limit' }])
})

t.test('a missing Authorization header is a 401 auth.missing problem with WWW-Authenticate', async (t) => {
  const r = await server.request('GET', '/api/v1/records?moduleKey=incident', { token: null })
  expectProblem(t, r, 401, 'authentication', 'auth.missing')
  t.match(r.headers.get('www-authenticate'), /^Bearer realm=/)
})

t.test('an unknown or malformed credential is a 401 problem', async (t) => {
  const unknown = await server.request('GET', '/api/v1/records?moduleKey=incident', {
    token: `svc_k_${'A'.repeat(40)}`
  })
  expectProblem(t, unknown, 401, 'authentication', 'auth.invalid')
  t.match(unknown.headers.get('www-authenticate'), /^Bearer/)
  expectProblem(
    t,
    await server.request('GET', '/api/v1/records?moduleKey=incident', { token: 'not-one-of-ours' }),
    401,
    'authentication',
    'auth.invalid'
  )
  for (const header of ['Basic dXNlcjpwYXNz', 'Bearer', `Bearer ${server.keys.acme} extra`, server.keys.acme]) {
    const r = await server.request('GET', '/api/v1/records?moduleKey=incident', {
      token: null,
      headers: { authorization: header }
    })
    expectProblem(t, r, 401, 'authentication', 'auth.malformed')
  }
})

t.test('a revoked token is refused with 401 auth.revoked on the very next call', async (t) => {
  const { token, credential } = await server.platform.credentials.create({
    tenantId: 'acme',
    kind: 'api_key',
    name: 'to revoke'
  })
  t.equal(
    (await server.request('GET', '/api/v1/modules', { token })).status,
    200,
    'works before revocation (and is now cached)'
  )
  await server.platform.credentials.revoke(credential.id)
  expectProblem(t, await server.request('GET', '/api/v1/modules', { token }), 401, 'authentication', 'auth.revoked')
})

t.test('an expired token is refused with 401 auth.expired', async (t) => {
  const { token } = await server.platform.credentials.create({
    tenantId: 'acme',
    kind: 'api_key',
    name: 'expired',
    expiresAt: new Date(Date.now() - 60_000).toISOString()
  })
  const body = expectProblem(
    t,
    await server.request('GET', '/api/v1/modules', { token }),
    401,
    'authentication',
    'auth.expired'
  )
  t.match(body.detail, /expired at \d{4}-/)
})

t.test('a method the route does not accept is a 405 problem with an Allow header', async (t) => {
  const r = await server.request('PUT', `/api/v1/records/${recordId}`, { body: { payload: { title: 'replaced' } } })
  const body = expectProblem(t, r, 405, 'method-not-allowed', 'http.method_not_allowed')
  t.match(body.detail, /PUT/, 'detail names the HTTP method')
  t.same(
    r.headers.get('allow')?.split(/,\s*/).sort(),
    ['DELETE', 'GET', 'HEAD', 'PATCH'],
    'Allow lists the methods of a record'
  )
  const collection = await server.request('PUT', '/api/v1/records', { body: { payload: {} } })
  expectProblem(t, collection, 405, 'method-not-allowed', 'http.method_not_allowed')
  t.same(
    collection.headers.get('allow')?.split(/,\s*/).sort(),
    ['GET', 'HEAD', 'POST'],
    'Allow lists the methods of the collection'
  )
  const modules = await server.request('POST', '/api/v1/modules', { body: {} })
  expectProblem(t, modules, 405, 'method-not-allowed', 'http.method_not_allowed')
  t.same(modules.headers.get('allow')?.split(/,\s*/).sort(), ['GET', 'HEAD'], 'Allow of a read-only service')
  const operation = await server.request('POST', `/api/v1/records/${recordId}:frobnicate`, { body: {} })
  expectProblem(t, operation, 404, 'not-found', 'route.not_found')
  t.match(operation.body.detail, ':frobnicate', 'an unknown :operation is an unknown route')
  const { rows } = await pool.query("SELECT payload->>'title' AS title FROM records WHERE id = $1", [recordId])
  t.equal(rows[0].title, incidentPayload().title, 'the record is unchanged')
})

t.test("a W3C traceparent's trace id is reused as the traceId", async (t) => {
  const traceId = randomBytes(16).toString('hex')
  const r = await server.request('GET', '/api/v1/nowhere', {
    headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` }
  })
  expectProblem(t, r, 404, 'not-found', 'route.not_found')
  t.equal(r.body.traceId, traceId)
  const zero = await server.request('GET', '/api/v1/nowhere', {
    headers: { traceparent: `00-${'0'.repeat(32)}-${randomBytes(8).toString('hex')}-01` }
  })
  t.not(zero.body.traceId, '0'.repeat(32), 'an all-zero (invalid) trace id is replaced')
  // The other invalid forms W3C names: an all-zero parent span id, and version ff. The same reading as a job's link.
  for (const header of [`00-${traceId}-${'0'.repeat(16)}-01`, `ff-${traceId}-${randomBytes(8).toString('hex')}-01`]) {
    const invalid = await server.request('GET', '/api/v1/nowhere', { headers: { traceparent: header } })
    t.not(invalid.body.traceId, traceId, `${header.slice(0, 6)}…: an invalid traceparent is not followed`)
    t.match(invalid.body.traceId, /^[\da-f]{32}$/)
  }
  const ok = await server.request('GET', '/api/v1/modules', {
    headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` }
  })
  t.equal(ok.headers.get('x-trace-id'), traceId, 'successful answers echo it too')
})

t.test('the problem type URL serves a page about the kind', async (t) => {
  const problem = await server.request('GET', '/api/v1/nowhere')
  const page = await fetch(problem.body.type)
  t.equal(page.status, 200)
  t.match(page.headers.get('content-type'), /^text\/html/)
  t.match(await page.text(), problemKinds['not-found'].title)
  for (const kind of Object.keys(problemKinds) as Array<keyof typeof problemKinds>) {
    const r = await server.request('GET', `/errors/${kind}`, { token: null })
    t.equal(r.status, 200, `/errors/${kind}`)
    t.ok(r.text.includes(problemKinds[kind].title), `/errors/${kind} mentions its title`)
  }
})

t.test('GET /errors lists every kind and an unknown kind is a 404', async (t) => {
  const index = await server.request('GET', '/errors', { token: null })
  t.equal(index.status, 200)
  t.match(index.headers.get('content-type'), /^text\/html/)
  for (const [kind, k] of Object.entries(problemKinds)) {
    t.ok(index.text.includes(`id="${kind}"`), `lists ${kind}`)
    t.ok(index.text.includes(`${k.status} ${k.title}`), `shows status and title of ${kind}`)
  }
  expectProblem(
    t,
    await server.request('GET', '/errors/unknown-kind', { token: null }),
    404,
    'not-found',
    'route.not_found'
  )
})
