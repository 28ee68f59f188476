import { Readable } from 'node:stream'
import { text } from 'node:stream/consumers'
import t from '../helpers/tap.ts'
import { ContractChecker, type Violation } from '../../core/openapi/contract.ts'

const problem = { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } }
const doc = {
  openapi: '3.1.0',
  info: { title: 't', version: '1' },
  paths: {
    '/api/things/{id}': {
      get: {
        responses: {
          200: {
            description: 'ok',
            headers: { ETag: { $ref: '#/components/headers/ETag' } },
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } }
          },
          404: { $ref: '#/components/responses/NotFound' }
        }
      }
    },
    '/api/things/{id}:poke': { post: { responses: { 204: { description: 'poked' } } } },
    '/api/things/feed': {
      post: {
        responses: {
          200: {
            description: 'lines',
            content: {
              'application/x-ndjson': {
                schema: { type: 'object', required: ['row'], properties: { row: { type: 'integer' } } }
              }
            }
          }
        }
      }
    }
  },
  components: {
    schemas: {
      Thing: {
        type: 'object',
        required: ['id', 'at'],
        properties: { id: { type: 'string' }, at: { type: 'string', format: 'date-time' } },
        additionalProperties: false
      },
      Problem: {
        type: 'object',
        required: ['status', 'code'],
        properties: { status: { type: 'integer' }, code: { type: 'string' } }
      }
    },
    headers: { ETag: { required: true, schema: { type: 'string' } } },
    responses: { NotFound: { description: 'nf', content: problem } }
  }
}

const checker = new ContractChecker()
const late: Violation[] = []
const check = (r: {
  method?: string
  path: string
  status: number
  contentType?: string
  headers?: Record<string, string>
  body?: unknown
}) =>
  checker.check(
    doc,
    { method: r.method ?? 'GET', contentType: 'application/json', headers: {}, body: undefined, ...r },
    (v) => late.push(v)
  )
const messages = (r: ReturnType<typeof check>) => r.violations.map((v) => v.message)

t.test('a response that matches its operation passes', async (t) => {
  t.same(
    messages(
      check({
        path: '/api/things/a1',
        status: 200,
        headers: { etag: '"1"' },
        body: { id: 'a1', at: '2026-11-22T08:00:00Z' }
      })
    ),
    []
  )
  t.same(
    messages(
      check({
        path: '/api/things/a1',
        status: 404,
        contentType: 'application/problem+json',
        body: { status: 404, code: 'thing.not_found' }
      })
    ),
    []
  )
  t.same(
    messages(check({ method: 'POST', path: '/api/things/a1:poke', status: 204 })),
    [],
    'an {id}:operation path is its own operation'
  )
})

t.test('an undocumented status, path or method is a violation', async (t) => {
  t.match(messages(check({ path: '/api/things/a1', status: 409, body: { status: 409, code: 'x' } })), [
    /does not document status 409/
  ])
  t.match(messages(check({ method: 'POST', path: '/api/things/a1:zap', status: 200 })), [
    /no path of the document matches/
  ])
  t.same(
    messages(
      check({
        path: '/api/nowhere',
        status: 404,
        contentType: 'application/problem+json',
        body: { status: 404, code: 'route.not_found' }
      })
    ),
    [],
    'an unknown route may answer a 404 problem'
  )
})

t.test('a body, content type or required header that breaks the document is a violation', async (t) => {
  t.match(
    messages(
      check({ path: '/api/things/a1', status: 200, headers: { etag: '"1"' }, body: { id: 'a1', at: 'yesterday' } })
    ),
    [/the body breaks .*format/]
  )
  t.match(
    messages(
      check({
        path: '/api/things/a1',
        status: 200,
        headers: { etag: '"1"' },
        body: { id: 'a1', at: '2026-11-22T08:00:00Z', extra: 1 }
      })
    ),
    [/additionalProperties/]
  )
  t.match(
    messages(
      check({ path: '/api/things/a1', status: 200, contentType: 'text/html', headers: { etag: '"1"' }, body: '<p>' })
    ),
    [/content type text\/html is not documented/]
  )
  t.match(messages(check({ path: '/api/things/a1', status: 200, body: { id: 'a1', at: '2026-11-22T08:00:00Z' } })), [
    /required header\(s\) ETag missing/
  ])
  t.match(messages(check({ method: 'POST', path: '/api/things/a1:poke', status: 204, body: { unexpected: true } })), [
    /documents no body/
  ])
  t.match(
    messages(check({ path: '/api/things/a1', status: 404, body: { status: 404, code: 'x' } })),
    [/content type application\/json is not documented/],
    'a problem must be application/problem+json'
  )
})

t.test('each line of an NDJSON stream is checked as it passes, and the stream is unchanged', async (t) => {
  late.length = 0
  const lines = '{"row":1}\n{"row":"two"}\nnot json\n{"row":4}'
  const r = check({
    method: 'POST',
    path: '/api/things/feed',
    status: 200,
    contentType: 'application/x-ndjson',
    body: Readable.from([Buffer.from(lines.slice(0, 7)), Buffer.from(lines.slice(7))])
  })
  t.same(r.violations, [])
  t.equal(await text(r.body as Readable), lines)
  t.match(
    late.map((v) => v.message),
    [/^NDJSON line 2 breaks #\/paths\/~1api~1things~1feed/, /^NDJSON line 3 is not JSON/]
  )
  t.equal(late.length, 2)
})
