import { request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())
const pool = server.platform.db.system
const count = async (table: string) => (await pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n as number

t.test('a path segment named after an Object.prototype member is a 404 problem, not a 500', async (t) => {
  for (const [method, path] of [
    ['GET', '/api/v1/records/constructor'],
    ['DELETE', '/api/v1/records/__proto__'],
    ['PATCH', '/api/v1/records/toString'],
    ['GET', '/api/v1/tokens/__proto__'],
    ['GET', '/api/v1/modules/hasOwnProperty'],
    ['GET', '/constructor'],
    ['GET', '/api/v1/%5F%5Fproto%5F%5F']
  ]) {
    const res = await server.request(method, path, method === 'PATCH' ? { body: { payload: {} } } : {})
    t.equal(res.status, 404, `${method} ${path}`)
    t.match(res.headers.get('content-type'), /^application\/problem\+json/)
    t.equal(res.body.code, 'route.not_found')
  }
})

t.test('POST on an item URL is 405 with Allow, and creates nothing', async (t) => {
  const created = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload() }
  })
  const [records, tokens, exports] = [await count('records'), await count('credentials'), await count('export_jobs')]
  const cases: Array<[string, unknown, string]> = [
    [
      `/api/v1/records/${created.body.id}`,
      { moduleKey: 'incident', payload: incidentPayload() },
      'GET, PATCH, DELETE, HEAD'
    ],
    ['/api/v1/records/:transition', { moduleKey: 'incident', payload: incidentPayload() }, 'GET, PATCH, DELETE, HEAD'],
    ['/api/v1/tokens/x', { type: 'api-key', name: 'smuggled' }, 'GET, DELETE, HEAD'],
    ['/api/v1/exports/x', { moduleKey: 'incident', format: 'csv' }, 'GET, HEAD']
  ]
  for (const [path, body, allow] of cases) {
    const res = await server.request('POST', path, { body })
    t.equal(res.status, 405, `POST ${path}`)
    t.equal(res.body.code, 'http.method_not_allowed')
    t.equal(res.headers.get('allow'), allow)
  }
  const bare = await server.request('POST', '/api/v1/attachments/:complete', {
    raw: 'x',
    headers: { 'content-type': 'text/plain' }
  })
  t.equal(bare.status, 405, 'a colon method without an id is refused as a route, before its body is read')
  t.same(
    [await count('records'), await count('credentials'), await count('export_jobs')],
    [records, tokens, exports],
    'nothing was created'
  )
  const fired = await server.request('POST', `/api/v1/records/${created.body.id}:transition`, {
    body: { transition: 'dismiss', payload: { closureNote: 'Not an incident' } }
  })
  t.equal(fired.status, 200, 'a colon method still reaches its service')
})

t.test('PATCH and DELETE on a collection are 405 with Allow, not a change of every record', async (t) => {
  for (const method of ['PATCH', 'DELETE', 'PUT']) {
    const res = await server.request(
      method,
      '/api/v1/records',
      method === 'DELETE' ? {} : { body: { payload: { severity: 'low' } } }
    )
    t.equal(res.status, 405, `${method} /api/v1/records`)
    t.equal(res.headers.get('allow'), 'GET, POST, HEAD')
    t.match(res.body.detail, /one record at a time/)
  }
})

t.test('an API path with a trailing slash is a 404 that names the path without it', async (t) => {
  const res = await server.request('GET', '/api/v1/records/?moduleKey=incident')
  t.equal(res.status, 404)
  t.match(res.body.detail, /Paths end without a slash: \/api\/v1\/records\./)
})

/** Sends raw bytes and reads the whole answer (the server closes the connection). */
function raw(bytes: Buffer): Promise<string> {
  const url = new URL(server.url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.end(bytes))
    const chunks: Buffer[] = []
    socket.on('data', (c) => chunks.push(c))
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')))
    socket.on('error', reject)
  })
}

t.test('requests the HTTP parser refuses are answered with a problem and a trace id', async (t) => {
  const cases: Array<[string, Buffer, number, string]> = [
    [
      'a NUL in a header',
      Buffer.from('GET /api/v1/me HTTP/1.1\r\nHost: x\r\nIdempotency-Key: a\u0000b\r\n\r\n', 'latin1'),
      400,
      'request.malformed_http'
    ],
    [
      'a raw byte in the target',
      Buffer.concat([
        Buffer.from('GET /api/v1/records/'),
        Buffer.from([0xff]),
        Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')
      ]),
      400,
      'request.malformed_http'
    ],
    [
      'a head past 16 KiB',
      Buffer.from(`GET /api/v1/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`),
      431,
      'request.headers_too_large'
    ],
    [
      'a request line past 16 KiB',
      Buffer.from(`GET /api/v1/records?moduleKey=incident&cursor=${'a'.repeat(17_000)} HTTP/1.1\r\nHost: x\r\n\r\n`),
      414,
      'request.uri_too_long'
    ]
  ]
  for (const [label, bytes, status, code] of cases) {
    const answer = await raw(bytes)
    const [head, body] = answer.split('\r\n\r\n')
    t.match(head, new RegExp(`^HTTP/1.1 ${status} `), label)
    t.match(head, /Content-Type: application\/problem\+json/)
    const problem = JSON.parse(body)
    t.match(
      problem,
      {
        status,
        code,
        type: /\/errors\/(bad-request|headers-too-large|uri-too-long)$/,
        title: String,
        detail: String,
        traceId: /^[0-9a-f]{32}$/
      },
      label
    )
    t.match(head, new RegExp(`X-Trace-Id: ${problem.traceId}`))
  }
})

t.test('a verb a plugin route does not serve is 405 with Allow, as on service paths, not a 404', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['PUT', '/api/graphql/schema.graphql', 'GET, HEAD'],
    ['POST', '/api/graphql/schema.graphql', 'GET, HEAD'],
    ['DELETE', '/api/graphql/schema.graphql', 'GET, HEAD'],
    ['PUT', '/api/docs', 'GET, HEAD'],
    ['TRACE', '/api/docs', 'GET, HEAD'],
    ['POST', '/api/docs', 'GET, HEAD'],
    ['PUT', '/api/docs/postman.json', 'GET, HEAD'],
    ['TRACE', '/api/docs/postman.json', 'GET, HEAD'],
    ['PUT', '/api/docs/spec.json', 'GET, HEAD'],
    ['DELETE', '/api/docs/spec.json', 'GET, HEAD'],
    ['PUT', '/api/docs/assets/init.js', 'GET, HEAD'],
    ['TRACE', '/api/docs/assets/swagger-ui.css', 'GET, HEAD']
  ]
  for (const [method, path, allow] of cases) {
    const res = await send(method, path, method === 'TRACE' || method === 'DELETE' ? undefined : '{}')
    t.equal(res.status, 405, `${method} ${path}`)
    t.equal(res.headers.allow, allow, `${method} ${path}: Allow`)
    t.equal(JSON.parse(res.body).code, 'http.method_not_allowed')
  }
  for (const path of [
    '/api/graphql/schema.graphql',
    '/api/docs',
    '/api/docs/postman.json',
    '/api/docs/spec.json',
    '/api/docs/assets/init.js'
  ]) {
    t.equal((await server.request('GET', path)).status, 200, `GET ${path} is still served`)
  }
  t.equal(
    (await server.request('GET', '/api/docs/assets/nothing.js')).status,
    404,
    'an asset that does not exist is still a 404'
  )
})

/** Any verb, TRACE included (fetch refuses it), with a bearer token and an optional JSON body. */
function send(
  method: string,
  path: string,
  body?: string
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${server.keys.acme}` }
    if (body !== undefined)
      Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) })
    const req = httpRequest(server.url + path, { method, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') })
      )
    })
    req.on('error', reject)
    req.end(body)
  })
}
