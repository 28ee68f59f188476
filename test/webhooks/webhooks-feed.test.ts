import t from '../helpers/tap.ts'
import { bulkCall } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from './receiver.ts'

const server = await startTestServer(webhookTestConfig())
t.teardown(() => server.close())

const kinds = ['record.created', 'record.updated', 'record.transitioned', 'record.deleted']

/** Every event of the feed after `after`, following nextCursor until caught up. */
async function feed(after?: string) {
  const items: any[] = []
  let cursor = after
  for (;;) {
    const res = await server.request(
      'GET',
      `/api/v1/events?limit=7&types=${kinds.join(',')}${cursor ? `&after=${encodeURIComponent(cursor)}` : ''}`
    )
    if (res.status !== 200) throw new Error(`feed: ${res.status} ${res.text}`)
    items.push(...res.body.items)
    cursor = res.body.nextCursor
    if (!res.body.hasMore) return { items, cursor }
  }
}

t.test("the events feed gives exactly the events a subscriber received, each record's in the same order", async (t) => {
  const { cursor: start } = await feed()
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const sub = (await server.request('POST', '/api/v1/webhooks', { body: { url: receiver.url, kinds } })).body
  // Single writes of each kind, then a bulk load.
  const a = (
    await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Feed A' }) }
    })
  ).body
  t.equal(
    (await server.request('PATCH', `/api/v1/records/${a.id}`, { body: { payload: { severity: 'high' } } })).status,
    200
  )
  t.equal(
    (
      await server.request('POST', `/api/v1/records/${a.id}:transition`, {
        body: { transition: 'dismiss', payload: { closureNote: 'Not an incident' } }
      })
    ).status,
    200
  )
  t.equal((await server.request('DELETE', `/api/v1/records/${a.id}`)).status, 200)
  const rows = Array.from({ length: 30 }, (_, i) =>
    JSON.stringify({ payload: incidentPayload({ title: `Feed bulk ${i}` }) })
  )
  t.match(
    (await bulkCall(server.url, '/api/modules/incident/bulk', server.keys.acme, rows.join('\n') + '\n')).lines.at(-1),
    { summary: { created: 30 } }
  )
  await receiver.waitFor(34)
  await new Promise((r) => setTimeout(r, 500))
  const { items } = await feed(start)
  t.equal(items.length, 34)
  t.equal(receiver.received.length, 34, 'no delivery twice')
  t.same(receiver.received.map((r) => r.json.id).sort(), items.map((e) => e.id).sort(), 'the same events')
  // Order is kept per record (a record's later event waits while an earlier one is retried); here nothing failed, so all came in order.
  t.same(
    receiver.received.map((r) => r.json.id),
    items.map((e) => e.id),
    'in the order of the feed'
  )
  t.same(
    receiver.received.slice(0, 4).map((r) => r.json.type),
    kinds
  )
  await server.request('DELETE', `/api/v1/webhooks/${sub.id}`)
})

t.test(
  'a resumed subscription gets what happens after it resumes, not what happened while it was disabled',
  async (t) => {
    const receiver = await startReceiver()
    t.teardown(() => receiver.close())
    const sub = (
      await server.request('POST', '/api/v1/webhooks', { body: { url: receiver.url, kinds: ['record.created'] } })
    ).body
    t.equal((await server.request('PATCH', `/api/v1/webhooks/${sub.id}`, { body: { enabled: false } })).status, 200)
    const from = new Date(Date.now() - 100).toISOString()
    const during = (
      await server.request('POST', '/api/v1/records', {
        body: { moduleKey: 'incident', payload: incidentPayload({ title: 'While disabled' }) }
      })
    ).body
    // Long enough for the dispatcher to see the event (it polls every 200 ms in these tests).
    await new Promise((r) => setTimeout(r, 800))
    t.equal((await server.request('PATCH', `/api/v1/webhooks/${sub.id}`, { body: { enabled: true } })).status, 200)
    const after = (
      await server.request('POST', '/api/v1/records', {
        body: { moduleKey: 'incident', payload: incidentPayload({ title: 'After resuming' }) }
      })
    ).body
    await receiver.waitFor(1)
    await new Promise((r) => setTimeout(r, 500))
    t.same(
      receiver.received.map((r) => r.json.subject.id),
      [after.id]
    )
    // What happened meanwhile is one replay away.
    const replay = await server.request('POST', `/api/v1/webhooks/${sub.id}:replay`, {
      body: { from, to: new Date(Date.now() + 1000).toISOString() }
    })
    t.same(replay.body, { queued: 2 })
    await receiver.waitFor(3)
    t.same(
      receiver.received.slice(1).map((r) => r.json.subject.id),
      [during.id, after.id],
      'the missed event, and the later one again'
    )
    await server.request('DELETE', `/api/v1/webhooks/${sub.id}`)
  }
)

t.test(
  "a module filter keeps other modules' record events out, and lets events without a module through",
  async (t) => {
    const receiver = await startReceiver()
    t.teardown(() => receiver.close())
    const sub = (
      await server.request('POST', '/api/v1/webhooks', {
        body: { url: receiver.url, kinds: ['record.created', 'user.provisioned'], modules: ['incident'] }
      })
    ).body
    const incident = (
      await server.request('POST', '/api/v1/records', {
        body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Filtered in' }) }
      })
    ).body
    const action = await server.request('POST', '/api/v1/records', {
      body: {
        moduleKey: 'corrective-action',
        payload: { title: 'Filtered out', incident: incident.id, kind: 'corrective' }
      }
    })
    t.equal(action.status, 201)
    const user = await server.platform.users.create('acme', {
      userName: 'filter.check',
      password: 'correct horse battery staple',
      roles: ['auditor']
    })
    await receiver.waitFor(2)
    await new Promise((r) => setTimeout(r, 600))
    t.same(
      receiver.received.map((r) => `${r.json.type} ${r.json.subject.id}`).sort(),
      [`record.created ${incident.id}`, `user.provisioned ${user.id}`].sort(),
      'the incident and the user, not the corrective action'
    )
    // A replay applies the same filter.
    const actionEvent = (
      await server.platform.db.system.query('SELECT id::text FROM events WHERE subject_id = $1', [action.body.id])
    ).rows[0].id
    const replay = await server.request('POST', `/api/v1/webhooks/${sub.id}:replay`, { body: { eventId: actionEvent } })
    t.equal(replay.status, 404, "the corrective action's event is not one of this subscription's")
    await server.request('DELETE', `/api/v1/webhooks/${sub.id}`)
  }
)
