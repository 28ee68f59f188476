import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * The wrong guesses a new user makes in the first hour, each answered with what to do
 * instead: the allowed values spelled out, the likely name suggested, the right verb or
 * path named.
 */
const server = await startTestServer()
t.teardown(() => server.close())

const created = await server.request('POST', '/api/v1/records', {
  body: { moduleKey: 'incident', payload: incidentPayload() }
})
const record = created.body as { id: string; number: string }

t.test(
  'a value outside a union of constants says "must be one of" with the values, and suggests the near one',
  async (t) => {
    const token = await server.request('POST', '/api/v1/tokens', { body: { type: 'apikey', name: 'x' } })
    t.equal(token.status, 400)
    t.equal(token.body.errors.length, 1, 'one problem for the field, not one per constant')
    t.match(token.body.errors[0], { field: 'type', code: 'enum', allowed: ['api-key', 'personal', 'service-account'] })
    t.equal(token.body.errors[0].detail, 'must be one of: api-key, personal, service-account (did you mean api-key?)')
    t.notMatch(token.body.detail, /equal to constant|anyOf/, 'no validator jargon')

    const exported = await server.request('POST', '/api/v1/exports', { body: { moduleKey: 'incident', format: 'xls' } })
    t.equal(exported.status, 400)
    t.match(exported.body.detail, /^format must be one of: csv, xlsx, pdf \(did you mean xlsx\?\)/)

    const audit = await server.request('GET', '/api/v1/audit-log?moduleKey=incident&action=removed')
    t.equal(audit.status, 400)
    t.match(audit.body.detail, /^action must be one of: created, updated, transitioned, deleted/)
    t.notMatch(audit.body.detail, /equal to constant|anyOf/)
  }
)

t.test('an unknown query parameter lists the accepted ones and suggests the one meant', async (t) => {
  const sorted = await server.request('GET', '/api/v1/records?moduleKey=incident&order=createdAt')
  t.equal(sorted.status, 400)
  t.match(sorted.body.errors[0], { field: 'order', code: 'additionalProperties' })
  t.match(
    sorted.body.errors[0].detail,
    /allowed fields: moduleKey, limit, cursor, state, createdSince, createdBefore, updatedSince, updatedBefore, overdue, sort, q, numberPrefix, createdBy, count, payload, includeDeleted, externalRef, number, id$/
  )

  const overdue = await server.request('GET', '/api/v1/records?moduleKey=incident&overdue=true')
  t.equal(overdue.status, 400)
  t.match(overdue.body.errors[0], { field: 'overdue', code: 'filter' })
  t.match(overdue.body.errors[0].detail, /module "incident" declares no due date/, 'says why the filter does not apply')

  const bulk = await server.request('POST', '/api/modules/incident/bulk?dryrun=true', {
    raw: JSON.stringify({ payload: incidentPayload() }) + '\n',
    headers: { 'content-type': 'application/x-ndjson' }
  })
  t.equal(bulk.status, 400)
  t.match(bulk.body.errors[0].detail, /^is not an accepted field; did you mean dryRun\? allowed fields: .*dryRun/)
})

t.test('GET on a colon operation is a 405 that names POST', async (t) => {
  const r = await server.request('GET', `/api/v1/records/${record.id}:transition`)
  t.equal(r.status, 405)
  t.equal(r.headers.get('allow'), 'POST')
  t.match(r.body, {
    code: 'http.method_not_allowed',
    detail: `GET is not allowed on /api/v1/records/${record.id}:transition: "transition" is an operation, called with POST /api/v1/records/${record.id}:transition.`
  })
  t.equal(
    (await server.request('PATCH', `/api/v1/attachments/${record.id}:complete`, { body: {} })).status,
    405,
    'every colon operation'
  )
})

t.test(
  'a write to a path that exists with or without /v1 is a 404 naming that path, not a 415 about the body',
  async (t) => {
    const r = await server.request('POST', '/api/v1/modules/incident/bulk', {
      raw: JSON.stringify({ payload: incidentPayload() }) + '\n',
      headers: { 'content-type': 'application/x-ndjson' }
    })
    t.equal(r.status, 404)
    t.match(r.body, {
      code: 'route.not_found',
      detail: 'No route POST /api/v1/modules/incident/bulk. Did you mean /api/modules/incident/bulk?'
    })
    const unversioned = await server.request('GET', '/api/records?moduleKey=incident')
    t.equal(unversioned.status, 404)
    t.match(unversioned.body.detail, /Did you mean \/api\/v1\/records\?/)
    const nowhere = await server.request('POST', '/api/v1/nowhere', { body: {} })
    t.equal(nowhere.status, 404)
    t.equal(nowhere.body.detail, 'No route POST /api/v1/nowhere.', 'no guess when nothing is near')
  }
)

t.test('PATCH with a state says that states change through :transition', async (t) => {
  const r = await server.request('PATCH', `/api/v1/records/${record.id}`, { body: { state: 'closed' } })
  t.equal(r.status, 400)
  t.match(r.body.errors[0], { field: 'state' })
  t.match(r.body.detail, `POST /api/v1/records/${record.id}:transition`)
  t.match(r.body.detail, /availableTransitions/)
  t.equal((await server.request('GET', `/api/v1/records/${record.id}`)).body.version, 1, 'nothing changed')
})

t.test('a record number in place of an id points to the number filter, which finds the record', async (t) => {
  t.match(record.number, /^INC-\d{4}-\d{5}$/)
  const r = await server.request('GET', `/api/v1/records/${record.number}`)
  t.equal(r.status, 404)
  t.match(r.body.detail, `${record.number} is a record number, not a record id`)
  const find = /GET (\/api\/v1\/records\?moduleKey=incident&number=[^ ]+) /.exec(r.body.detail)?.[1]
  t.ok(find, 'names the query that finds it')
  const found = await server.request('GET', find!)
  t.equal(found.status, 200)
  t.same(
    found.body.items.map((i: { id: string }) => i.id),
    [record.id],
    'the query finds exactly that record'
  )
  t.notMatch(r.body.detail, /audit-log\?recordId=INC/, 'no audit-log query that would reject the number')

  const other = await server.request('GET', '/api/v1/records/not-a-number')
  t.equal(other.status, 404)
  t.match(other.body.detail, /record ids are UUIDs/)
  const none = await server.request('GET', '/api/v1/records?moduleKey=incident&number=INC-1999-99999')
  t.same(none.body.items, [], 'an unknown number finds nothing')
  const otherTenant = Object.keys(server.keys).find((k) => k !== 'acme')!
  const elsewhere = await server.request('GET', `/api/v1/records?moduleKey=incident&number=${record.number}`, {
    token: server.keys[otherTenant]
  })
  t.equal(elsewhere.status, 200)
  t.same(elsewhere.body.items, [], "another tenant's number finds nothing (numbers are per tenant)")
})

t.test('GET / sends a browser to the records workspace and tells any other client where the API is', async (t) => {
  const browser = await fetch(`${server.url}/`, {
    redirect: 'manual',
    headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }
  })
  t.equal(browser.status, 302)
  t.equal(browser.headers.get('location'), '/records', 'the workspace (which sends a visitor to sign in first)')
  const client = await server.request('GET', '/', { token: null })
  t.equal(client.status, 404)
  t.match(client.headers.get('content-type'), /^application\/problem\+json/)
  t.match(client.body.detail, /The API is under \/api\/v1 .*\/api\/docs\/spec\.json .*\/api\/docs\./)
  const curlDefault = await fetch(`${server.url}/`, { redirect: 'manual', headers: { accept: '*/*' } })
  t.equal(curlDefault.status, 404, 'curl (Accept: */*) gets the JSON answer, not a redirect')
})
