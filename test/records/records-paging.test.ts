import t, { type Test } from '../helpers/tap.ts'
import { createCipheriv, createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto'
import { CursorCodec } from '../../core/pagination/cursor.ts'
import { systemPrincipal } from '../../core/auth/principal.ts'
import { inTenant } from '../../core/db/tenant-scope.ts'
import { recordsPath } from '../../plugins/records/records.shared.ts'
import { incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

interface Rec {
  id: string
  state: string
  updatedAt: string
  payload: Record<string, unknown>
}

/** Every live incident of acme, as the test last wrote it. */
const records = new Map<string, Rec>()
const severities = ['low', 'medium', 'high', 'critical']

async function createIncident(i: number): Promise<Rec> {
  const payload = incidentPayload({
    title: `Incident ${i}`,
    severity: severities[i % 4],
    injuredPeople: i % 5,
    occurredAt: `2026-10-${String(1 + (i % 28)).padStart(2, '0')}T08:30:00Z`,
    ...(i % 3 === 0 ? { regulatorNotified: i % 2 === 0 } : {})
  })
  const res = await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload } })
  if (res.status !== 201) throw new Error(`setup: create answered ${res.status} ${res.text}`)
  records.set(res.body.id, res.body)
  return res.body
}

const list = (query: string) => server.request('GET', `/api/v1/records?moduleKey=incident&${query}`)

/** Follows nextCursor to the end; `between` runs after each page. */
async function pageAll(query: string, between?: () => Promise<unknown>): Promise<{ items: Rec[]; pages: Reply[] }> {
  const items: Rec[] = []
  const pages: Reply[] = []
  let cursor: string | null = null
  do {
    const res: Reply = await list(`${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
    if (res.status !== 200) throw new Error(`list ${query} answered ${res.status} ${res.text}`)
    pages.push(res)
    items.push(...res.body.items)
    cursor = res.body.nextCursor
    if (cursor && between) await between()
  } while (cursor && pages.length < 200)
  return { items, pages }
}

const idsOf = (items: Rec[]) => items.map((r) => r.id).sort()
const expectedIds = (keep: (r: Rec) => boolean) =>
  [...records.values()]
    .filter(keep)
    .map((r) => r.id)
    .sort()

function assertInvalid(t: Test, res: Reply, field: string) {
  t.equal(res.status, 400, `400 naming ${field}`)
  t.match(res.headers.get('content-type'), /^application\/problem\+json/)
  t.equal(res.body.code, 'field.invalid')
  t.match(res.body.type, /\/validation$/)
  t.ok(res.body.detail.includes(field), `detail names ${field}: ${res.body.detail}`)
  return res.body.errors?.find((e: { field: string }) => e.field === field)
}

function assertBadCursor(t: Test, res: Reply) {
  t.equal(res.status, 400)
  t.equal(res.body.code, 'cursor.invalid')
  t.match(res.body.type, /\/bad-request$/)
}

for (let i = 0; i < 520; i += 20) {
  await Promise.all(Array.from({ length: 20 }, (_, j) => createIncident(i + j)))
}

t.test('pages through every record exactly once while new records are inserted', async (t) => {
  const before = [...records.keys()]
  t.equal(before.length, 520)
  let n = 1000
  const { items, pages } = await pageAll('limit=50', () => Promise.all([createIncident(n++), createIncident(n++)]))
  const ids = items.map((r) => r.id)
  t.equal(new Set(ids).size, ids.length, 'no record is returned twice')
  t.same(
    before.filter((id) => !ids.includes(id)),
    [],
    'every record that existed before paging is seen'
  )
  t.ok(pages.length >= 11, `${pages.length} pages`)
  t.ok(
    pages.every((p) => p.body.items.length <= 50 && p.body.limit === 50),
    'no page holds more than the limit'
  )
  t.ok(
    pages.slice(0, -1).every((p) => p.body.items.length === 50),
    'every page but the last is full'
  )
  t.equal(pages[pages.length - 1].body.nextCursor, null, 'the last page has no nextCursor')
  t.ok(
    ids.every((id) => records.has(id)),
    'only records of this tenant'
  )
  const numbers = items.map((r) => (r as Rec & { number: string }).number).sort()
  const year = items[0].updatedAt.slice(0, 4)
  t.same(
    numbers,
    Array.from({ length: items.length }, (_, i) => `INC-${year}-${String(i + 1).padStart(5, '0')}`),
    'concurrent creates got distinct numbers with no gaps'
  )
})

t.test('uses a default page size of 50 and accepts up to 200', async (t) => {
  const first = await list('')
  t.equal(first.status, 200)
  t.equal(first.body.items.length, 50)
  t.equal(first.body.limit, 50)
  t.type(first.body.nextCursor, 'string')
  const max = await list('limit=200')
  t.equal(max.status, 200)
  t.equal(max.body.items.length, 200)
  t.same(
    max.body.items.slice(0, 50).map((r: Rec) => r.id),
    first.body.items.map((r: Rec) => r.id),
    'pages start at the same record'
  )
  const over = await list('limit=201')
  const problem = assertInvalid(t, over, 'limit')
  t.equal(problem?.pointer, '/limit')
  assertInvalid(t, await list('limit=0'), 'limit')
  assertInvalid(t, await list('limit=ten'), 'limit')
  // Whole numbers in decimal digits only: Number() would read these as 10, 16 and 7.
  for (const written of ['1e1', '0x10', '%207', '010', '10.0']) {
    const refused = assertInvalid(t, await list(`limit=${written}`), 'limit')
    t.match(refused?.detail, /^must be a whole number from 1 to 200, written in decimal digits$/, `limit=${written}`)
  }
  t.equal((await list('limit=10')).body.items.length, 10, 'limit=10 is read')
})

t.test("an export's own reads take pages past the client limit; a call from a transport cannot", async (t) => {
  const records = server.running.app.service(recordsPath)
  const principal = systemPrincipal('acme', 'paging test')
  const query = { moduleKey: 'incident' }
  const page = await inTenant('acme', () => records.find({ principal, pageLimit: 300, query }))
  t.equal(page.items.length, 300, 'an internal reader (no provider) gets its 300 rows')
  t.equal(page.limit, 300)
  const next = await inTenant('acme', () =>
    records.find({ principal, pageLimit: 300, query: { ...query, cursor: page.nextCursor! } })
  )
  t.same(
    next.items[0] && (next.items[0] as { number: string }).number,
    (await list('limit=1&cursor=' + encodeURIComponent(page.nextCursor!))).body.items[0].number,
    'its cursor is a list cursor like any other'
  )
  const rest = await inTenant('acme', () => records.find({ principal, provider: 'rest', pageLimit: 300, query }))
  t.equal(rest.items.length, 50, 'with a provider it is ignored: the default page')
})

t.test('refuses a tampered cursor', async (t) => {
  const first = await list('limit=5')
  const cursor: string = first.body.nextCursor
  const [body, sig] = cursor.split('.')
  // Each byte after the version byte flipped in turn (nonce, then the sealed position): none opens.
  const bytes = Buffer.from(body, 'base64url')
  for (let i = 1; i < bytes.length; i += 4) {
    const forged = Buffer.from(bytes)
    forged[i] ^= 0x01
    assertBadCursor(t, await list(`limit=5&cursor=${forged.toString('base64url')}.${sig}`))
  }
  const flipped = sig.slice(0, -2) + (sig.endsWith('AA') ? 'BB' : 'AA')
  assertBadCursor(t, await list(`limit=5&cursor=${body}.${flipped}`))
  assertBadCursor(t, await list('limit=5&cursor=not-a-cursor'))
  assertBadCursor(t, await list(`limit=5&cursor=${body}`))
  const genuine = await list(`limit=5&cursor=${encodeURIComponent(cursor)}`)
  t.equal(genuine.status, 200, 'the untouched cursor still works')
})

t.test('refuses a cursor reused with different filters', async (t) => {
  const reported = await list('state=reported&limit=5')
  const cursor = encodeURIComponent(reported.body.nextCursor)
  assertBadCursor(t, await list(`limit=5&cursor=${cursor}`))
  assertBadCursor(t, await list(`state=reported&payload[severity]=high&limit=5&cursor=${cursor}`))
  assertBadCursor(t, await server.request('GET', `/api/v1/records?moduleKey=inspection&cursor=${cursor}`))
  t.equal((await list(`state=reported&limit=7&cursor=${cursor}`)).status, 200, 'another limit is fine')
})

t.test('filters by one state or several and refuses an unknown state', async (t) => {
  const ids = [...records.keys()]
  const lead = '6f1d2c3b-4a5e-4f60-8a71-9b2c3d4e5f60'
  for (const id of ids.slice(0, 3)) {
    const res = await server.request('POST', `/api/v1/records/${id}:transition`, {
      body: { transition: 'start-investigation', payload: { investigationLead: lead } }
    })
    t.equal(res.status, 200)
    records.set(id, res.body)
  }
  for (const id of ids.slice(3, 5)) {
    const res = await server.request('POST', `/api/v1/records/${id}:transition`, {
      body: { transition: 'dismiss', payload: { closureNote: 'Duplicate' } }
    })
    t.equal(res.status, 200)
    records.set(id, res.body)
  }
  const investigating = await pageAll('state=investigating&limit=200')
  t.same(idsOf(investigating.items), ids.slice(0, 3).sort())
  const both = await pageAll('state=investigating,closed&limit=200')
  t.same(idsOf(both.items), ids.slice(0, 5).sort())
  const reported = await pageAll('state=reported&limit=200')
  t.same(
    idsOf(reported.items),
    expectedIds((r) => r.state === 'reported')
  )
  t.ok(reported.items.every((r) => r.state === 'reported'))

  const unknown = await list('state=archived')
  const problem = assertInvalid(t, unknown, 'state')
  t.match(unknown.body.detail, 'reported, investigating, actions-pending, closed')
  t.same(problem?.allowed, ['reported', 'investigating', 'actions-pending', 'closed'])
  assertInvalid(t, await list('state=reported,archived'), 'state')
})

t.test('lists only records changed at or after updatedSince, in change order', async (t) => {
  await new Promise((r) => setTimeout(r, 20))
  const ids = [...records.keys()]
  const touch = async (id: string, note: string) => {
    const res = await server.request('PATCH', `/api/v1/records/${id}`, {
      body: { payload: { immediateActions: note } }
    })
    if (res.status !== 200) throw new Error(`patch answered ${res.status} ${res.text}`)
    records.set(id, res.body)
    return res.body as Rec
  }
  // Change records in an order unlike their creation order.
  const order = [ids[400], ids[7], ids[250], ids[0], ids[519], ids[100], ids[33], ids[8]]
  const first = await touch(order[0], 'first change')
  for (const id of order.slice(1)) await touch(id, 'later change')

  const { items, pages } = await pageAll(`updatedSince=${encodeURIComponent(first.updatedAt)}&limit=3`)
  t.ok(pages.length >= 3, `${pages.length} pages`)
  t.same(
    items.map((r) => r.id),
    order,
    'exactly the changed records, oldest change first, none twice'
  )
  t.ok(items.every((r) => r.updatedAt >= first.updatedAt))

  const later = await pageAll(`updatedSince=${encodeURIComponent(records.get(order[4])!.updatedAt)}&limit=2`)
  t.same(
    later.items.map((r) => r.id),
    order.slice(4),
    'a later instant gives the later changes'
  )
  const future = await list('updatedSince=2999-01-01T00:00:00Z')
  t.same(future.body.items, [])
  t.equal(future.body.nextCursor, null)
  assertInvalid(t, await list('updatedSince=yesterday'), 'updatedSince')
  const sinceCursor = (await list(`updatedSince=${encodeURIComponent(first.updatedAt)}&limit=3`)).body.nextCursor
  assertBadCursor(t, await list(`limit=3&cursor=${encodeURIComponent(sinceCursor)}`))
})

t.test('filters on payload fields with operators', async (t) => {
  const high = await pageAll('payload[severity]=high&limit=200')
  t.same(
    idsOf(high.items),
    expectedIds((r) => r.payload.severity === 'high')
  )
  t.ok(high.items.length > 100)

  const severe = await pageAll('payload[severity][in]=high,critical&limit=200')
  t.same(
    idsOf(severe.items),
    expectedIds((r) => ['high', 'critical'].includes(r.payload.severity as string))
  )

  const notLow = await pageAll('payload[severity][ne]=low&limit=200')
  t.same(
    idsOf(notLow.items),
    expectedIds((r) => r.payload.severity !== 'low')
  )

  const injured = await pageAll('payload[injuredPeople][gte]=2&limit=200')
  t.same(
    idsOf(injured.items),
    expectedIds((r) => (r.payload.injuredPeople as number) >= 2)
  )
  t.ok(injured.items.length > 0)

  const notified = await pageAll('payload[regulatorNotified]=true&limit=200')
  t.same(
    idsOf(notified.items),
    expectedIds((r) => r.payload.regulatorNotified === true)
  )
  t.ok(notified.items.length > 0)

  const october = await pageAll(
    'payload[occurredAt][gte]=2026-10-15T08:30:00Z&payload[occurredAt][lt]=2026-10-20T10:30:00%2B01:00&limit=200'
  )
  t.same(
    idsOf(october.items),
    expectedIds(
      (r) => (r.payload.occurredAt as string) >= '2026-10-15' && (r.payload.occurredAt as string) < '2026-10-20T09:30'
    )
  )
  t.ok(october.items.length > 0)

  const combined = await pageAll('payload[severity]=critical&payload[injuredPeople][lt]=2&state=reported&limit=50')
  t.same(
    idsOf(combined.items),
    expectedIds(
      (r) => r.payload.severity === 'critical' && (r.payload.injuredPeople as number) < 2 && r.state === 'reported'
    )
  )
})

t.test('refuses filters the module does not allow', async (t) => {
  const longText = await list('payload[description]=forklift')
  const problem = assertInvalid(t, longText, 'payload.description')
  t.match(longText.body.detail, /cannot be filtered on/)
  t.ok(problem?.allowed.includes('severity') && !problem.allowed.includes('description'), 'lists the filterable fields')

  const operator = await list('payload[severity][like]=hi')
  t.match(assertInvalid(t, operator, 'payload.severity')?.detail, /"like".*eq, ne, in/)
  const ordered = await list('payload[severity][gt]=low')
  t.match(ordered.body.detail, /does not support operator "gt"/)
  assertInvalid(t, await list('payload[regulatorNotified][in]=true,false'), 'payload.regulatorNotified')

  const value = await list('payload[severity]=extreme')
  t.same(assertInvalid(t, value, 'payload.severity')?.allowed, severities)
  t.match(assertInvalid(t, await list('payload[injuredPeople][gte]=many'), 'payload.injuredPeople')?.detail, /integer/)
  t.match(
    assertInvalid(t, await list('payload[regulatorNotified]=yes'), 'payload.regulatorNotified')?.detail,
    /true or false/
  )
  for (const bad of ['2026-02-30T00:00:00Z', '0000-01-01T00:00:00Z', '2026-10-01T00:00:00%2B16:00', '2026-10-01']) {
    t.match(
      assertInvalid(t, await list(`payload[occurredAt][gte]=${bad}`), 'payload.occurredAt')?.detail,
      /date-time/,
      `not a PostgreSQL-safe instant: ${bad}`
    )
  }
  assertInvalid(t, await list('payload[regulatorNotifiedOn][lt]=2026-02-30'), 'payload.regulatorNotifiedOn')
  assertInvalid(t, await list('updatedSince=0000-01-01T00:00:00Z'), 'updatedSince')
  assertInvalid(t, await list('payload[weather]=rain'), 'payload.weather')
  assertInvalid(t, await list('sort=title'), 'sort')
  assertInvalid(t, await server.request('GET', '/api/v1/records?limit=5'), 'moduleKey')
})

t.test(
  'a cursor is opaque, the same for the same page, bound to its filters, and one of the earlier format still opens',
  async (t) => {
    const secret = randomBytes(32)
    const codec = new CursorCodec(secret)
    const scope = JSON.stringify(['acme', 'incident', ['state', ['reported']]])
    const cursor = codec.encode(scope, [123456])
    const refused = (decode: () => unknown, message = 'refused as cursor.invalid') => {
      let code: unknown
      try {
        decode()
      } catch (err) {
        code = (err as { problemCode?: string }).problemCode
      }
      t.equal(code, 'cursor.invalid', message)
    }
    t.equal(codec.encode(scope, [123456]), cursor, 'the same page gets the same cursor')
    t.not(codec.encode(scope, [123457]), cursor)
    t.notMatch(
      Buffer.from(cursor.split('.')[0], 'base64url').toString('latin1'),
      /123456/,
      'the position cannot be read'
    )
    t.same(codec.decode(cursor, scope), [123456])
    refused(
      () => codec.decode(cursor, JSON.stringify(['globex', 'incident', ['state', ['reported']]])),
      'another scope does not open it'
    )
    refused(() => new CursorCodec(randomBytes(32)).decode(cursor, scope), 'another secret does not open it')
    refused(() => codec.decode(`${cursor}.x`, scope))

    // A v2 cursor (issued before the upgrade) as that format sealed it: HMAC-signed JSON around {h, p}.
    const seal = Buffer.from(hkdfSync('sha256', secret, '', 'records cursor seal', 32))
    const nonce = Buffer.from(hkdfSync('sha256', secret, '', 'records cursor nonce', 32))
    const plain = Buffer.from(
      JSON.stringify({ h: createHash('sha256').update(scope).digest('base64url').slice(0, 22), p: [42] })
    )
    const iv = createHmac('sha256', nonce).update(plain).digest().subarray(0, 12)
    const cipher = createCipheriv('aes-256-gcm', seal, iv)
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()])
    const body = Buffer.from(JSON.stringify({ v: 2, c: sealed.toString('base64url') })).toString('base64url')
    const v2 = `${body}.${createHmac('sha256', secret).update(body).digest().subarray(0, 12).toString('base64url')}`
    t.same(codec.decode(v2, scope), [42], 'a v2 cursor still opens')
    refused(() => codec.decode(v2, JSON.stringify(['acme', 'inspection'])), 'and stays bound to its scope')
  }
)
