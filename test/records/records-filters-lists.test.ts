import t, { type Test } from '../helpers/tap.ts'
import { sql } from '../../core/db/index.ts'
import { fieldToFilter, operatorSql } from '../../core/modules/derive/filters.ts'
import { ownerPool } from '../helpers/database.ts'
import { fixtureModules } from '../helpers/fixture-modules.ts'
import { userWithToken } from '../helpers/identity.ts'
import { defaultTenants, incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'

/**
 * Multiple-choice fields filter by `contains` (all the values given) and `containsAny` (one of them), and a group's
 * members as `payload[group.member]`, where one item must meet all the conditions given on that group: both through
 * the one filter table (core/modules/derive/filters.ts), over REST and GraphQL alike.
 */

// A group whose members have ranges (a number, a date), a list, and one that refuses filters; and a group only one
// role may read.
const audit = {
  key: 'audit',
  version: '1.0.0',
  title: 'Audit',
  numberPattern: 'AUD-{YYYY}-{seq:3}',
  fields: [
    { key: 'title', type: 'text', required: true, maxLength: 80 },
    {
      key: 'findings',
      type: 'group',
      label: 'Findings',
      fields: [
        { key: 'kind', type: 'singleChoice', label: 'Kind', required: true, options: ['hazard', 'defect'] },
        { key: 'cost', type: 'number', label: 'Cost' },
        { key: 'dueOn', type: 'date', label: 'Due on' },
        { key: 'seenAt', type: 'datetime', label: 'Seen at' },
        { key: 'tags', type: 'multipleChoice', label: 'Tags', options: ['fire', 'electrical', 'slip'] },
        { key: 'note', type: 'text', label: 'Note', filterable: false }
      ]
    },
    {
      key: 'confidential',
      type: 'group',
      access: { read: ['lead'] },
      fields: [{ key: 'kind', type: 'singleChoice', options: ['fraud', 'theft'] }]
    }
  ],
  workflow: {
    initial: 'open',
    states: [{ key: 'open' }, { key: 'closed', final: true }],
    transitions: [{ key: 'close', from: ['open'], to: 'closed' }]
  },
  permissions: { auditor: ['read', 'create', 'update'], lead: ['read', 'create', 'update', 'transition:close'] }
}
const fixtures = fixtureModules([audit])
t.teardown(fixtures.remove)

const server = await startTestServer({
  modules: { directories: ['tenant-modules', fixtures.directory], packages: [] },
  tenants: { ...defaultTenants, acme: { ...defaultTenants.acme, modules: [...defaultTenants.acme.modules, 'audit'] } }
})
t.teardown(() => server.close())
const auditor = await userWithToken(server, 'acme', ['auditor'])

async function create(moduleKey: string, payload: Record<string, unknown>): Promise<string> {
  const res = await server.request('POST', '/api/v1/records', { body: { moduleKey, payload } })
  if (res.status !== 201) throw new Error(`setup: create answered ${res.status} ${res.text}`)
  return res.body.id
}

const incidents = {
  headEyes: await create('incident', incidentPayload({ bodyParts: ['head', 'eyes'] })),
  eyesHands: await create('incident', incidentPayload({ bodyParts: ['eyes', 'hands'] })),
  legs: await create('incident', incidentPayload({ bodyParts: ['legs'] })),
  none: await create('incident', incidentPayload())
}
const inspection = (checklist: Array<Record<string, unknown>>) =>
  create('inspection', { title: 'Walkround', kind: 'workplace', site: 'Leeds', scheduledFor: '2026-05-01', checklist })
const inspections = {
  // One item failed, another (that passed) is of high severity: no item failed with high severity.
  apart: await inspection([
    { item: 'Exits clear', result: 'fail', severity: 'low' },
    { item: 'Extinguishers', result: 'pass', severity: 'high' }
  ]),
  together: await inspection([
    { item: 'Exits clear', result: 'pass' },
    { item: 'Guarding', result: 'fail', severity: 'high' }
  ]),
  passed: await inspection([{ item: 'Exits clear', result: 'pass', severity: 'high' }]),
  empty: await create('inspection', { title: 'Not yet', kind: 'ppe', site: 'Leeds', scheduledFor: '2026-05-02' })
}
const audits = {
  costly: await create('audit', {
    title: 'Warehouse',
    findings: [
      { kind: 'hazard', cost: 100, dueOn: '2026-01-10', seenAt: '2026-01-05T10:00:00Z', tags: ['slip'] },
      { kind: 'defect', cost: 5000, dueOn: '2026-06-01', tags: ['fire', 'electrical'] }
    ]
  }),
  cheap: await create('audit', {
    title: 'Office',
    findings: [
      {
        kind: 'defect',
        cost: 50,
        dueOn: '2026-03-01',
        seenAt: '2026-02-20T09:00:00+01:00',
        tags: ['electrical'],
        note: 'loose socket'
      }
    ]
  }),
  clean: await create('audit', { title: 'Yard', findings: [] })
}

const list = (moduleKey: string, query: string, token?: string): Promise<Reply> =>
  server.request('GET', `/api/v1/records?moduleKey=${moduleKey}&limit=50&${query}`, { token })

/** The ids a list answers, sorted, or the failure when it is not a 200. */
async function ids(t: Test, moduleKey: string, query: string): Promise<string[]> {
  const res = await list(moduleKey, query)
  t.equal(res.status, 200, `${query}: 200 ${res.status === 200 ? '' : res.text}`)
  return (res.body.items as Array<{ id: string }>).map((r) => r.id).sort()
}
const sorted = (...xs: string[]) => [...xs].sort()

const gql = (query: string, variables?: Record<string, unknown>) =>
  server.request('POST', '/api/graphql', { body: { query, variables } })
/** The ids a GraphQL list answers, sorted. */
async function gqlIds(t: Test, field: string, filter: string): Promise<string[]> {
  const res = await gql(`{ ${field}(first: 50, filter: ${filter}) { nodes { id } } }`)
  t.equal(res.status, 200, filter)
  t.notOk(res.body.errors, `${filter}: no errors ${JSON.stringify(res.body.errors ?? '')}`)
  return ((res.body.data?.[field]?.nodes ?? []) as Array<{ id: string }>).map((n) => n.id).sort()
}

t.test('contains selects records whose list holds the value, or all of several values', async (t) => {
  const { headEyes, eyesHands } = incidents
  t.same(await ids(t, 'incident', 'payload[bodyParts][contains]=eyes'), sorted(headEyes, eyesHands), 'one value')
  t.same(await ids(t, 'incident', 'payload[bodyParts]=eyes'), sorted(headEyes, eyesHands), 'a bare value is contains')
  t.same(await ids(t, 'incident', 'payload[bodyParts][contains]=eyes,head'), [headEyes], 'comma-joined: all of them')
  t.same(
    await ids(t, 'incident', 'payload[bodyParts][contains][]=eyes&payload[bodyParts][contains][]=hands'),
    [eyesHands],
    'repeated: all of them'
  )
  t.same(await ids(t, 'incident', 'payload[bodyParts][contains]=head,legs'), [], 'no record holds both')
})

t.test('containsAny selects records whose list holds at least one of the values', async (t) => {
  const { headEyes, eyesHands, legs } = incidents
  t.same(await ids(t, 'incident', 'payload[bodyParts][containsAny]=head,legs'), sorted(headEyes, legs), 'either')
  t.same(await ids(t, 'incident', 'payload[bodyParts][containsAny]=eyes'), sorted(headEyes, eyesHands), 'one value')
  t.same(await ids(t, 'incident', 'payload[bodyParts][containsAny]=feet'), [], 'a value none holds')
  t.same(
    await ids(t, 'incident', 'payload[bodyParts][containsAny]=hands,legs&payload[bodyParts][contains]=eyes'),
    [eyesHands],
    'both operators on one field: all must hold'
  )
})

t.test('a value outside the field options is a 400 filter problem naming the allowed ones', async (t) => {
  const options = ['head', 'eyes', 'neck', 'back', 'arms', 'hands', 'legs', 'feet', 'internal']
  for (const query of ['payload[bodyParts][contains]=elbow', 'payload[bodyParts][containsAny]=head,elbow']) {
    const res = await list('incident', query)
    t.equal(res.status, 400, query)
    t.match(res.body.errors?.[0], { field: 'payload.bodyParts', code: 'filter', allowed: options }, query)
  }
  const eq = await list('incident', 'payload[bodyParts][eq]=head')
  t.equal(eq.status, 400, 'eq is not an operator of a list')
  t.match(eq.body.errors?.[0], { code: 'operator', allowed: ['contains', 'containsAny'] })
  const onText = await list('incident', 'payload[site][contains]=Leeds')
  t.equal(onText.status, 400, 'contains is not an operator of text')
  t.match(onText.body.errors?.[0], { code: 'operator', allowed: ['eq', 'ne', 'in'] })
})

t.test('a group sub-field filter matches a record when one item meets all the conditions on that group', async (t) => {
  const { apart, together } = inspections
  t.same(await ids(t, 'inspection', 'payload[checklist.result]=fail'), sorted(apart, together), 'any failed item')
  t.same(
    await ids(t, 'inspection', 'payload[checklist.result]=fail&payload[checklist.severity]=high'),
    [together],
    'failed and high on the same item; not on two different items'
  )
  t.same(
    await ids(t, 'inspection', 'payload[checklist.result][ne]=pass&payload[checklist.severity][in]=low,medium'),
    [apart],
    'the member types own operators'
  )
  t.same(
    await ids(t, 'inspection', 'payload[checklist.result]=fail&payload[kind]=ppe'),
    [],
    'with a top-level filter, all must hold'
  )
  const bad = await list('inspection', 'payload[checklist.result]=broken')
  t.equal(bad.status, 400, 'a member value is checked by its own type')
  t.match(bad.body.errors?.[0], { field: 'payload.checklist.result', code: 'filter', allowed: ['pass', 'fail'] })
})

t.test('number and date members take ranges, and list members contains, within one item', async (t) => {
  const { costly, cheap } = audits
  t.same(await ids(t, 'audit', 'payload[findings.cost][gt]=1000'), [costly], 'gt')
  t.same(
    await ids(t, 'audit', 'payload[findings.kind]=defect&payload[findings.cost][lt]=1000'),
    [cheap],
    'the cheap finding of the costly audit is a hazard, its defect costs more'
  )
  t.same(
    await ids(t, 'audit', 'payload[findings.dueOn][gte]=2026-02-01&payload[findings.dueOn][lt]=2026-04-01'),
    [cheap],
    'a date range on one item'
  )
  t.same(
    await ids(t, 'audit', 'payload[findings.seenAt][lt]=2026-02-20T08:30:00Z'),
    sorted(costly, cheap),
    'a date-time bound, offsets read as instants: 09:00+01:00 is before 08:30Z'
  )
  t.same(await ids(t, 'audit', 'payload[findings.seenAt][lt]=2026-02-20T07:30:00Z'), [costly], 'and 07:30Z after it')
  t.same(
    await ids(t, 'audit', 'payload[findings.seenAt][gte]=2026-02-20T08:00:00Z&payload[findings.kind]=defect'),
    [cheap],
    'a date-time bound and a choice on one item'
  )
  t.same(
    await ids(t, 'audit', 'payload[findings.tags][contains]=fire,electrical'),
    [costly],
    'contains on a members list'
  )
  t.same(
    await ids(t, 'audit', 'payload[findings.tags][containsAny]=slip&payload[findings.cost][gt]=1000'),
    [],
    'the slip and the costly finding are two items'
  )
  const nan = await list('audit', 'payload[findings.cost][gt]=lots')
  t.equal(nan.status, 400)
  t.match(nan.body.errors?.[0], { field: 'payload.findings.cost', code: 'filter', detail: 'must be a number' })
})

t.test('a member declared filterable: false, a group itself and a hidden group refuse filters', async (t) => {
  const note = await list('audit', 'payload[findings.note]=loose socket')
  t.equal(note.status, 400, 'filterable: false')
  t.match(note.body.errors?.[0], { field: 'payload.findings.note', code: 'filter' })
  const allowed: string[] = note.body.errors?.[0]?.allowed ?? []
  t.ok(allowed.includes('findings.cost') && allowed.includes('title'), 'lists the paths that filter')
  t.notOk(allowed.includes('findings.note'), 'not the refused member')
  const group = await list('audit', 'payload[findings]=x')
  t.equal(group.status, 400, 'a group is filtered by its members only')
  t.equal(group.body.errors?.[0]?.code, 'filter')
  const deeper = await list('audit', 'payload[findings.kind.x]=hazard')
  t.equal(deeper.status, 400, 'groups do not nest')
  const hidden = await list('audit', 'payload[confidential.kind]=fraud', auditor.token)
  t.equal(hidden.status, 403, 'a group the caller may not read')
  t.equal(hidden.body.code, 'field.forbidden')
  t.equal((await list('audit', 'payload[confidential.kind]=fraud')).status, 200, 'one who may read it filters')
})

t.test('GraphQL takes the same selections through the module filter input', async (t) => {
  const { headEyes, eyesHands, legs } = incidents
  t.same(await gqlIds(t, 'incidents', '{ bodyParts: { contains: [EYES, HEAD] } }'), [headEyes], 'contains all')
  t.same(await gqlIds(t, 'incidents', '{ bodyParts: { contains: EYES } }'), sorted(headEyes, eyesHands), 'one value')
  t.same(
    await gqlIds(t, 'incidents', '{ bodyParts: { containsAny: [HEAD, LEGS] } }'),
    sorted(headEyes, legs),
    'containsAny'
  )
  t.same(
    await gqlIds(t, 'inspections', '{ checklist: { result: { eq: FAIL }, severity: { eq: HIGH } } }'),
    [inspections.together],
    'one item meets both'
  )
  t.same(
    await gqlIds(t, 'audits', '{ findings: { kind: { eq: DEFECT }, cost: { lt: 1000 } } }'),
    [audits.cheap],
    'ranges on members'
  )
  t.same(
    await gqlIds(t, 'audits', '{ findings: { tags: { containsAny: [FIRE] } }, title: { eq: "Warehouse" } }'),
    [audits.costly],
    'a member list and a top-level field'
  )
  const note = await gql('{ audits(filter: { findings: { note: { eq: "x" } } }) { nodes { id } } }')
  t.ok(note.body.errors?.length, 'a member that refuses filters is not in the input')
  const eq = await gql('{ incidents(filter: { bodyParts: { eq: HEAD } }) { nodes { id } } }')
  t.ok(eq.body.errors?.length, 'nor an operator its type does not take')
})

t.test('a cursor issued under one list or group filter is refused under another', async (t) => {
  const pairs: Array<[string, string, string]> = [
    ['incident', 'payload[bodyParts][contains]=eyes', 'payload[bodyParts][contains]=head'],
    ['incident', 'payload[bodyParts][contains]=eyes', 'payload[bodyParts][containsAny]=eyes'],
    ['inspection', 'payload[checklist.result]=fail', 'payload[checklist.result]=fail&payload[checklist.severity]=high']
  ]
  for (const [moduleKey, query, other] of pairs) {
    const first = await server.request('GET', `/api/v1/records?moduleKey=${moduleKey}&limit=1&${query}`)
    t.ok(first.body.nextCursor, `${query}: a next page`)
    const cursor = encodeURIComponent(first.body.nextCursor)
    const again = (q: string) =>
      server.request('GET', `/api/v1/records?moduleKey=${moduleKey}&limit=1&${q}&cursor=${cursor}`)
    const same = await again(query)
    t.equal(same.status, 200, `${query}: the same filter pages on`)
    t.not(same.body.items[0]?.id, first.body.items[0].id, 'to the next record')
    const refused = await again(other)
    t.equal(refused.status, 400, `${query} then ${other}`)
    t.equal(refused.body.code, 'cursor.invalid')
  }
})

t.test('a GIN index on the field expression serves contains and containsAny', async (t) => {
  const spec = fieldToFilter.multipleChoice!
  t.equal(spec.index, 'gin')
  const expr = spec.expr('bodyParts')
  // The tables' owner makes the index (as records.indexes.ts does), outside any tenant's row rules.
  const owner = ownerPool(server.platform.db.url)
  const client = await owner.connect()
  try {
    await client.query(`CREATE INDEX records_test_body_parts ON records USING gin (${expr})`)
    await client.query('BEGIN')
    await client.query('SET LOCAL enable_seqscan = off')
    for (const op of ['contains', 'containsAny'] as const) {
      const c = operatorSql[op](expr, ['eyes', 'head'])
      const q = sql('records')
        .select('id')
        .whereRaw(c.sql, c.bindings as never[])
        .toSQL()
        .toNative()
      const plan = await client.query(`EXPLAIN ${q.sql}`, q.bindings as unknown[])
      const text = plan.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n')
      t.match(text, /records_test_body_parts/, `${op} uses the index`)
      const run = await client.query(q.sql, q.bindings as unknown[])
      t.equal(run.rowCount, op === 'contains' ? 1 : 2, `${op} selects as the list does`)
    }
  } finally {
    await client.query('ROLLBACK')
    await client.query('DROP INDEX IF EXISTS records_test_body_parts')
    client.release()
    await owner.end()
  }
})
