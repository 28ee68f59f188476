import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * Created and updated date ranges, half-open (since ≤ t < before), from one table (dateFilterProperties) for REST's
 * query, GraphQL's arguments and an export's filters: the same records on each, a cursor that keeps its range, a
 * clear 400 for a date that is not one.
 */
const server = await startTestServer()
t.teardown(() => server.close())

// Four incidents created on the first day of four months, the last changed in May.
const days = ['2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z', '2026-03-01T00:00:00Z', '2026-04-01T00:00:00Z']
const ids: string[] = []
for (const day of days) {
  const res = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload({ title: `Made ${day}` }) }
  })
  if (res.status !== 201) throw new Error(`setup: ${res.status} ${res.text}`)
  ids.push(res.body.id)
  await server.platform.db.system.query('UPDATE records SET created_at = $2, updated_at = $2 WHERE id = $1', [
    res.body.id,
    day
  ])
}
await server.platform.db.system.query("UPDATE records SET updated_at = '2026-05-01T00:00:00Z' WHERE id = $1", [ids[3]])

const listed = async (query: string) => {
  const res = await server.request('GET', `/api/v1/records?moduleKey=incident&${query}`)
  if (res.status !== 200) throw new Error(`${query}: ${res.status} ${res.text}`)
  return res.body.items.map((r: { id: string }) => ids.indexOf(r.id)).filter((i: number) => i >= 0)
}

t.test('REST lists the records created or changed in a half-open range', async (t) => {
  t.same(await listed('createdSince=2026-02-01T00:00:00Z'), [1, 2, 3], 'since is inclusive')
  t.same(await listed('createdBefore=2026-03-01T00:00:00Z'), [0, 1], 'before is exclusive')
  t.same(await listed('createdSince=2026-02-01T00:00:00Z&createdBefore=2026-04-01T00:00:00Z'), [1, 2])
  t.same(await listed('updatedBefore=2026-04-15T00:00:00Z'), [0, 1, 2], 'the one changed in May is left out')
  t.same(await listed('updatedSince=2026-03-01T00:00:00Z'), [2, 3], 'oldest change first')
  t.same(await listed('createdSince=2026-05-01T00:00:00Z'), [], 'an empty range')
})

t.test('a cursor pages within its range and opens under no other', async (t) => {
  const first = await server.request(
    'GET',
    '/api/v1/records?moduleKey=incident&limit=1&createdSince=2026-02-01T00:00:00Z&createdBefore=2026-04-01T00:00:00Z'
  )
  t.equal(first.body.items[0].id, ids[1])
  const next = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&limit=1&createdSince=2026-02-01T00:00:00Z&createdBefore=2026-04-01T00:00:00Z&cursor=${encodeURIComponent(first.body.nextCursor)}`
  )
  t.equal(next.body.items[0].id, ids[2])
  t.equal(next.body.nextCursor, null, 'the range ends there')
  const other = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&limit=1&createdSince=2026-01-01T00:00:00Z&cursor=${encodeURIComponent(first.body.nextCursor)}`
  )
  t.equal(other.status, 400)
  t.equal(other.body.code, 'cursor.invalid')
})

t.test('a date that is not a date-time is a 400 naming the parameter, on REST, GraphQL and exports', async (t) => {
  const rest = await server.request('GET', '/api/v1/records?moduleKey=incident&createdBefore=last-week')
  t.equal(rest.status, 400)
  t.match(rest.text, /createdBefore/)
  const gql = await server.request('POST', '/api/graphql', {
    body: { query: '{ incidents(createdBefore: "last-week") { nodes { id } } }' }
  })
  t.ok(gql.body.errors?.length, 'GraphQL refuses it')
  const exp = await server.request('POST', '/api/v1/exports', {
    body: { moduleKey: 'incident', format: 'csv', filters: { createdBefore: 'last-week' } }
  })
  t.equal(exp.status, 400)
  t.match(exp.text, /createdBefore/)
})

t.test('GraphQL takes the same ranges and lists the same records', async (t) => {
  const gql = await server.request('POST', '/api/graphql', {
    body: {
      query:
        '{ incidents(first: 50, createdSince: "2026-02-01T00:00:00Z", createdBefore: "2026-04-01T00:00:00Z") { nodes { id } } }'
    }
  })
  t.notOk(gql.body.errors, JSON.stringify(gql.body.errors))
  t.same(
    gql.body.data.incidents.nodes.map((n: { id: string }) => ids.indexOf(n.id)),
    [1, 2]
  )
  const changed = await server.request('POST', '/api/graphql', {
    body: { query: '{ incidents(first: 50, updatedBefore: "2026-04-15T00:00:00Z") { nodes { id } } }' }
  })
  t.same(
    changed.body.data.incidents.nodes.map((n: { id: string }) => ids.indexOf(n.id)).filter((i: number) => i >= 0),
    [0, 1, 2]
  )
})

t.test('an export takes the range as a filter', async (t) => {
  const exp = await server.request('POST', '/api/v1/exports', {
    body: { moduleKey: 'incident', format: 'csv', filters: { createdSince: '2026-02-01T00:00:00Z' } }
  })
  t.equal(exp.status, 202, exp.text)
  t.match(exp.body.filters, { createdSince: '2026-02-01T00:00:00Z' })
})
