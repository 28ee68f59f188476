import { systemPrincipal } from '../../core/auth/principal.ts'
import { transaction } from '../../core/db/index.ts'
import { changeRecords, createRecords, createRules, reserveNumbers } from '../../plugins/records/records.shared.ts'
import { eventsAfter } from '../helpers/events.ts'
import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { tenantPool } from '../../core/db/tenant-scope.ts'

/**
 * The write path as a module migration or a scheduled job calls it (records.write.ts
 * through records.shared.ts): a named system writer, the same rules, no SQL of its own.
 * What it writes must read back over HTTP exactly as what a single call writes.
 */
const server = await startTestServer()
t.teardown(() => server.close())
// The write path as a job calls it: in the tenant's scope (row-level security shows it nothing else).
const pool = tenantPool(server.platform.db.pool, 'acme')
const incident = server.platform.tenants.module('acme', 'incident')
const job = systemPrincipal('acme', 'records-write-test')
const writer = { tenantId: 'acme', actor: job.actor }
const get = (id: string) => server.request('GET', `/api/v1/records/${id}`)
const lastPosition = async () =>
  Number((await pool.query("SELECT coalesce(max(position), 0) AS p FROM events WHERE tenant_id = 'acme'")).rows[0].p)
/** The events of these records after a position, once every transaction still running on the server (other test files share it) has ended. */
async function eventsOf(ids: string[], after: number, count: number) {
  const deadline = Date.now() + 30_000
  for (;;) {
    const found = (await eventsAfter(pool, 'acme', after, 1000)).filter((e) => ids.includes(e.subjectId!))
    if (found.length >= count || Date.now() > deadline) return found
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

t.test(
  'a batch created through the write path numbers on from a single create, padded as the pattern says',
  async (t) => {
    const single = await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload() }
    })
    t.equal(single.status, 201)
    const after = await lastPosition()
    const payloads = [1, 2, 3].map((i) => incidentPayload({ title: `Migrated ${i}` }))
    const created = await createRecords(
      pool,
      writer,
      incident,
      payloads.map((payload) => createRules(job, incident, payload))
    )
    const counter = Number(single.body.number.split('-').at(-1))
    t.same(
      created.map((c) => c.number),
      [1, 2, 3].map((i) => single.body.number.replace(/\d+$/, String(counter + i).padStart(5, '0'))),
      'the same counter, in the order of the ops'
    )
    for (const [i, c] of created.entries()) {
      const res = await get(c.id)
      t.equal(res.status, 200)
      t.match(res.body, { number: c.number, state: single.body.state, version: 1, payload: payloads[i] })
      t.same(res.body.createdBy, job.actor, 'the writer named is the creator')
      t.same(
        res.body.activity.map((a: any) => [a.action, a.changes.length]),
        [['created', Object.keys(payloads[i]).length]],
        'each with its created entry, as a single create has'
      )
    }
    const events = await eventsOf(
      created.map((c) => c.id),
      after,
      3
    )
    t.same(
      events.map((e) => [e.subjectId, e.data]),
      created.map((c) => [c.id, { number: c.number, version: 1 }]),
      'one record.created event each, in the order of the ops'
    )
  }
)

t.test('reserved numbers come from the same counter and a batch can be written with them', async (t) => {
  const numbers = await reserveNumbers(pool, writer, incident, 2)
  t.equal(numbers.length, 2)
  t.match(numbers[0], /^INC-\d{4}-\d{5}$/)
  const payload = incidentPayload({ title: 'Numbered beforehand' })
  const [c] = await createRecords(pool, writer, incident, [createRules(job, incident, payload)], {
    numbers: numbers.slice(1)
  })
  t.equal(c.number, numbers[1])
  const next = await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload } })
  t.ok(next.body.number > numbers[1], 'a single create after them numbers on from the reserved ones')
})

t.test(
  'a batch of changes gives each record its version, activity entry and event, in the order of the batch',
  async (t) => {
    const made = await Promise.all(
      [1, 2].map(() =>
        server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })
      )
    )
    const [a, b] = made.map((m) => m.body)
    const after = await lastPosition()
    const changed = await transaction(pool, async (client) => {
      await client.query('SELECT 1 FROM records WHERE tenant_id = $1 AND id = ANY($2::uuid[]) FOR UPDATE', [
        'acme',
        [a.id, b.id]
      ])
      return changeRecords(client, writer, incident, [
        {
          id: b.id,
          payload: { ...b.payload, title: 'Renamed by a job' },
          state: b.state,
          action: 'updated',
          changes: [{ field: 'title', from: b.payload.title, to: 'Renamed by a job' }]
        },
        { id: a.id, payload: a.payload, state: a.state, action: 'deleted', changes: [] }
      ])
    })
    t.same(changed, [
      { id: b.id, version: 2 },
      { id: a.id, version: 2 }
    ])
    const gotB = await get(b.id)
    t.match(gotB.body, { version: 2, payload: { title: 'Renamed by a job' } })
    t.same(gotB.body.updatedBy, job.actor)
    t.same(
      gotB.body.activity.map((x: any) => x.action),
      ['created', 'updated']
    )
    t.equal((await get(a.id)).status, 404, 'the deleted one is gone from the live records')
    const events = await eventsOf([a.id, b.id], after, 2)
    t.same(
      events.map((e) => [e.type, e.subjectId, e.data]),
      [
        ['record.updated', b.id, { number: b.number, version: 2, changedFields: ['title'] }],
        ['record.deleted', a.id, { number: a.number, version: 2 }]
      ]
    )
  }
)
