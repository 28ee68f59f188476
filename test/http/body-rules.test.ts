import t from '../helpers/tap.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { errorExtensionUrn, errorUrn, oktaUser, scimToken, scimType } from '../scim/helpers.ts'

/**
 * One JSON reader (core/http/body.ts) for every path, told by the plugins what differs:
 * a body rule with its media types (SCIM), a body rule that streams (bulk), and routes a
 * plugin owns (GraphQL's endpoint, SCIM's spelling). Refusals take the path's problem format.
 */
const server = await startTestServer()
t.teardown(() => server.close())
const token = await scimToken(server, 'acme')
const scimPost = (path: string, raw: string, contentType: string) =>
  server.request('POST', `/api/scim/v2${path}`, { token, raw, headers: { 'content-type': contentType } })

t.test('a SCIM body is read by the app reader as its rule says: SCIM JSON or JSON, nothing else', async (t) => {
  t.equal((await scimPost('/Users', JSON.stringify(oktaUser('rule.scim')), scimType)).status, 201)
  t.equal((await scimPost('/Users', JSON.stringify(oktaUser('rule.json')), 'application/json')).status, 201)
  const merge = await scimPost('/Users', JSON.stringify(oktaUser('rule.merge')), 'application/merge-patch+json')
  t.equal(merge.status, 415, "the app's other JSON spellings are not SCIM's")
  t.match(merge.headers.get('content-type'), /^application\/scim\+json/)
  t.match(merge.body, {
    schemas: [errorUrn],
    status: '415',
    detail: /application\/scim\+json or application\/json/,
    [errorExtensionUrn]: { code: 'request.unsupported_media_type' }
  })
})

t.test("the reader's refusals on a SCIM path are SCIM errors: bad JSON, a body past the shape limits", async (t) => {
  const junk = await scimPost('/Users', '{"userName": ', scimType)
  t.equal(junk.status, 400)
  t.match(junk.body, {
    status: '400',
    scimType: 'invalidSyntax',
    [errorExtensionUrn]: { code: 'request.malformed_json' }
  })
  const deep = await scimPost('/Users', '['.repeat(200) + ']'.repeat(200), scimType)
  t.equal(deep.status, 400)
  t.match(deep.body, { schemas: [errorUrn], status: '400', [errorExtensionUrn]: { code: 'field.invalid' } })
})

t.test("SCIM's own spelling of a path, a trailing slash, is read and served", async (t) => {
  t.equal((await scimPost('/Users/', JSON.stringify(oktaUser('rule.slash')), scimType)).status, 201)
})

t.test('other API paths take the JSON media types and name application/json when refused', async (t) => {
  const res = await server.request('POST', '/api/v1/records', {
    raw: JSON.stringify({ moduleKey: 'incident', payload: incidentPayload() }),
    headers: { 'content-type': scimType }
  })
  t.equal(res.status, 415)
  t.match(res.headers.get('content-type'), /^application\/problem\+json/)
  t.match(res.body, { code: 'request.unsupported_media_type', detail: /^Send the body as application\/json \(got/ })
  const slash = await server.request('POST', '/api/v1/records/', { body: {} })
  t.equal(slash.status, 404, 'a trailing slash is no route here')
})

t.test('a streaming rule leaves the body unread for its service (bulk NDJSON)', async (t) => {
  const res = await bulkCall(
    server.url,
    '/api/modules/incident/bulk?dryRun=true',
    server.keys.acme,
    ndjson([{ payload: incidentPayload() }])
  )
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^application\/x-ndjson/)
})

t.test("a plugin's own route reads its own body (GraphQL) and is not refused as unrouted", async (t) => {
  const res = await server.request('POST', '/api/graphql', { body: { query: '{ __typename }' } })
  t.equal(res.status, 200)
  t.same(res.body, { data: { __typename: 'Query' } })
  const graphql = await server.request('POST', '/api/graphql', {
    raw: 'query { __typename }',
    headers: { 'content-type': 'application/graphql' }
  })
  t.equal(graphql.status, 415, 'GraphQL judges its own media types, not the app reader')
  t.match(graphql.body, { code: 'request.unsupported_media_type', detail: /^Send the GraphQL request as/ })
})
