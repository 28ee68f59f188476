import t from '../helpers/tap.ts'
import { userWithToken } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * Finding records: `sort` with cursors that keep their order while records are written, text search in any case and
 * with or without accents, numbers in any case and by their start, and none of it by a field the caller may not read.
 */
const server = await startTestServer()
t.teardown(() => server.close())
const reporter = await userWithToken(server, 'acme', ['reporter'])

async function create(payload: Record<string, unknown>, token?: string) {
  const res = await server.request('POST', '/api/v1/records', {
    token,
    body: { moduleKey: 'incident', payload: incidentPayload(payload) }
  })
  if (res.status !== 201) throw new Error(`setup: ${res.status} ${res.text}`)
  return res.body as { id: string; number: string; createdAt: string; payload: Record<string, unknown> }
}

// 30 incidents: occurredAt in a scrambled order with ties, and regulatorNotifiedOn (a date) on a third of them.
const created: Array<Awaited<ReturnType<typeof create>>> = []
for (let i = 0; i < 30; i++) {
  const day = String(1 + ((i * 7) % 10)).padStart(2, '0')
  created.push(
    await create({
      occurredAt: `2026-10-${day}T08:00:00Z`,
      title: i === 3 ? 'Spill at the Zürich depot' : i === 4 ? 'ZURICH audit follow-up' : `Incident ${i}`,
      ...(i % 3 === 0 ? { regulatorNotified: true, regulatorNotifiedOn: `2026-10-${day}` } : {}),
      ...(i === 5 ? { medicalDetails: 'fractured metacarpal' } : {})
    })
  )
}

async function pageAll(query: string, token?: string) {
  const ids: string[] = []
  let cursor: string | null = null
  for (let n = 0; n < 100; n++) {
    const res: { status: number; text: string; body: any } = await server.request(
      'GET',
      `/api/v1/records?moduleKey=incident&${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { token }
    )
    if (res.status !== 200) throw new Error(`${query}: ${res.status} ${res.text}`)
    ids.push(...res.body.items.map((r: { id: string }) => r.id))
    cursor = res.body.nextCursor
    if (!cursor) break
  }
  return ids
}

/** The expected order: by key (missing values last), then by creation, reversed whole for descending but missing still last. */
function expected(key: (r: (typeof created)[number]) => string | undefined, descending = false) {
  const withValue = created.map((r, i) => ({ r, i, v: key(r) })).filter((x) => x.v !== undefined)
  const without = created.map((r, i) => ({ r, i, v: key(r) })).filter((x) => x.v === undefined)
  const sign = descending ? -1 : 1
  withValue.sort((a, b) => sign * (a.v! < b.v! ? -1 : a.v! > b.v! ? 1 : a.i - b.i))
  without.sort((a, b) => sign * (a.i - b.i))
  return [...withValue, ...without].map((x) => x.r.id)
}

t.test(
  'a list sorts by a sortable field either way, ties in creation order, pages joining without gap or repeat',
  async (t) => {
    const occurred = (r: (typeof created)[number]) => r.payload.occurredAt as string
    t.same(await pageAll('sort=payload.occurredAt&limit=7'), expected(occurred))
    t.same(await pageAll('sort=-payload.occurredAt&limit=7'), expected(occurred, true))
    t.same(
      await pageAll('sort=createdAt&limit=4'),
      created.map((r) => r.id)
    )
    t.same(await pageAll('sort=-createdAt&limit=4'), created.map((r) => r.id).reverse())
    t.same(await pageAll('sort=-number&limit=9'), created.map((r) => r.id).reverse())
  }
)

t.test(
  'records without a value of the sort come last in both directions, across the page where they begin',
  async (t) => {
    const notified = (r: (typeof created)[number]) => r.payload.regulatorNotifiedOn as string | undefined
    // A page of 7 ends inside the valued records and the next crosses into the others.
    t.same(await pageAll('sort=payload.regulatorNotifiedOn&limit=7'), expected(notified))
    t.same(await pageAll('sort=-payload.regulatorNotifiedOn&limit=7'), expected(notified, true))
    const first = await server.request(
      'GET',
      '/api/v1/records?moduleKey=incident&sort=payload.regulatorNotifiedOn&limit=12'
    )
    t.equal(first.body.items[9].payload.regulatorNotifiedOn, '2026-10-10', 'the tenth has the latest date')
    t.notOk('regulatorNotifiedOn' in first.body.items[10].payload, 'the eleventh has none')
  }
)

t.test(
  'records created while a client pages a sorted list are neither the cause of a skip nor of a repeat',
  async (t) => {
    const before = new Set(created.map((r) => r.id))
    const seen: string[] = []
    let cursor: string | null = null
    let n = 0
    do {
      const res: { status: number; body: any } = await server.request(
        'GET',
        `/api/v1/records?moduleKey=incident&sort=payload.occurredAt&limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
      )
      t.equal(res.status, 200)
      seen.push(...res.body.items.map((r: { id: string }) => r.id))
      cursor = res.body.nextCursor
      // Between pages: one record sorting before where the client stands, one after it, one tied with it.
      await create({ occurredAt: '2026-10-01T08:00:00Z', title: `early ${n}` })
      await create({ occurredAt: '2026-12-31T08:00:00Z', title: `late ${n}` })
      await create({
        occurredAt: res.body.items.at(-1)?.payload.occurredAt ?? '2026-10-05T08:00:00Z',
        title: `tied ${n}`
      })
      n++
    } while (cursor && n < 60)
    t.equal(new Set(seen).size, seen.length, 'no record twice')
    t.same(
      [...before].filter((id) => !seen.includes(id)),
      [],
      'every record there before paging began is seen'
    )
    // The ones created since: a later one is seen, an earlier one is not (it sorts before the cursor): that is the order.
    t.ok(seen.length > before.size, 'records sorting after the cursor joined the list')
  }
)

t.test('a cursor opens only under the sort it was issued with', async (t) => {
  const first = await server.request('GET', '/api/v1/records?moduleKey=incident&sort=-createdAt&limit=2')
  const cursor = encodeURIComponent(first.body.nextCursor)
  for (const other of ['sort=createdAt', 'sort=payload.occurredAt', ''] as const) {
    const res = await server.request('GET', `/api/v1/records?moduleKey=incident&${other}&limit=2&cursor=${cursor}`)
    t.equal(res.status, 400, other || 'no sort')
    t.equal(res.body.code, 'cursor.invalid')
  }
  const same = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&sort=-createdAt&limit=2&cursor=${cursor}`
  )
  t.equal(same.status, 200)
})

t.test('a sort by a field that is not sortable is a 400 naming the sorts there are', async (t) => {
  for (const sort of ['payload.title', 'payload.nope', 'title', '-', 'payload.location']) {
    const res = await server.request('GET', `/api/v1/records?moduleKey=incident&sort=${encodeURIComponent(sort)}`)
    t.equal(res.status, 400, sort)
    t.match(res.body, { code: 'field.invalid' })
    t.match(res.text, /createdAt, updatedAt, number, relevance, payload\.occurredAt/)
  }
})

t.test('text search finds words by their start, in any case, with or without accents', async (t) => {
  const zurich = [created[3].id, created[4].id]
  for (const q of ['zurich', 'Zürich', 'ZÜR', 'zu']) {
    const ids = await pageAll(`q=${encodeURIComponent(q)}`)
    t.same(ids.filter((id) => zurich.includes(id)).sort(), [...zurich].sort(), q)
    t.notOk(ids.includes(created[0].id), `${q}: not the others`)
  }
  t.same(await pageAll('q=spill%20zurich'), [created[3].id], 'every word must match')
  t.same(await pageAll('q=depot&sort=-createdAt'), [created[3].id], 'with a sort')
  const counted = await server.request('GET', '/api/v1/records?moduleKey=incident&q=zurich&count=true')
  t.same(counted.body.count, { value: 2, exact: true }, 'a count of what the search selects')
  const empty = await server.request('GET', '/api/v1/records?moduleKey=incident&q=%2B%2B%2B')
  t.equal(empty.status, 400, 'a search without a word')
  t.match(empty.body, { code: 'field.invalid' })
})

t.test('a field the caller may not read is not searched, sorted or filtered by: no side channel', async (t) => {
  // medicalDetails has a read rule: never in the search text, for anyone.
  t.same(await pageAll('q=metacarpal'), [], 'a word only in a restricted field finds nothing')
  const officer = await userWithToken(server, 'acme', ['health-officer'])
  t.same(await pageAll('q=metacarpal', officer.token), [], 'not even for one who may read it')
  const sort = await server.request('GET', '/api/v1/records?moduleKey=incident&sort=payload.medicalDetails', {
    token: reporter.token
  })
  t.ok([400, 403].includes(sort.status), `refused (${sort.status})`)
  const filter = await server.request(
    'GET',
    '/api/v1/records?moduleKey=incident&payload[medicalDetails]=x&count=true',
    {
      token: reporter.token
    }
  )
  t.equal(filter.status, 403)
})

t.test('a number is found in any case, whole or by its start', async (t) => {
  const number = created[7].number
  const lower = await server.request('GET', `/api/v1/records?moduleKey=incident&number=${number.toLowerCase()}`)
  t.same(
    lower.body.items.map((r: { id: string }) => r.id),
    [created[7].id]
  )
  const prefix = number.slice(0, number.lastIndexOf('-') + 1).toLowerCase()
  const all = await pageAll(`numberPrefix=${encodeURIComponent(prefix)}&limit=50`)
  t.ok(
    created.every((r) => all.includes(r.id)),
    `${prefix} finds every incident`
  )
  const none = await server.request('GET', '/api/v1/records?moduleKey=incident&numberPrefix=zzz')
  t.same(none.body.items, [])
})

t.test('GraphQL takes the same sort and search', async (t) => {
  const res = await server.request('POST', '/api/graphql', {
    body: { query: '{ incidents(first: 3, sort: "-payload.occurredAt", q: "zurich") { nodes { id } } }' }
  })
  t.notOk(res.body.errors, JSON.stringify(res.body.errors))
  t.same(res.body.data.incidents.nodes.map((n: { id: string }) => n.id).sort(), [created[3].id, created[4].id].sort())
})

t.test('sort=relevance puts the best match first: the record that says the words most and closest', async (t) => {
  const once = await create({ title: 'Scaffold check', description: 'A scaffold tag was missing on level 2.' })
  const most = await create({
    title: 'Scaffold collapse: scaffold boards',
    description: 'Scaffold boards slipped; the scaffold was taped off and the scaffold inspector called.'
  })
  const some = await create({ title: 'Scaffold boards loose', description: 'Boards on the scaffold were loose.' })
  const ids = await pageAll('q=scaffold&sort=relevance&limit=2')
  t.same(ids, [most.id, some.id, once.id], 'most mentions first, across pages of 2')
  const res = await server.request('GET', '/api/v1/records?moduleKey=incident&sort=relevance')
  t.equal(res.status, 400, 'relevance needs a search')
  t.match(res.text, /give q/)
  const first = await server.request('GET', '/api/v1/records?moduleKey=incident&q=scaffold&sort=relevance&limit=1')
  const other = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&q=scaffold&limit=1&cursor=${encodeURIComponent(first.body.nextCursor)}`
  )
  t.equal(other.status, 400, 'its cursor keeps its order')
})

t.test('relevance ranks the newest 1,000 matches: bounded work whatever a word matches', async (t) => {
  const { relevanceWindow } = await import('../../plugins/records/records.sort.ts')
  t.equal(relevanceWindow, 1000)
  await server.platform.db.system.query(
    `INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by)
     SELECT 'acme', 'incident', '1.0.0', 'WIN-' || g, 'reported', jsonb_build_object('title', 'Window ' || g || ' pallet'),
            '{"type":"system","id":"t","name":"t"}', '{"type":"system","id":"t","name":"t"}'
       FROM generate_series(1, 1100) g`
  )
  const ids = await pageAll('q=pallet&sort=relevance&limit=200')
  t.equal(ids.length, 1000, 'the newest 1,000 of 1,100 matches')
  const counted = await server.request('GET', '/api/v1/records?moduleKey=incident&q=pallet&count=true&sort=relevance')
  t.same(counted.body.count, { value: 1100, exact: true }, 'the count says how many match in all')
})

t.test(
  'without a module, a number is looked up across the modules the caller may read, by their own rules',
  async (t) => {
    const action = await server.request('POST', '/api/v1/records', {
      body: {
        moduleKey: 'corrective-action',
        payload: { title: 'Fit racking guards', incident: created[0].id, kind: 'corrective' }
      }
    })
    t.equal(action.status, 201)
    const incident = created[9]
    for (const number of [incident.number, action.body.number]) {
      const res = await server.request('GET', `/api/v1/records?number=${number.toLowerCase()}`)
      t.equal(res.status, 200, number)
      t.same(
        res.body.items.map((r: { number: string }) => r.number),
        [number]
      )
    }
    // A prefix that two modules' numbers share (INC-, INS-) pages across both, each record once.
    const inspections: string[] = []
    for (let i = 0; i < 3; i++) {
      const made = await server.request('POST', '/api/v1/records', {
        body: {
          moduleKey: 'inspection',
          payload: { title: `Racking check ${i}`, kind: 'equipment', site: 'Leeds DC', scheduledFor: '2026-12-01' }
        }
      })
      t.equal(made.status, 201, made.text)
      inspections.push(made.body.id)
    }
    const prefix = 'in'
    const seen: string[] = []
    let cursor: string | null = null
    for (let n = 0; n < 200; n++) {
      const res: { status: number; body: any } = await server.request(
        'GET',
        `/api/v1/records?numberPrefix=${prefix}&limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
      )
      t.equal(res.status, 200)
      seen.push(...res.body.items.map((r: { id: string }) => r.id))
      cursor = res.body.nextCursor
      if (!cursor) break
    }
    t.equal(new Set(seen).size, seen.length, 'no record twice')
    t.ok(
      [...created.map((r) => r.id), ...inspections].every((id) => seen.includes(id)),
      'every incident and inspection: the prefix is both modules'
    )
    t.notOk(seen.includes(action.body.id), 'not the corrective action')
    // A reporter may not read corrective actions: the action's number finds nothing for them, not a 403.
    const hidden = await server.request('GET', `/api/v1/records?number=${action.body.number}`, {
      token: reporter.token
    })
    t.equal(hidden.status, 200)
    t.same(hidden.body.items, [])
    // A filter of one module needs the module; no filter at all needs it too.
    for (const query of ['state=reported&number=x', 'payload[site]=x&number=x', 'limit=5']) {
      const res = await server.request('GET', `/api/v1/records?${query}`)
      t.equal(res.status, 400, query)
      t.match(res.body, { code: 'field.invalid' })
      t.match(res.text, /moduleKey/)
    }
  }
)
