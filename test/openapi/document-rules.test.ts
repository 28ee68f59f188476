import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'

/**
 * What the document must say for every operation, checked over the generic and a tenant
 * document as the service serves them: the answers no operation can avoid, examples that
 * work one after another in "Try it out", and example objects that are complete.
 */
const server = await startTestServer()
t.teardown(() => server.close())

const generic = (await server.request('GET', '/api/docs/spec.json', { token: null })).body
const acme = (await server.request('GET', '/api/docs/spec.json', { token: server.keys.acme })).body
const documents = [
  ['generic', generic],
  ['acme', acme]
] as const
const verbs = ['get', 'put', 'post', 'patch', 'delete', 'head', 'options', 'trace']

function operationsOf(doc: any): Array<{ key: string; op: any; item: any }> {
  return Object.entries<any>(doc.paths).flatMap(([path, item]) =>
    verbs.filter((v) => item[v]).map((v) => ({ key: `${v.toUpperCase()} ${path}`, op: item[v], item }))
  )
}

const resolve = (doc: any, value: any): any => {
  if (!value?.$ref) return value
  return value.$ref
    .slice(2)
    .split('/')
    .reduce((at: any, part: string) => at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc)
}

t.test('every operation documents 431, the answer to a request head past 16 KiB', async (t) => {
  for (const [name, doc] of documents) {
    const missing = operationsOf(doc)
      .filter(({ op }) => !op.responses['431'])
      .map(({ key }) => key)
    t.same(missing, [], `${name}: no operation lacks 431`)
    const response = resolve(doc, operationsOf(doc)[0].op.responses['431'])
    t.match(response?.description, /16 KiB/, `${name}: the response says why`)
    t.ok(response?.content?.['application/problem+json'], `${name}: a problem`)
    t.notOk(
      response?.headers?.['X-RateLimit-Limit'],
      `${name}: without the rate-limit headers, which the HTTP parser's answer does not carry`
    )
  }
  // As the service answers it (before any middleware runs).
  const res = await fetch(`${server.url}/api/v1/me`, {
    headers: { authorization: `Bearer ${server.keys.acme}`, 'x-big': 'a'.repeat(17_000) }
  })
  t.equal(res.status, 431)
  t.match(res.headers.get('content-type'), /^application\/problem\+json/)
  t.equal((await res.json()).code, 'request.headers_too_large')
})

t.test('each operation that takes an Idempotency-Key has an example key of its own', async (t) => {
  for (const [name, doc] of documents) {
    const keys = operationsOf(doc).flatMap(({ key, op }) =>
      (op.parameters ?? [])
        .map((p: any) => resolve(doc, p))
        .filter((p: any) => p.in === 'header' && p.name === 'Idempotency-Key')
        .map((p: any) => [key, p.example] as const)
    )
    t.ok(keys.length > 3, `${name}: several operations take one`)
    for (const [key, example] of keys) t.type(example, 'string', `${name}: ${key} has an example`)
    t.equal(new Set(keys.map(([, e]) => e)).size, keys.length, `${name}: no two operations share an example key`)
  }
})

t.test('every named example of a parameter has a value', async (t) => {
  for (const [name, doc] of documents) {
    const bare = operationsOf(doc).flatMap(({ key, op, item }) =>
      [...(item.parameters ?? []), ...(op.parameters ?? [])]
        .map((p: any) => resolve(doc, p))
        .flatMap((p: any) =>
          Object.entries<any>(p.examples ?? {})
            .filter(([, e]) => !('value' in resolve(doc, e)) && !('externalValue' in resolve(doc, e)))
            .map(([k]) => `${key} ${p.name} examples.${k}`)
        )
    )
    t.same(bare, [], `${name}: none without value`)
  }
})

t.test('the token schema says expiresAt must be in the future, as the service holds it', async (t) => {
  const past = await server.request('POST', '/api/v1/tokens', {
    body: { type: 'personal', name: 'past', expiresAt: '2020-01-01T00:00:00Z' }
  })
  t.equal(past.status, 400)
  t.match(past.body.errors, [{ field: 'expiresAt', code: 'future' }])
  for (const [name, doc] of documents) {
    const create = doc.paths['/api/v1/tokens'].post.requestBody.content['application/json'].schema
    const expiresAt = resolve(doc, create).properties.expiresAt
    t.match(expiresAt.description, /in the future/, `${name}: TokenCreate.expiresAt says so`)
  }
})

t.test('every JSON request body says what no string, number or structure in it may be', async (t) => {
  const nul = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: { title: 'a\u0000b' } }
  })
  t.equal(nul.status, 400, 'a NUL in a string is refused')
  t.equal(nul.body.code, 'field.invalid')
  for (const [name, doc] of documents) {
    const bodies = operationsOf(doc).filter(({ op }) =>
      Object.keys(op.requestBody?.content ?? {}).some((type) => /json/.test(type))
    )
    t.ok(bodies.length > 5, `${name}: ${bodies.length} operations take JSON`)
    const silent = bodies
      .filter(
        ({ op }) => !/NUL/.test(op.requestBody.description ?? '') || !/surrogate/.test(op.requestBody.description ?? '')
      )
      .map(({ key }) => key)
    t.same(silent, [], `${name}: each says no string may hold NUL or a lone surrogate`)
  }
})
