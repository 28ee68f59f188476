import t, { type Test } from '../helpers/tap.ts'
import { userWithToken } from '../helpers/identity.ts'
import { incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'

/**
 * Each list filter is written once (records.filters.ts) and yields both its SQL condition and its
 * entry in the cursor scope: a cursor opens only under the filters it was issued with, whichever
 * filter differs, and the scope is the one cursors were sealed with before, so those still open.
 */
const server = await startTestServer()
t.teardown(() => server.close())
const reporter = await userWithToken(server, 'acme', ['reporter'])

const made: Array<{ id: string; number: string }> = []
for (let i = 0; i < 4; i++) {
  const res = await server.request('POST', '/api/v1/records', {
    token: reporter.token,
    body: { moduleKey: 'incident', payload: incidentPayload({ severity: 'high' }), externalRef: `F-${i}` }
  })
  if (res.status !== 201) throw new Error(`setup: create answered ${res.status} ${res.text}`)
  made.push(res.body)
}

const list = (query: string, token?: string): Promise<Reply> =>
  server.request('GET', `/api/v1/records?moduleKey=incident&limit=1&${query}`, { token })

function refused(t: Test, res: Reply, label: string) {
  t.equal(res.status, 400, label)
  t.equal(res.body.code, 'cursor.invalid', label)
}

/** Each filter, as a query string; a cursor of the base list must not open under any of them. */
const filters: Record<string, string> = {
  includeDeleted: 'includeDeleted=true',
  state: 'state=reported',
  id: `id=${made[0].id}`,
  externalRef: 'externalRef=F-1',
  number: `number=${made[2].number}`,
  updatedSince: 'updatedSince=2000-01-01T00:00:00Z',
  updatedBefore: 'updatedBefore=2999-01-01T00:00:00Z',
  createdSince: 'createdSince=2000-01-01T00:00:00Z',
  createdBefore: 'createdBefore=2999-01-01T00:00:00Z',
  payload: 'payload[severity]=high'
}

t.test('a cursor is refused under each filter it was not issued with, the row rule included', async (t) => {
  const base = await list('')
  const cursor = encodeURIComponent(base.body.nextCursor)
  t.equal((await list(`cursor=${cursor}`)).status, 200, 'the same filters: the next page')
  for (const [name, query] of Object.entries(filters)) refused(t, await list(`${query}&cursor=${cursor}`), name)
  refused(t, await list(`cursor=${cursor}`, reporter.token), 'a caller under a row rule')
})

t.test('a cursor issued under a filter is refused without it or with another value', async (t) => {
  const pairs: Array<[string, string, string]> = [
    ['state', 'state=reported', 'state=closed'],
    ['updatedSince', filters.updatedSince, 'updatedSince=2001-01-01T00:00:00Z'],
    ['payload', filters.payload, 'payload[severity]=low'],
    ['includeDeleted', filters.includeDeleted, '']
  ]
  for (const [name, query, other] of pairs) {
    const first = await list(query)
    const cursor = encodeURIComponent(first.body.nextCursor)
    t.equal((await list(`${query}&cursor=${cursor}`)).status, 200, `${name}: the same filter pages on`)
    refused(t, await list(`cursor=${cursor}`), `${name}: without it`)
    refused(t, await list(`${other}&cursor=${cursor}`), `${name}: another value`)
  }
  const own = await list('', reporter.token)
  refused(
    t,
    await list(`cursor=${encodeURIComponent(own.body.nextCursor)}`),
    'row rule: a cursor of the rule, without it'
  )
})

t.test('the cursor scope is the one written before the table, so cursors issued before still open', async (t) => {
  const cursors = server.platform.cursors
  const page = await list(`state=reported&externalRef=F-1&includeDeleted=true&payload[severity]=high`)
  t.equal(page.body.nextCursor, null, 'one record')
  const paged = await list('includeDeleted=true&state=reported&payload[severity]=high')
  const scope = JSON.stringify([
    'acme',
    'incident',
    'includeDeleted',
    ['state', ['reported']],
    ['payload', 'severity', 'high']
  ])
  t.doesNotThrow(() => cursors.decode(paged.body.nextCursor, scope), 'opens under the scope as it was written')
  const own = await list('updatedSince=2000-01-01T00:00:00Z', reporter.token)
  const rule = JSON.stringify([
    'acme',
    'incident',
    ['row', JSON.stringify([{ createdBy: 'self' }]), [reporter.id]],
    ['updatedSince', '2000-01-01T00:00:00Z']
  ])
  t.doesNotThrow(() => cursors.decode(own.body.nextCursor, rule), 'the row rule and updatedSince, as before')
})
