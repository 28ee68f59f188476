import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'
import { webhookTestConfig } from './receiver.ts'

const server = await startTestServer(webhookTestConfig())
t.teardown(() => server.close())

const sub = (
  await server.request('POST', '/api/v1/webhooks', {
    body: { url: 'http://127.0.0.1:9/hook', kinds: ['record.created', 'webhook.test'] }
  })
).body

t.test(
  'a null or non-object body to :replay, :test and :rotate-secret is a 400 validation problem, the same for the three',
  async (t) => {
    for (const method of ['replay', 'test', 'rotate-secret']) {
      for (const raw of ['null', '[]', '7', '"x"', 'true']) {
        const res = await server.request('POST', `/api/v1/webhooks/${sub.id}:${method}`, {
          raw,
          headers: { 'content-type': 'application/json' }
        })
        t.equal(res.status, 400, `:${method} with ${raw}`)
        t.equal(res.headers.get('content-type'), 'application/problem+json', `:${method} with ${raw}`)
        t.equal(res.body.code, 'field.invalid', `:${method} with ${raw}`)
        t.ok(res.body.traceId, `:${method} with ${raw} has a traceId`)
      }
    }
    const got = (await server.request('GET', `/api/v1/webhooks/${sub.id}`)).body
    t.same(got.previousSecretsExpireAt, [], 'no refused rotation happened')
  }
)

t.test('no body, or an empty object, is still accepted by :test and :rotate-secret', async (t) => {
  t.equal((await server.request('POST', `/api/v1/webhooks/${sub.id}:test`)).status, 202)
  t.equal((await server.request('POST', `/api/v1/webhooks/${sub.id}:test`, { body: {} })).status, 202)
  t.equal((await server.request('POST', `/api/v1/webhooks/${sub.id}:rotate-secret`)).status, 200)
  t.equal((await server.request('POST', `/api/v1/webhooks/${sub.id}:rotate-secret`, { body: {} })).status, 200)
})

t.test('a replay names one event or a whole range, never both nor half of one', async (t) => {
  const now = Date.now()
  const from = new Date(now - 60_000).toISOString()
  const to = new Date(now).toISOString()
  for (const body of [
    {},
    { from },
    { to },
    { eventId: '00000000-0000-4000-8000-000000000000', from, to },
    { eventId: '00000000-0000-4000-8000-000000000000', to }
  ]) {
    const res = await server.request('POST', `/api/v1/webhooks/${sub.id}:replay`, { body })
    t.equal(res.status, 400, JSON.stringify(body))
    t.equal(res.body.code, 'field.invalid', JSON.stringify(body))
    t.match(res.body.detail, /must give either eventId alone, or from and to together/, JSON.stringify(body))
  }
  const backwards = await server.request('POST', `/api/v1/webhooks/${sub.id}:replay`, { body: { from: to, to: from } })
  t.equal(backwards.status, 400)
  t.match(backwards.body.errors, [{ field: 'to', detail: /later than from/ }])
  t.same((await server.request('POST', `/api/v1/webhooks/${sub.id}:replay`, { body: { from, to } })).body, {
    queued: 0
  })
})

t.test('the OpenAPI schema of a replay states the rule: eventId, or from with to', async (t) => {
  const doc = (await server.request('GET', '/api/docs/spec.json')).body
  const schema = doc.components.schemas.WebhookReplay
  t.same(schema.dependentRequired, { from: ['to'], to: ['from'] })
  t.equal(schema.oneOf.length, 2)
  t.same(
    schema.oneOf.map((b: any) => b.required),
    [['eventId'], ['from', 'to']]
  )
  t.same(
    schema.oneOf.map((b: any) => Object.keys(b.properties).filter((k) => b.properties[k] === false)),
    [['from', 'to'], ['eventId']],
    "each form without the other's members"
  )
  t.match(schema.description, /`to` must be later than `from`/)
  const op = doc.paths['/api/v1/webhooks/{id}:replay'].post
  t.ok(op.requestBody.required, 'a replay needs a body')
})
