import t from '../helpers/tap.ts'
import { eventKinds } from '../../core/events/events.ts'
import { startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

t.test(
  'describes one webhook per event kind, and the test ping, with the envelope and the signature headers',
  async (t) => {
    for (const token of [null, server.keys.acme]) {
      const doc = (await server.request('GET', '/api/docs/spec.json', { token })).body
      t.same(Object.keys(doc.webhooks).sort(), [...Object.keys(eventKinds), 'webhook.test'].sort())
      const op = doc.webhooks['record.transitioned'].post
      t.same(
        op.parameters.map((p: any) => p.name),
        ['webhook-id', 'webhook-timestamp', 'webhook-signature']
      )
      t.same(op.security, [], 'a receiver is not asked for a credential of this API')
      const schema = op.requestBody.content['application/json'].schema
      t.equal(schema.allOf[0].$ref, '#/components/schemas/WebhookEnvelope')
      t.same(schema.allOf[1].properties.type, { const: 'record.transitioned' })
      t.same(doc.components.schemas.WebhookEnvelope.required.sort(), [
        'actor',
        'data',
        'id',
        'moduleKey',
        'occurredAt',
        'subject',
        'tenantId',
        'type'
      ])
      t.ok(doc.paths['/api/v1/webhooks/{id}:rotate-secret'].post)
      t.ok(doc.paths['/api/v1/webhooks/{id}/deliveries'].get)
    }
    t.equal((await server.request('GET', '/api/docs/postman.json')).status, 200, 'the Postman collection still builds')
  }
)
