import { eventKinds } from '../../core/events/events.ts'
import {
  operation,
  pathParam,
  queryParamsOf,
  type DocContext,
  type Fragment,
  type Json
} from '../../core/openapi/builder.ts'
import {
  deliveryAttemptSchema,
  deliveryQuerySchema,
  previousSecretsKept,
  webhookDataSchema,
  webhookEnvelopeSchema,
  webhookPatchSchema,
  webhookReplaySchema,
  webhookSchema
} from './webhooks.schema.ts'
import { webhookTestKind } from './webhooks.shared.ts'

const tag = 'Webhooks'
const scope = 'webhooks:write'
const noStore = ['Cache-Control']

/** The request a receiver gets for each event kind (OpenAPI 3.1 top-level `webhooks`). */
function webhookEntries(envelope: Json): Record<string, Json> {
  const kinds: Record<string, string> = {
    ...eventKinds,
    [webhookTestKind]: 'A test ping sent by `POST /api/v1/webhooks/{id}:test`. Subject: the subscription. data: {}.'
  }
  const headers = [
    {
      name: 'webhook-id',
      in: 'header',
      required: true,
      description: 'The event id: the same on every retry; deduplicate on it.',
      schema: { type: 'string', format: 'uuid' }
    },
    {
      name: 'webhook-timestamp',
      in: 'header',
      required: true,
      description: 'Seconds since the epoch when this attempt was signed; reject ones far from now.',
      schema: { type: 'string', pattern: '^[0-9]+$' }
    },
    {
      name: 'webhook-signature',
      in: 'header',
      required: true,
      description:
        'Standard Webhooks: `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` keyed with the base64-decoded part of the `whsec_` secret; during a rotation grace period two signatures, space-separated.',
      schema: { type: 'string' }
    }
  ]
  return Object.fromEntries(
    Object.entries(kinds).map(([kind, text]) => [
      kind,
      {
        post: {
          operationId: `webhook-${kind.replace('.', '-')}`,
          tags: [tag],
          summary: kind,
          // The service calls the receiver: no credential of this API is involved (the signature authenticates it).
          security: [],
          description: `${text} Answer 2xx within the timeout to acknowledge; any other status, a timeout or a connection error is retried (8 attempts over about 24 hours). 410 Gone disables the subscription.`,
          parameters: headers,
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: { allOf: [envelope, { type: 'object', properties: { type: { const: kind } } }] }
              }
            }
          },
          responses: {
            '2XX': { description: 'Received.' },
            '410': { description: 'Gone: the subscription is disabled at once.' }
          }
        }
      }
    ])
  )
}

export function describeWebhooks(ctx: DocContext): Fragment {
  const webhook = ctx.ref(webhookSchema)
  const created = ctx.ref(
    {
      ...JSON.parse(JSON.stringify(webhookSchema)),
      title: 'Webhook with secret',
      required: [...webhookSchema.required!, 'secret']
    },
    'WebhookWithSecret'
  )
  const envelope = ctx.ref(webhookEnvelopeSchema)
  const id = pathParam('id', 'The subscription id (UUID).', { type: 'string', format: 'uuid' })
  const moduleKey = ctx.modules[0]?.definition.key ?? 'incident'
  return {
    tags: [
      {
        name: tag,
        description:
          "Subscriptions that receive the tenant's events as signed HTTP requests (Standard Webhooks), retried, with a delivery log and replay. See docs/webhooks.md."
      }
    ],
    paths: {
      '/api/v1/webhooks': {
        get: operation({
          operationId: 'listWebhooks',
          tag,
          summary: 'List webhook subscriptions',
          description: 'Admins only. Secrets are never listed.',
          scope,
          responses: {
            200: {
              description: 'The subscriptions.',
              schema: { type: 'object', required: ['items'], properties: { items: { type: 'array', items: webhook } } },
              headers: noStore
            }
          }
        }),
        post: operation({
          operationId: 'createWebhook',
          tag,
          summary: 'Subscribe a URL to events',
          description:
            "The target must be https (http only where the operator allows it) and resolve to globally reachable addresses only: private, loopback, link-local (cloud metadata), CGNAT, unspecified, documentation, benchmarking, multicast and reserved addresses, and IPv6 forms that carry such an IPv4 address (mapped, compatible, translated, 6to4, Teredo, NAT64), are refused with 422 `webhook.target_refused` (also when the name does not resolve), unless the operator allow-lists the range (docs/webhooks.md lists the ranges; the example's 203.0.113.10, a documentation address, is one of them: send your receiver's URL). " +
            'The signing secret (`whsec_…`) is in this response only; an `Idempotency-Key` is refused (400), since a replay would have to show it again. Events committed from now on are delivered.',
          scope,
          body: {
            schema: ctx.ref(webhookDataSchema),
            example: {
              url: 'https://203.0.113.10/records-hook',
              kinds: ['record.created', 'record.transitioned'],
              modules: [moduleKey],
              description: 'ERP sync'
            }
          },
          responses: { 201: { description: 'The subscription, with its secret.', schema: created, headers: noStore } },
          problems: [413, 415, 422]
        })
      },
      '/api/v1/webhooks/{id}': {
        parameters: [id],
        get: operation({
          operationId: 'getWebhook',
          tag,
          summary: 'Get a webhook subscription',
          description: 'With `disabledReason` when the service disabled it.',
          scope,
          responses: { 200: { description: 'The subscription.', schema: webhook, headers: noStore } },
          problems: [404]
        }),
        patch: operation({
          operationId: 'updateWebhook',
          tag,
          summary: 'Change a webhook subscription',
          description:
            'Any of url (checked as at creation), kinds, modules, description, enabled. `enabled: true` resumes a disabled subscription and clears its reason; events while it was disabled are not queued (replay them).',
          scope,
          body: { schema: ctx.ref(webhookPatchSchema), example: { enabled: true } },
          responses: { 200: { description: 'The subscription.', schema: webhook, headers: noStore } },
          problems: [404, 413, 415, 422]
        }),
        delete: operation({
          operationId: 'deleteWebhook',
          tag,
          summary: 'Delete a webhook subscription',
          description: 'Its pending deliveries and its log go with it.',
          scope,
          responses: { 200: { description: 'The deleted subscription.', schema: webhook, headers: noStore } },
          problems: [404]
        })
      },
      '/api/v1/webhooks/{id}:rotate-secret': {
        parameters: [id],
        post: operation({
          operationId: 'rotateWebhookSecret',
          tag,
          summary: 'Rotate the signing secret',
          description:
            'A new secret, shown in this response only. The one it replaces keeps signing beside it (one more signature in `webhook-signature`) for the grace period (`webhooks.secretGraceHours`, 24 h), and so does each secret replaced earlier until its own grace period ends (`previousSecretsExpireAt`). ' +
            `At most ${previousSecretsKept} replaced secrets sign at once: a rotation past that is 409 \`webhook.rotation_limit\`, saying when the first of them stops. The body, if any, is an empty object (null or a non-object is 400).`,
          scope,
          body: { schema: { type: 'object', additionalProperties: false }, required: false, example: {} },
          responses: {
            200: { description: 'The subscription, with its new secret.', schema: created, headers: noStore }
          },
          problems: [404, 409, 413, 415]
        })
      },
      '/api/v1/webhooks/{id}:test': {
        parameters: [id],
        post: operation({
          operationId: 'testWebhook',
          tag,
          summary: 'Send a test event',
          description:
            'Queues a `webhook.test` delivery to this subscription (signed and retried like any other; see the delivery log). The body, if any, is an empty object (null or a non-object is 400).',
          scope,
          body: { schema: { type: 'object', additionalProperties: false }, required: false, example: {} },
          responses: {
            202: {
              description: 'Queued.',
              schema: {
                type: 'object',
                required: ['eventId', 'queued'],
                properties: { eventId: { type: 'string', format: 'uuid' }, queued: { const: true } }
              },
              headers: noStore
            }
          },
          problems: [404, 413, 415]
        })
      },
      '/api/v1/webhooks/{id}:replay': {
        parameters: [id],
        post: operation({
          operationId: 'replayWebhook',
          tag,
          summary: 'Deliver events again',
          description:
            "Queues one event (`eventId`), or every event of the subscription's kinds and modules that occurred in [`from`, `to`) (at most 10,000 a call), for this subscription: each is delivered again from attempt 1, in order, also one whose delivery is in flight or waiting for a retry (it starts over once that attempt ends). " +
            'The body gives either `eventId` alone or `from` and `to` together (`oneOf`, `dependentRequired`), with `to` later than `from`; anything else, a null or non-object body included, is 400. 404 `webhook.event_not_found` for an eventId that is not one of its events. ' +
            "An event the subscription's owner may not see when it is sent is skipped (logged, not sent).",
          scope,
          body: {
            schema: ctx.ref(webhookReplaySchema),
            required: true,
            example: { from: '2026-11-20T00:00:00Z', to: '2026-11-21T00:00:00Z' }
          },
          responses: {
            202: {
              description: 'How many events were queued: every one the call names.',
              schema: { type: 'object', required: ['queued'], properties: { queued: { type: 'integer' } } },
              headers: noStore
            }
          },
          problems: [404, 413, 415]
        })
      },
      '/api/v1/webhooks/{id}/deliveries': {
        parameters: [id],
        get: operation({
          operationId: 'listWebhookDeliveries',
          tag,
          summary: 'The delivery log',
          description:
            'Attempts of this subscription, newest first: event, attempt, time, status, latency, the first 4 KB of the response, the error.',
          scope,
          parameters: queryParamsOf(deliveryQuerySchema),
          responses: {
            200: {
              description: 'The attempts.',
              schema: {
                type: 'object',
                required: ['items'],
                properties: { items: { type: 'array', items: ctx.ref(deliveryAttemptSchema) } }
              },
              headers: noStore
            }
          },
          problems: [404]
        })
      }
    },
    webhooks: webhookEntries(envelope)
  }
}
