import { Type, type Static } from '@feathersjs/typebox'
import { compileData, compileQuery } from '../../core/validation.ts'

/** Secrets replaced by rotations that may still sign at once; a rotation past it is refused until the oldest ends. */
export const previousSecretsKept = 5

const kindsDescription =
  'Event kinds to deliver (docs/events.md), or `webhook.test` alone for a subscription that only takes test pings'
const urlSchema = Type.String({
  minLength: 1,
  maxLength: 2000,
  description: 'The receiver: https (http only where the operator allows it); it must resolve to a public address'
})
const modulesSchema = Type.Union(
  [
    Type.Array(Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z][a-z0-9-]*$' }), {
      uniqueItems: true,
      minItems: 1,
      maxItems: 100
    }),
    Type.Null()
  ],
  {
    description:
      'Only events of these modules (record and attachment events); null: every module. Events without a module (users, groups, exports) are not filtered.'
  }
)

export const webhookSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    url: Type.String(),
    kinds: Type.Array(Type.String()),
    modules: Type.Union([Type.Array(Type.String()), Type.Null()]),
    description: Type.Union([Type.String(), Type.Null()]),
    enabled: Type.Boolean(),
    disabledReason: Type.Union([Type.String(), Type.Null()], {
      description: 'Why the service disabled it (410 Gone, failing too long); null when enabled or disabled by a client'
    }),
    disabledAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    failingSince: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'The first failed attempt since the last success'
    }),
    previousSecretExpiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'Until then the secret before the last rotation signs too'
    }),
    previousSecretsExpireAt: Type.Array(Type.String({ format: 'date-time' }), {
      description: `When each secret that a rotation replaced stops signing, newest first (each keeps its own grace period; at most ${previousSecretsKept} still signing)`
    }),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    createdBy: Type.Unknown(),
    secret: Type.Optional(
      Type.String({ description: 'The signing secret (`whsec_…`): in the create and rotate-secret responses only' })
    )
  },
  { title: 'Webhook', additionalProperties: false }
)
export type WebhookOut = Static<typeof webhookSchema>

export const webhookDataSchema = Type.Object(
  {
    url: urlSchema,
    kinds: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
      minItems: 1,
      maxItems: 50,
      uniqueItems: true,
      description: kindsDescription
    }),
    modules: Type.Optional(modulesSchema),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Null()]))
  },
  { title: 'WebhookCreate', additionalProperties: false }
)
export type WebhookData = Static<typeof webhookDataSchema>
export const webhookDataValidator = compileData(webhookDataSchema)

export const webhookPatchSchema = Type.Object(
  {
    url: Type.Optional(urlSchema),
    kinds: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        minItems: 1,
        maxItems: 50,
        uniqueItems: true,
        description: kindsDescription
      })
    ),
    modules: Type.Optional(modulesSchema),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Null()])),
    enabled: Type.Optional(
      Type.Boolean({
        description: 'false pauses deliveries (events meanwhile are not queued); true resumes and clears disabledReason'
      })
    )
  },
  { title: 'WebhookPatch', additionalProperties: false }
)
export type WebhookPatch = Static<typeof webhookPatchSchema>
export const webhookPatchValidator = compileData(webhookPatchSchema)

export const webhookReplaySchema = Type.Object(
  {
    eventId: Type.Optional(Type.String({ format: 'uuid', description: 'One event to send again' })),
    from: Type.Optional(
      Type.String({
        format: 'date-time',
        description: "With `to`: every event of the subscription's kinds and modules that occurred in [from, to)"
      })
    ),
    to: Type.Optional(Type.String({ format: 'date-time', description: 'With `from`; must be later than `from`' }))
  },
  {
    title: 'WebhookReplay',
    description:
      'Either `eventId` alone, or `from` and `to` together (not both forms). `to` must be later than `from` (checked by the service: JSON Schema cannot compare two values). At most 10,000 events are queued per call.',
    additionalProperties: false,
    // Exactly one form: eventId without from and to, or from and to without eventId (`false`: must be absent).
    oneOf: [
      { properties: { eventId: {}, from: false, to: false }, required: ['eventId'] },
      { properties: { eventId: false, from: {}, to: {} }, required: ['from', 'to'] }
    ],
    dependentRequired: { from: ['to'], to: ['from'] }
  }
)
export type WebhookReplay = Static<typeof webhookReplaySchema>
export const webhookReplayValidator = compileData(webhookReplaySchema)

export const webhookEmptySchema = Type.Object({}, { title: 'WebhookEmpty', additionalProperties: false })
export const webhookEmptyValidator = compileData(webhookEmptySchema)

export const webhookQuerySchema = Type.Object({}, { title: 'WebhookQuery', additionalProperties: false })
export const webhookQueryValidator = compileQuery(webhookQuerySchema)

export const deliveryQuerySchema = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 200, description: 'Attempts to list, newest first; default 50' })
    ),
    eventId: Type.Optional(Type.String({ format: 'uuid', description: 'Only the attempts of this event' }))
  },
  { title: 'WebhookDeliveryQuery', additionalProperties: false }
)
export type DeliveryQuery = Static<typeof deliveryQuerySchema>
export const deliveryQueryValidator = compileQuery(deliveryQuerySchema)

export const deliveryAttemptSchema = Type.Object(
  {
    eventId: Type.String({ format: 'uuid' }),
    type: Type.String(),
    attempt: Type.Integer({ description: '1 for the first attempt of this event (a replay counts again from 1)' }),
    at: Type.String({ format: 'date-time' }),
    statusCode: Type.Union([Type.Integer(), Type.Null()], {
      description: "The receiver's status; null when none came (timeout, connection refused, target refused)"
    }),
    latencyMs: Type.Integer(),
    responseExcerpt: Type.Union([Type.String(), Type.Null()], { description: 'The first 4 KB of the response body' }),
    error: Type.Union([Type.String(), Type.Null()]),
    outcome: Type.Union(
      [Type.Literal('succeeded'), Type.Literal('retrying'), Type.Literal('failed'), Type.Literal('skipped')],
      {
        description:
          "failed: no attempt follows (attempts spent, 410, subscription disabled); skipped: not sent, because the subscription's owner may not see the event (any more), and not retried (`error` says why)"
      }
    )
  },
  { title: 'WebhookDeliveryAttempt', additionalProperties: false }
)
export type DeliveryAttempt = Static<typeof deliveryAttemptSchema>

/** What a receiver gets: a thin reference to the change, never record values (read the subject with your own rights). */
export const webhookEnvelopeSchema = Type.Object(
  {
    id: Type.String({
      format: 'uuid',
      description:
        'The event id, also in the webhook-id header: the same on every retry, so receivers deduplicate on it'
    }),
    type: Type.String(),
    occurredAt: Type.String({ format: 'date-time' }),
    tenantId: Type.String(),
    actor: Type.Unknown({ description: '{ type, id, name } of who made the change' }),
    moduleKey: Type.Union([Type.String(), Type.Null()]),
    subject: Type.Object({
      type: Type.String({ description: 'record, export, user, group or webhook' }),
      id: Type.Union([Type.String(), Type.Null()])
    }),
    data: Type.Record(Type.String(), Type.Unknown(), {
      description: 'Per kind, as docs/events.md lists: field names, never field values'
    })
  },
  { title: 'WebhookEnvelope', additionalProperties: false }
)
