import t from '../helpers/tap.ts'
import { userWithToken } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())
const apiKey = server.keys.acme

const [reporterA, reporterB, manager, investigator, health, managerAndReporter] = await Promise.all([
  userWithToken(server, 'acme', ['reporter']),
  userWithToken(server, 'acme', ['reporter']),
  userWithToken(server, 'acme', ['safety-manager']),
  userWithToken(server, 'acme', ['investigator']),
  userWithToken(server, 'acme', ['health-officer']),
  userWithToken(server, 'acme', ['safety-manager', 'reporter'])
])

async function create(token: string, overrides: Record<string, unknown> = {}) {
  const res = await server.request('POST', '/api/v1/records', {
    token,
    body: { moduleKey: 'incident', payload: incidentPayload(overrides) }
  })
  if (res.status !== 201) throw new Error(`setup: create answered ${res.status} ${res.text}`)
  return res.body
}
const ids = async (token: string, query = '') =>
  (await server.request('GET', `/api/v1/records?moduleKey=incident&limit=200${query}`, { token })).body.items.map(
    (r: any) => r.id
  )

t.test('a reporter sees only the incidents they reported, in lists and single reads', async (t) => {
  const mine = await create(reporterA.token, { title: 'A reports' })
  const theirs = await create(reporterB.token, { title: 'B reports' })
  const listedA = await ids(reporterA.token)
  t.ok(listedA.includes(mine.id))
  t.notOk(listedA.includes(theirs.id), "another reporter's incident is not listed")
  t.equal((await server.request('GET', `/api/v1/records/${mine.id}`, { token: reporterA.token })).status, 200)
  const other = await server.request('GET', `/api/v1/records/${theirs.id}`, { token: reporterA.token })
  t.equal(other.status, 404, 'nor readable: it does not exist for them')
  t.equal(other.body.code, 'record.not_found')
  const managerSees = await ids(manager.token)
  t.ok(managerSees.includes(mine.id) && managerSees.includes(theirs.id), 'a role without a rule sees every record')
  const both = await ids(managerAndReporter.token)
  t.ok(both.includes(mine.id) && both.includes(theirs.id), 'one unrestricted role lifts the restriction')
})

t.test('a row rule holds on patch, transition, delete and the audit log, and changes nothing', async (t) => {
  const theirs = await create(reporterB.token)
  const attempts = [
    await server.request('PATCH', `/api/v1/records/${theirs.id}`, {
      token: reporterA.token,
      body: { payload: { title: 'changed' } }
    }),
    await server.request('POST', `/api/v1/records/${theirs.id}:transition`, {
      token: reporterA.token,
      body: { transition: 'dismiss' }
    }),
    await server.request('DELETE', `/api/v1/records/${theirs.id}`, { token: reporterA.token }),
    await server.request('GET', `/api/v1/audit-log?recordId=${theirs.id}`, { token: reporterA.token })
  ]
  t.same(
    attempts.map((a) => a.status),
    [404, 404, 404, 404]
  )
  const feed = await server.request('GET', '/api/v1/audit-log?moduleKey=incident&limit=200', { token: reporterA.token })
  t.equal(feed.status, 200)
  t.notOk(
    feed.body.items.some((i: any) => i.recordId === theirs.id),
    'the activity feed leaves it out too'
  )
  t.ok(feed.body.items.length > 0, "but shows the reporter's own")
  const created = await server.request('GET', '/api/v1/audit-log?moduleKey=incident&action=created&limit=200', {
    token: reporterA.token
  })
  t.equal(created.status, 200, 'also with an action filter')
  t.ok(
    created.body.items.length > 0 &&
      created.body.items.every((i: any) => i.action === 'created' && i.actor.id === reporterA.id)
  )
  const now = await server.request('GET', `/api/v1/records/${theirs.id}`, { token: apiKey })
  t.equal(now.body.version, 1)
  t.equal(now.body.payload.title, incidentPayload().title)
})

t.test('a row rule on a user field: an investigator sees the incidents they lead', async (t) => {
  const incident = await create(manager.token)
  t.notOk((await ids(investigator.token)).includes(incident.id))
  const started = await server.request('POST', `/api/v1/records/${incident.id}:transition`, {
    token: manager.token,
    body: { transition: 'start-investigation', payload: { investigationLead: investigator.id } }
  })
  t.equal(started.status, 200)
  t.ok((await ids(investigator.token)).includes(incident.id), 'listed once they lead it')
  const rootCause = await server.request('POST', `/api/v1/records/${incident.id}:transition`, {
    token: investigator.token,
    body: { transition: 'record-root-cause', payload: { rootCause: 'Worn brakes' } }
  })
  t.equal(rootCause.status, 200, 'and they can work on it')
  const close = await server.request('POST', `/api/v1/records/${incident.id}:transition`, {
    token: investigator.token,
    body: { transition: 'close', payload: { closureNote: 'done' } }
  })
  t.equal(close.status, 403, 'a transition outside their roles is refused')
})

t.test('pages of a restricted list are complete and stay restricted', async (t) => {
  for (let i = 0; i < 5; i++) await create(reporterA.token, { title: `page ${i}` })
  for (let i = 0; i < 5; i++) await create(reporterB.token, { title: `other ${i}` })
  const seen: string[] = []
  let cursor: string | null = null
  do {
    const res: any = await server.request(
      'GET',
      `/api/v1/records?moduleKey=incident&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { token: reporterA.token }
    )
    t.equal(res.status, 200)
    seen.push(...res.body.items.map((r: any) => r.createdBy.id))
    cursor = res.body.nextCursor
  } while (cursor)
  t.ok(seen.length >= 5)
  t.ok(
    seen.every((id) => id === reporterA.id),
    "every page holds only the reporter's records"
  )
  const first = await server.request('GET', '/api/v1/records?moduleKey=incident&limit=2', { token: reporterA.token })
  const replayed = await server.request(
    'GET',
    `/api/v1/records?moduleKey=incident&limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`,
    { token: reporterB.token }
  )
  t.equal(replayed.status, 400, 'a cursor is bound to the rule it was issued under')
})

t.test(
  'medical details are visible only to health officers: absent from reads, lists, activity and the audit log',
  async (t) => {
    const incident = await create(apiKey, { medicalDetails: 'Fractured wrist, hospital visit' })
    const patched = await server.request('PATCH', `/api/v1/records/${incident.id}`, {
      token: health.token,
      body: { payload: { medicalDetails: 'Fractured wrist, cast for 6 weeks' } }
    })
    t.equal(patched.status, 200, 'the health officer writes it')
    t.equal(patched.body.payload.medicalDetails, 'Fractured wrist, cast for 6 weeks')
    const asHealth = await server.request('GET', `/api/v1/records/${incident.id}`, { token: health.token })
    t.ok(
      asHealth.body.activity.some((a: any) => a.changes.some((c: any) => c.field === 'medicalDetails')),
      'and sees its history'
    )

    const reads = [
      await server.request('GET', `/api/v1/records/${incident.id}`, { token: manager.token }),
      await server.request('GET', '/api/v1/records?moduleKey=incident&limit=200', { token: manager.token }),
      await server.request('GET', `/api/v1/audit-log?recordId=${incident.id}`, { token: manager.token }),
      await server.request('GET', '/api/v1/audit-log?moduleKey=incident&limit=200', { token: manager.token })
    ]
    for (const r of reads) {
      t.equal(r.status, 200)
      t.notOk(r.text.includes('Fractured'), 'the value appears nowhere')
      t.notOk(r.text.includes('medicalDetails'), 'nor the field name')
    }
    t.equal(reads[0].body.payload.site, 'Leeds DC', 'the other fields are there')
  }
)

t.test('writing a hidden field without the right is 403 and changes nothing', async (t) => {
  const incident = await create(manager.token)
  const attempts = [
    await server.request('POST', '/api/v1/records', {
      token: manager.token,
      body: { moduleKey: 'incident', payload: incidentPayload({ medicalDetails: 'x' }) }
    }),
    await server.request('PATCH', `/api/v1/records/${incident.id}`, {
      token: manager.token,
      body: { payload: { medicalDetails: 'x' } }
    }),
    await server.request('PATCH', `/api/v1/records/${incident.id}`, {
      token: manager.token,
      body: { payload: { medicalDetails: null } }
    }),
    await server.request('POST', `/api/v1/records/${incident.id}:transition`, {
      token: manager.token,
      body: { transition: 'start-investigation', payload: { investigationLead: investigator.id, medicalDetails: 'x' } }
    }),
    await server.request('GET', '/api/v1/records?moduleKey=incident&payload[medicalDetails][contains]=wrist', {
      token: manager.token
    })
  ]
  for (const a of attempts) {
    t.equal(a.status, 403)
    t.equal(a.body.code, 'field.forbidden')
    t.equal(a.body.field, 'medicalDetails')
    t.match(a.body.detail, /health-officer/)
  }
  const now = await server.request('GET', `/api/v1/records/${incident.id}`, { token: apiKey })
  t.equal(now.body.version, 1)
  t.equal(now.body.state, 'reported')
  const filtered = await server.request(
    'GET',
    '/api/v1/records?moduleKey=incident&payload[medicalDetails][contains]=wrist',
    { token: health.token }
  )
  t.equal(filtered.status, 400, 'a health officer gets the ordinary answer: long text is not filterable')
  t.equal(filtered.body.code, 'field.invalid')
})

t.test('a patch by someone who cannot see a hidden field keeps its value', async (t) => {
  const incident = await create(apiKey, { medicalDetails: 'Sprained ankle' })
  const patched = await server.request('PATCH', `/api/v1/records/${incident.id}`, {
    token: manager.token,
    body: { payload: { severity: 'high' } }
  })
  t.equal(patched.status, 200)
  t.notOk('medicalDetails' in patched.body.payload)
  const full = await server.request('GET', `/api/v1/records/${incident.id}`, { token: apiKey })
  t.equal(full.body.payload.medicalDetails, 'Sprained ankle')
})

t.test('the module schema shows its field and row rules', async (t) => {
  const schema = await server.request('GET', '/api/v1/modules/incident', { token: apiKey })
  t.same(schema.body.fields.find((f: any) => f.key === 'medicalDetails').access, { read: ['health-officer'] })
  t.same(schema.body.rowAccess.reporter, [{ createdBy: 'self' }])
})
