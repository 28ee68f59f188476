import { Webhook } from 'standardwebhooks'
import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from './receiver.ts'

const server = await startTestServer(webhookTestConfig())
t.teardown(() => server.close())

const subscribe = async (
  url: string,
  kinds: string[] = ['record.created', 'record.updated', 'record.transitioned', 'record.deleted', 'webhook.test']
) => {
  const res = await server.request('POST', '/api/v1/webhooks', { body: { url, kinds } })
  if (res.status !== 201) throw new Error(`subscribe: ${res.status} ${res.text}`)
  return res.body
}
const createIncident = async (title: string) =>
  (
    await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload({ title }) }
    })
  ).body

t.test('signs each delivery so that standardwebhooks verifies it, with the event as a thin envelope', async (t) => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const sub = await subscribe(receiver.url)
  const record = await createIncident('Signed delivery')
  await receiver.waitFor(1)
  const [r] = receiver.received
  const verified = new Webhook(sub.secret).verify(r.body, {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature'])
  }) as any
  t.equal(verified.type, 'record.created')
  t.equal(r.headers['webhook-id'], verified.id, 'webhook-id is the event id')
  t.match(verified, {
    tenantId: 'acme',
    moduleKey: 'incident',
    subject: { type: 'record', id: record.id },
    data: { number: record.number, version: 1 },
    actor: { type: 'api-key' }
  })
  t.match(verified.occurredAt, /Z$/)
  t.notOk(r.body.includes('Signed delivery'), 'no record values travel in the envelope')
  t.throws(
    () => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(r.body, r.headers as any),
    'another secret does not verify'
  )
  await server.request('DELETE', `/api/v1/webhooks/${sub.id}`)
})

t.test('keeps the old secret signing beside the new one during the rotation grace period', async (t) => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const sub = await subscribe(receiver.url, ['webhook.test'])
  const rotated = await server.request('POST', `/api/v1/webhooks/${sub.id}:rotate-secret`)
  t.equal(rotated.status, 200)
  t.match(rotated.body.secret, /^whsec_/)
  t.not(rotated.body.secret, sub.secret)
  t.ok(rotated.body.previousSecretExpiresAt)
  t.notOk('secret' in (await server.request('GET', `/api/v1/webhooks/${sub.id}`)).body)
  const ping = await server.request('POST', `/api/v1/webhooks/${sub.id}:test`)
  t.equal(ping.status, 202)
  await receiver.waitFor(1)
  const [r] = receiver.received
  t.equal(String(r.headers['webhook-signature']).split(' ').length, 2, 'two signatures, space-separated')
  t.equal(r.headers['webhook-id'], ping.body.eventId)
  for (const secret of [sub.secret, rotated.body.secret]) {
    t.equal((new Webhook(secret).verify(r.body, r.headers as any) as any).type, 'webhook.test')
  }
  await server.request('DELETE', `/api/v1/webhooks/${sub.id}`)
})

t.test('delivers nothing for a rolled-back change, and the next committed one in order', async (t) => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const sub = await subscribe(receiver.url)
  const client = await server.platform.db.system.connect()
  try {
    await client.query('BEGIN')
    await client.query(
      `INSERT INTO events (tenant_id, type, actor, module_key, subject_id, data) VALUES ('acme', 'record.created', '{}', 'incident', gen_random_uuid(), '{}')`
    )
    await client.query('ROLLBACK')
  } finally {
    client.release()
  }
  // A refused write is not a change either.
  t.equal(
    (await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: { title: 'no' } } }))
      .status,
    400
  )
  const record = await createIncident('After the rollback')
  const patched = await server.request('PATCH', `/api/v1/records/${record.id}`, {
    body: { payload: { severity: 'high' } }
  })
  t.equal(patched.status, 200)
  await receiver.waitFor(2)
  await new Promise((r) => setTimeout(r, 500))
  t.same(
    receiver.received.map((r) => r.json.type),
    ['record.created', 'record.updated']
  )
  t.same(
    receiver.received.map((r) => r.json.subject.id),
    [record.id, record.id]
  )
  t.same(receiver.received[1].json.data.changedFields, ['severity'])
  await server.request('DELETE', `/api/v1/webhooks/${sub.id}`)
})

t.test('disables the subscription at once on 410 Gone, saying why', async (t) => {
  const receiver = await startReceiver(() => 410)
  t.teardown(() => receiver.close())
  const sub = await subscribe(receiver.url)
  await createIncident('Gone')
  await receiver.waitFor(1)
  await new Promise((r) => setTimeout(r, 300))
  const got = (await server.request('GET', `/api/v1/webhooks/${sub.id}`)).body
  t.equal(got.enabled, false)
  t.match(got.disabledReason, /410 Gone/)
  await createIncident('Not sent')
  await new Promise((r) => setTimeout(r, 800))
  t.equal(receiver.received.length, 1, 'no attempt after it, and no event queued while disabled')
  const log = (await server.request('GET', `/api/v1/webhooks/${sub.id}/deliveries`)).body.items
  t.match(log, [{ attempt: 1, statusCode: 410, outcome: 'failed', responseExcerpt: 'answered 410' }])
})

t.test('logs every attempt and replays one event or a time range to one subscription', async (t) => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const sub = await subscribe(receiver.url)
  const from = new Date().toISOString()
  const a = await createIncident('Replay A')
  const b = await createIncident('Replay B')
  await receiver.waitFor(2)
  await new Promise((r) => setTimeout(r, 300))
  const log = await server.request('GET', `/api/v1/webhooks/${sub.id}/deliveries`)
  t.equal(log.status, 200)
  t.equal(log.body.items.length, 2)
  t.match(log.body.items[0], {
    type: 'record.created',
    attempt: 1,
    statusCode: 200,
    outcome: 'succeeded',
    responseExcerpt: 'answered 200',
    error: null
  })
  t.ok(log.body.items.every((i: any) => Number.isInteger(i.latencyMs) && i.at.endsWith('Z')))
  const eventId = receiver.received[0].json.id
  const one = await server.request('POST', `/api/v1/webhooks/${sub.id}:replay`, { body: { eventId } })
  t.equal(one.status, 202)
  t.same(one.body, { queued: 1 })
  await receiver.waitFor(3)
  t.equal(receiver.received[2].json.id, eventId)
  t.equal(receiver.received[2].headers['webhook-id'], eventId, 'a replay carries the same webhook-id')
  const range = await server.request('POST', `/api/v1/webhooks/${sub.id}:replay`, {
    body: { from, to: new Date(Date.now() + 1000).toISOString() }
  })
  t.same(range.body, { queued: 2 })
  await receiver.waitFor(5)
  t.same(
    receiver.received
      .slice(3)
      .map((r) => r.json.subject.id)
      .sort(),
    [a.id, b.id].sort()
  )
  const unknown = await server.request('POST', `/api/v1/webhooks/${sub.id}:replay`, {
    body: { eventId: '00000000-0000-4000-8000-000000000000' }
  })
  t.equal(unknown.status, 404)
  t.equal((await server.request('POST', `/api/v1/webhooks/${sub.id}:replay`, { body: {} })).status, 400)
  const filtered = await server.request('GET', `/api/v1/webhooks/${sub.id}/deliveries?eventId=${eventId}&limit=1`)
  t.equal(filtered.body.items.length, 1)
  t.equal(filtered.body.items[0].eventId, eventId)
  await server.request('DELETE', `/api/v1/webhooks/${sub.id}`)
})
