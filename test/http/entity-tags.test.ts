import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'
import { parseEntityTags } from '../../core/http/entity-tag.ts'
import { errorExtensionUrn, oktaUser, patchUrn, scim, scimToken } from '../scim/helpers.ts'

/**
 * If-Match and If-None-Match on every route that takes them, read by one parser
 * (core/http/entity-tag.ts). The odd forms are the ones that used to differ between routes:
 * `W/` on a record change, an unquoted version, a list, `*`, a comma inside a tag.
 */
const server = await startTestServer()
t.teardown(() => server.close())

async function incident(): Promise<{ id: string }> {
  const res = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload() }
  })
  if (res.status !== 201) throw new Error(`setup: create answered ${res.status} ${res.text}`)
  return res.body
}

const patchRecord = (id: string, ifMatch: string, site = 'York') =>
  server.request('PATCH', `/api/v1/records/${id}`, {
    body: { payload: { site } },
    headers: { 'if-match': ifMatch }
  })

t.test('parses entity-tag lists as RFC 9110 writes them, and nothing else', async (t) => {
  t.same(parseEntityTags('"1"'), [{ weak: false, opaque: '"1"' }])
  t.same(parseEntityTags(' W/"1" ,, "a,b"'), [
    { weak: true, opaque: '"1"' },
    { weak: false, opaque: '"a,b"' }
  ])
  t.equal(parseEntityTags(' * '), '*')
  for (const bad of ['1', '"1', 'w/"1"', '*, "1"', '"1" "2"', '"a b"', '', ','])
    t.equal(parseEntityTags(bad), undefined, JSON.stringify(bad))
})

t.test('a record change passes If-Match on its ETag, alone, in a list or as *', async (t) => {
  const r = await incident()
  t.equal((await patchRecord(r.id, '"1"')).status, 200, 'the ETag as sent')
  t.equal((await patchRecord(r.id, '"9", "2"', 'Leeds')).status, 200, 'a list naming the current version')
  t.equal((await patchRecord(r.id, '"x,y" , "3"', 'Hull')).status, 200, 'a comma inside another tag')
  const any = await patchRecord(r.id, '*', 'Bath')
  t.equal(any.status, 200, '* passes on a record that exists')
  t.equal(any.headers.get('etag'), '"5"')
})

t.test('a weak tag never passes If-Match on a record change: 412 (it used to pass)', async (t) => {
  const r = await incident()
  const res = await patchRecord(r.id, 'W/"1"')
  t.equal(res.status, 412)
  t.match(res.headers.get('content-type'), /^application\/problem\+json/)
  t.match(res.body, { code: 'record.version_mismatch', currentVersion: 1, detail: /weak tag/ })
  const removed = await server.request('DELETE', `/api/v1/records/${r.id}`, { headers: { 'if-match': 'W/"1"' } })
  t.equal(removed.status, 412, 'DELETE compares strongly too')
})

t.test(
  'an If-Match that is no entity-tag list is 400 on every record change (it used to pass or be 412)',
  async (t) => {
    const r = await incident()
    const cases: Array<[string, () => Promise<Reply>]> = [
      ['PATCH 1', () => patchRecord(r.id, '1')],
      ['PATCH *, "1"', () => patchRecord(r.id, '*, "1"')],
      [
        'transition "1',
        () =>
          server.request('POST', `/api/v1/records/${r.id}:transition`, {
            body: { transition: 'dismiss', payload: { closureNote: 'x' } },
            headers: { 'if-match': '"1' }
          })
      ],
      ['DELETE 1', () => server.request('DELETE', `/api/v1/records/${r.id}`, { headers: { 'if-match': '1' } })]
    ]
    for (const [label, send] of cases) {
      const res = await send()
      t.equal(res.status, 400, label)
      t.match(res.headers.get('content-type'), /^application\/problem\+json/, label)
      t.match(res.body, { code: 'request.malformed_if_match', detail: /quotes included/ }, label)
    }
    t.equal((await server.request('GET', `/api/v1/records/${r.id}`)).body.version, 1, 'nothing changed')
  }
)

t.test('a transition and a delete take If-Match as a patch does', async (t) => {
  const r = await incident()
  const fired = await server.request('POST', `/api/v1/records/${r.id}:transition`, {
    body: { transition: 'dismiss', payload: { closureNote: 'Not work related' } },
    headers: { 'if-match': '"0", "1"' }
  })
  t.equal(fired.status, 200)
  t.equal(fired.headers.get('etag'), '"2"')
  const stale = await server.request('DELETE', `/api/v1/records/${r.id}`, { headers: { 'if-match': '"1"' } })
  t.equal(stale.status, 412)
  const removed = await server.request('DELETE', `/api/v1/records/${r.id}`, { headers: { 'if-match': '*' } })
  t.equal(removed.status, 200)
})

t.test('If-Match on a record that does not exist is 404, not 412 (RFC 9110 §13.2.2)', async (t) => {
  const res = await patchRecord('00000000-0000-4000-8000-000000000000', '*')
  t.equal(res.status, 404)
})

t.test('SCIM compares If-Match weakly: its own W/ ETag, the same tag strong, lists and *', async (t) => {
  const s = scim(server, await scimToken(server, 'acme'))
  const created = await s('POST', '/Users', oktaUser('etag.tags'))
  t.equal(created.headers.get('etag'), 'W/"1"')
  const id = created.body.id
  const rename = (ifMatch: string, value: string) =>
    s(
      'PATCH',
      `/Users/${id}`,
      { schemas: [patchUrn], Operations: [{ op: 'replace', path: 'displayName', value }] },
      { 'if-match': ifMatch }
    )
  t.equal((await rename('W/"1"', 'A')).status, 204, 'the weak ETag as sent')
  t.equal((await rename('"2"', 'B')).status, 204, 'the same tag sent strong')
  t.equal((await rename('W/"9", W/"3"', 'C')).status, 204, 'a list')
  t.equal((await rename('W/"3"', 'D')).status, 412, 'a stale one')
  const malformed = await rename('4', 'E')
  t.equal(malformed.status, 400, 'an unquoted version is 400 (it used to be 412)')
  t.match(malformed.headers.get('content-type'), /^application\/scim\+json/)
  t.match(malformed.body, { status: '400', [errorExtensionUrn]: { code: 'request.malformed_if_match' } })
  t.equal((await s('DELETE', `/Users/${id}`, undefined, { 'if-match': '*' })).status, 204)
})

/** The routes that answer 304 to If-None-Match, each with a URL and the ETag of a first GET. */
async function conditionalRoutes(): Promise<Array<{ path: string; etag: string }>> {
  const paths = [
    '/api/docs/spec.json',
    '/api/graphql/schema.graphql',
    '/api/docs/assets/init.js',
    '/settings/graphql/assets/console.js'
  ]
  const routes = []
  for (const path of paths) {
    const res = await server.request('GET', path)
    if (res.status !== 200) throw new Error(`setup: ${path} answered ${res.status}`)
    routes.push({ path, etag: res.headers.get('etag')! })
  }
  return routes
}

t.test('If-None-Match is 304 on each conditional GET for its ETag, weak or strong, in a list, or *', async (t) => {
  for (const { path, etag } of await conditionalRoutes()) {
    const status = async (inm: string, headers: Record<string, string> = {}) =>
      (await server.request('GET', path, { headers: { 'if-none-match': inm, ...headers } })).status
    t.equal(await status(etag), 304, `${path}: the ETag`)
    t.equal(await status(`W/${etag}`), 304, `${path}: the ETag as weak (exact match only, before, on two routes)`)
    t.equal(await status(`"other", ${etag}`), 304, `${path}: in a list`)
    t.equal(await status('*'), 304, `${path}: *`)
    t.equal(await status(etag, { 'cache-control': 'no-cache' }), 304, `${path}: as fetch() revalidates`)
    t.equal(await status('"other"'), 200, `${path}: another tag`)
    t.equal(await status(etag.slice(1, -1)), 200, `${path}: unquoted is malformed, ignored: the answer in full`)
  }
})
