import pg from 'pg'
import t from '../helpers/tap.ts'
import { userWithToken } from '../helpers/identity.ts'
import { incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'
import { declaredIndexes, installedModules } from '../../plugins/records/records.indexes.ts'

/**
 * `createdBy=<user id>|me`: the records one person created (the workspace's "records I reported"), from the same table
 * (findProperties) for REST's query, GraphQL's arguments and an export's filters; combined with the other filters, bound
 * into the cursor, and served by the platform's creator index, which a reporter's row rule reads too.
 */
const server = await startTestServer()
t.teardown(() => server.close())

const ann = await userWithToken(server, 'acme', ['reporter'])
const bob = await userWithToken(server, 'acme', ['reporter'])
// A safety manager who administers the tenant, so may make a service account that acts on her behalf.
const meg = await userWithToken(server, 'acme', ['safety-manager', 'admin'])
const gus = await userWithToken(server, 'globex', ['reporter'])

async function report(token: string, title: string) {
  const res = await server.request('POST', '/api/v1/records', {
    token,
    body: { moduleKey: 'incident', payload: incidentPayload({ title }) }
  })
  if (res.status !== 201) throw new Error(`setup: ${res.status} ${res.text}`)
  return res.body.id as string
}

const annIds = [
  await report(ann.token, 'Spill by the loading bay'),
  await report(ann.token, 'Forklift near miss'),
  await report(ann.token, 'Spill in aisle 4')
]
const bobIds = [await report(bob.token, 'Spill at the gate'), await report(bob.token, 'Trip on a cable')]
const megIds = [await report(meg.token, 'Spill reported by the manager')]
await report(gus.token, 'Globex spill')
// The tenant's API key reports one too: a record of a credential with no user behind it.
const keyId = await report(server.keys.acme, 'Spill logged by the integration')

const robot = await server.request('POST', '/api/v1/tokens', {
  token: meg.token,
  body: {
    type: 'service-account',
    name: 'Meg robot',
    roles: ['safety-manager'],
    scopes: ['records:read:incident', 'records:write:incident']
  }
})
if (robot.status !== 201) throw new Error(`setup: ${robot.status} ${robot.text}`)
const robotIds = [await report(robot.body.token, 'Spill from the sensor feed')]

/** The ids a list returns, in order; throws on anything but 200. */
async function listed(query: string, token: string = server.keys.acme): Promise<string[]> {
  const res = await server.request('GET', `/api/v1/records?moduleKey=incident&${query}`, { token })
  if (res.status !== 200) throw new Error(`${query}: ${res.status} ${res.text}`)
  return res.body.items.map((r: { id: string }) => r.id)
}

t.test('lists the records a user created, by their id in any case', async (t) => {
  t.same(await listed(`createdBy=${ann.id}`), annIds, "Ann's three, in creation order")
  t.same(await listed(`createdBy=${bob.id.toUpperCase()}`), bobIds, 'an id in capitals is the same id')
  t.same(await listed('createdBy=00000000-0000-4000-8000-000000000000'), [], 'nobody: none')
  const res = await server.request('GET', `/api/v1/records?moduleKey=incident&createdBy=${ann.id}&count=true`)
  t.same(res.body.count, { value: 3, exact: true }, 'the count is of the filtered list')
  t.ok(
    res.body.items.every((r: { createdBy: { id: string } }) => r.createdBy.id === ann.id),
    'each names Ann as its creator'
  )
})

t.test('me is the caller’s own user, through a personal token', async (t) => {
  t.same(await listed('createdBy=me', ann.token), annIds)
  t.same(await listed('createdBy=me', meg.token), megIds, 'a safety manager’s own among all she may read')
})

t.test('a token with no user behind it may not say me, and a value that is not an id is refused', async (t) => {
  for (const [token, who] of [
    [server.keys.acme, 'an API key'],
    [robot.body.token, 'a service account acting for Meg']
  ] as const) {
    const res = await server.request('GET', '/api/v1/records?moduleKey=incident&createdBy=me', { token })
    t.equal(res.status, 400, who)
    t.match(res.body, {
      code: 'field.invalid',
      errors: [{ pointer: '/createdBy', field: 'createdBy', detail: /no user behind it/ }]
    })
  }
  for (const value of ['ann', 'ME', `${ann.id},${bob.id}`, `urn:uuid:${ann.id}`]) {
    const res = await server.request('GET', `/api/v1/records?moduleKey=incident&createdBy=${encodeURIComponent(value)}`)
    t.equal(res.status, 400, value)
    t.match(res.body, {
      code: 'field.invalid',
      errors: [{ pointer: '/createdBy', code: 'format', detail: /user id \(UUID\) or "me"/ }]
    })
  }
  const empty = await server.request('GET', '/api/v1/records?moduleKey=incident&createdBy=')
  t.equal(empty.status, 400, 'an empty value')
  t.match(empty.body.errors, [{ pointer: '/createdBy' }])
})

t.test('a record a service account made is its own, not the person’s it acts for', async (t) => {
  t.same(await listed(`createdBy=${meg.id}`), megIds, 'not among Meg’s')
  t.same(await listed(`createdBy=${robot.body.id}`), robotIds, 'but under the service account’s id')
  const key = (await server.request('GET', `/api/v1/records/${keyId}`)).body.createdBy
  t.match(key, { type: 'api-key' })
  t.same(await listed(`createdBy=${key.id}`), [keyId], 'and an API key’s under its own')
})

t.test('combines with state, search, sort and the other filters', async (t) => {
  const moved = await server.request('POST', `/api/v1/records/${annIds[2]}:transition`, {
    body: { transition: 'start-investigation', payload: { investigationLead: meg.id } }
  })
  t.equal(moved.status, 200, moved.text)
  t.same(await listed(`createdBy=${ann.id}&state=reported`), annIds.slice(0, 2))
  t.same(await listed(`createdBy=${ann.id}&state=investigating`), [annIds[2]])
  t.same(await listed(`createdBy=${ann.id}&q=spill`), [annIds[0], annIds[2]], 'Ann’s spills, not Bob’s')
  t.same(await listed(`createdBy=${ann.id}&q=spill&state=reported`), [annIds[0]])
  t.same(await listed(`createdBy=me&q=spill&sort=-createdAt`, ann.token), [annIds[2], annIds[0]])
  t.same(await listed(`createdBy=${ann.id}&id=${annIds[1]},${bobIds[0]}`), [annIds[1]])
  t.same(await listed(`createdBy=${bob.id}&payload[site]=Leeds%20DC&numberPrefix=INC-`), bobIds)
})

t.test('a row rule still applies: a reporter sees only their own, whoever they name', async (t) => {
  t.same(await listed(`createdBy=${bob.id}`, ann.token), [], 'Bob’s are not Ann’s to see')
  t.same(await listed(`createdBy=${ann.id}`, ann.token), annIds)
})

t.test('a cursor pages within its creator and opens under no other', async (t) => {
  const pages: string[] = []
  let cursor: string | null = null
  do {
    const res: Reply = await server.request(
      'GET',
      `/api/v1/records?moduleKey=incident&createdBy=${ann.id}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
    )
    t.equal(res.status, 200, res.text)
    pages.push(...res.body.items.map((r: { id: string }) => r.id))
    cursor = res.body.nextCursor
  } while (cursor && pages.length < 10)
  t.same(pages, annIds, 'three pages of one, each Ann’s')

  const first = await server.request('GET', `/api/v1/records?moduleKey=incident&createdBy=${ann.id}&limit=1`)
  const next = encodeURIComponent(first.body.nextCursor)
  for (const other of [`createdBy=${bob.id}`, '']) {
    const res = await server.request('GET', `/api/v1/records?moduleKey=incident&${other}&limit=1&cursor=${next}`)
    t.equal(res.status, 400, other || 'without the filter')
    t.equal(res.body.code, 'cursor.invalid')
  }
  // `me` binds the cursor to the id it stands for: the same list named either way, and nobody else's `me`.
  const mine = await server.request('GET', '/api/v1/records?moduleKey=incident&createdBy=me&limit=1', {
    token: ann.token
  })
  const byId = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&createdBy=${ann.id}&limit=1&cursor=${encodeURIComponent(mine.body.nextCursor)}`,
    { token: ann.token }
  )
  t.same(
    byId.body.items.map((r: { id: string }) => r.id),
    [annIds[1]],
    'me and the id are one list'
  )
  const bobs = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&createdBy=me&limit=1&cursor=${encodeURIComponent(mine.body.nextCursor)}`,
    { token: bob.token }
  )
  t.equal(bobs.body.code, 'cursor.invalid', 'Bob’s me is another list')
})

t.test('GraphQL takes createdBy as an argument of the list', async (t) => {
  const ask = async (token: string, args: string) => {
    const res = await server.request('POST', '/api/graphql', {
      token,
      body: { query: `{ incidents(first: 50, ${args}) { nodes { id createdBy { id } } } }` }
    })
    return res.body
  }
  const mine = await ask(ann.token, 'createdBy: "me"')
  t.notOk(mine.errors, JSON.stringify(mine.errors))
  t.same(
    mine.data.incidents.nodes.map((n: { id: string }) => n.id),
    annIds
  )
  const bobs = await ask(server.keys.acme, `createdBy: "${bob.id}", q: "spill"`)
  t.same(
    bobs.data.incidents.nodes.map((n: { id: string }) => n.id),
    [bobIds[0]]
  )
  const bad = await ask(server.keys.acme, 'createdBy: "me"')
  t.match(bad.errors, [{ extensions: { code: 'field.invalid' } }], 'an API key’s me is refused as over REST')
})

t.test('an export takes createdBy as a filter, validated as the list validates it', async (t) => {
  const ok = await server.request('POST', '/api/v1/exports', {
    token: meg.token,
    body: { moduleKey: 'incident', format: 'csv', filters: { createdBy: 'me' } }
  })
  t.equal(ok.status, 202, ok.text)
  t.match(ok.body.filters, { createdBy: 'me' })
  const bad = await server.request('POST', '/api/v1/exports', {
    body: { moduleKey: 'incident', format: 'csv', filters: { createdBy: 'me' } }
  })
  t.equal(bad.status, 400)
  t.match(bad.body.errors, [{ pointer: '/createdBy' }])
})

t.test('another tenant’s user created nothing here, and ours nothing there', async (t) => {
  t.same(await listed(`createdBy=${gus.id}`), [], 'Gus is of Globex')
  t.same(await listed(`createdBy=${ann.id}`, server.keys.globex), [], 'Ann is of Acme')
  t.equal((await listed('createdBy=me', gus.token)).length, 1, 'Gus finds his own')
})

t.test('the creator index serves the filter and a reporter’s row rule on a large module', async (t) => {
  // 60,000 incidents: half made by an integration, the others by 2,000 people, 15 each; Ann is one of them. (At
  // 200,000, the same plans read 51 index entries in 0.1 ms where a scan without the index took 45 ms.)
  const owner = new pg.Client({ connectionString: server.platform.db.url })
  await owner.connect()
  t.teardown(() => owner.end())
  await owner.query(
    `INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by)
     SELECT 'acme', 'incident', '1.0.0', 'BULK-' || g, 'reported', jsonb_build_object('title', 'Incident ' || g), c, c
       FROM generate_series(1, 60000) g,
            LATERAL (SELECT CASE
              WHEN g % 2 = 0 THEN '{"type":"api-key","id":"6d1f0a52-0000-4000-8000-000000000000","name":"feed"}'::jsonb
              WHEN g % 4000 = 1 THEN jsonb_build_object('type', 'user', 'id', $1::text, 'name', 'Ann')
              ELSE jsonb_build_object('type', 'user', 'name', 'p',
                     'id', '00000000-0000-4000-8000-' || lpad((g % 4000)::text, 12, '0')) END AS c) AS creator`,
    [ann.id]
  )
  await owner.query('ANALYZE records')
  const index = declaredIndexes(installedModules(server.platform.tenants)).find(
    (d) => d.serves.includes('createdBy filter and row rule') && d.definition.includes("module_key = 'incident'")
  )!

  // The page statements the service runs, as it runs them, explained with their values under the tenant policy.
  const pageOf = async (query: string, token: string) => {
    const statements: Array<{ text: string; values: unknown[] }> = []
    const original = pg.Client.prototype.query
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const config = args[0] as { text?: string; values?: unknown[] } | string
      const text = typeof config === 'string' ? config : config?.text
      const values = (typeof config === 'string' ? args[1] : config?.values) as unknown[] | undefined
      if (text && /from "records" as "r" .*order by "r"\."seq" asc limit/.test(text))
        statements.push({ text, values: values ?? [] })
      return (original as (...a: unknown[]) => unknown).apply(this, args)
    } as typeof original
    let res
    try {
      res = await server.request('GET', `/api/v1/records?moduleKey=incident&${query}`, { token })
    } finally {
      pg.Client.prototype.query = original
    }
    t.equal(res.status, 200, query)
    t.equal(statements.length, 1, 'one page statement')
    const { rows } = await server.platform.db.system.query(
      `EXPLAIN (ANALYZE, COSTS OFF) ${statements[0].text}`,
      statements[0].values
    )
    return { items: res.body.items as Array<{ id: string }>, plan: rows.map((r) => r['QUERY PLAN']).join('\n') }
  }
  const uses = new RegExp(`Index Scan using ${index.name} |Bitmap Index Scan on ${index.name} `)
  const filtered = await pageOf(`createdBy=${ann.id}`, server.keys.acme)
  t.match(filtered.plan, uses, `the filter reads the creator index\n${filtered.plan}`)
  t.equal(filtered.items.length, 18, 'Ann’s fifteen and her three')
  const withState = await pageOf(`createdBy=${ann.id}&state=reported&limit=20`, server.keys.acme)
  t.match(withState.plan, uses, `and with a state\n${withState.plan}`)
  const reporter = await pageOf('limit=20', ann.token)
  t.match(reporter.plan, uses, `a reporter’s row rule reads it too\n${reporter.plan}`)
  t.equal(reporter.items.length, 18, 'all of hers, and only hers')
})
