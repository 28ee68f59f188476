import t from '../helpers/tap.ts'
import { resolveLocal, type Json } from '../../core/openapi/builder.ts'
import { startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

const spec = async (token?: string | null) =>
  (await server.request('GET', '/api/docs/spec.json', { token })).body as Json
const documents = { generic: await spec(null), acme: await spec(server.keys.acme) }
const rateHeaders = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']
// A dangling $ref fails the test where it is read (undefined has no members).
const follow = (doc: Json, v: Json) => (v?.$ref ? resolveLocal(doc, v.$ref)! : v)

t.test(
  "every problem response declares the rate-limit headers, required except on a 500, and none on the HTTP parser's 414 and 431",
  async (t) => {
    for (const [name, doc] of Object.entries(documents)) {
      // The shared problem responses, and any an operation has of its own.
      const problems: Array<[string, number, Json]> = Object.entries(doc.components.responses as Json).map(
        ([key, r]) => [
          `components.responses.${key}`,
          (r as Json).content['application/problem+json'].example.status,
          r as Json
        ]
      )
      for (const [path, item] of Object.entries(doc.paths as Json))
        for (const [verb, op] of Object.entries(item as Json))
          for (const [status, r] of Object.entries((op as Json).responses ?? {}))
            if (Number(status) >= 400 && !(r as Json).$ref)
              problems.push([`${verb.toUpperCase()} ${path} ${status}`, Number(status), r as Json])
      t.ok(problems.length > 10, `${name}: ${problems.length} problem responses found`)
      const wrong = problems.flatMap(([where, status, r]) =>
        rateHeaders.flatMap((header) => {
          const h = follow(doc, r.headers?.[header])
          // Node's parser answers 414 and 431 before the limiter runs (core/http/client-errors.ts).
          if (status === 414 || status === 431) return h ? [`${where}: ${header} on a ${status}`] : []
          if (!h) return [`${where}: no ${header}`]
          return h.required === (status !== 500) ? [] : [`${where}: ${header} ${h.required ? 'required' : 'optional'}`]
        })
      )
      t.same(
        wrong,
        [],
        `${name}: rate-limit headers on problem responses (required except on a 500, which may come before the limiter; none on a 414 or 431)`
      )
    }
  }
)

t.test('problems the service sends carry the rate-limit headers, an unauthenticated 401 included', async (t) => {
  const replies = {
    'no credential (401)': await server.request('GET', '/api/v1/modules', { token: null }),
    'a bad token (401)': await server.request('GET', '/api/v1/modules', { token: 'svc_k_notatoken' }),
    'an unknown route (404)': await server.request('GET', '/api/v1/nowhere'),
    'a query that breaks its schema (400)': await server.request('GET', '/api/v1/records?moduleKey=incident&limit=0')
  }
  for (const [what, r] of Object.entries(replies)) {
    t.equal(r.status, Number(/\((\d+)\)/.exec(what)![1]), what)
    for (const header of rateHeaders) t.match(r.headers.get(header), /^\d+$/, `${what}: ${header}`)
  }
})

t.test(
  'the audit log says on both parameters and in its description that one of recordId and moduleKey is required',
  async (t) => {
    for (const [name, doc] of Object.entries(documents)) {
      const op = doc.paths['/api/v1/audit-log'].get
      t.match(op.description, /One of `recordId` or `moduleKey` is required/, `${name}: the description says so`)
      const param = (p: string) => op.parameters.find((x: Json) => x.name === p)
      for (const [p, other] of [
        ['recordId', 'moduleKey'],
        ['moduleKey', 'recordId']
      ]) {
        t.equal(param(p).required, false, `${name}: ${p} is optional by itself`)
        t.match(
          param(p).description,
          new RegExp(`This or \`${other}\` is required`),
          `${name}: ${p} names ${other} as the alternative`
        )
      }
    }
  }
)

t.test("the audit log's 400 example is the problem a call without recordId or moduleKey gets", async (t) => {
  for (const [name, doc] of Object.entries(documents)) {
    const response = follow(doc, doc.paths['/api/v1/audit-log'].get.responses['400'])
    const example = response.content['application/problem+json'].example
    const r = await server.request('GET', '/api/v1/audit-log', { token: server.keys.acme })
    t.equal(r.status, 400)
    t.same(
      { ...r.body, traceId: 'any' },
      { ...example, traceId: 'any' },
      `${name}: the documented example is what the service answers`
    )
    t.match(response.description, /Without `recordId` or `moduleKey`/, `${name}: the response description says when`)
  }
})
