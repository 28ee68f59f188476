import { eventKinds } from '../../core/events/events.ts'
import {
  cursorSchema,
  moduleKeySchema,
  operation,
  queryParam,
  type DocContext,
  type Fragment,
  type JsonSchema
} from '../../core/openapi/builder.ts'
import { actorSchema } from '../records/records.shared.ts'
import { eventsFeedQuerySchema, feedDefaultLimit } from './events-feed.schema.ts'
import { eventsFeedPath } from './events-feed.shared.ts'

const tag = 'Events'

export function describeEventsFeed(ctx: DocContext): Fragment {
  const { config } = ctx
  ctx.define(actorSchema)
  const types = Object.keys(eventKinds)
  const event = ctx.ref(
    {
      type: 'object',
      title: 'Feed event',
      description:
        'One committed change. Events carry field names, never values: read the subject through the API to see it as your rights allow. The kinds and their `data` are listed in docs/events.md.',
      required: ['id', 'type', 'occurredAt', 'tenantId', 'actor', 'moduleKey', 'subject', 'data'],
      properties: {
        id: {
          type: 'string',
          format: 'uuid',
          description: "The event's id: the same event read twice (or delivered by webhook) has the same id."
        },
        type: {
          type: 'string',
          enum: types,
          description: types.map((t) => `\`${t}\`: ${eventKinds[t as keyof typeof eventKinds]}`).join(' ')
        },
        occurredAt: { type: 'string', format: 'date-time' },
        tenantId: { type: 'string', description: 'The tenant id.' },
        actor: {
          oneOf: [{ $ref: '#/components/schemas/Actor' }, { type: 'null' }],
          description: 'Who made the change.'
        },
        moduleKey: {
          type: ['string', 'null'],
          description: 'The module of a record, attachment or export event; null for user and group events.'
        },
        subject: {
          type: 'object',
          required: ['type', 'id'],
          properties: {
            type: { type: 'string', enum: ['record', 'export', 'user', 'group'] },
            id: { type: ['string', 'null'], format: 'uuid' }
          },
          description: "What the event is about (an attachment event's subject is its record)."
        },
        data: {
          type: 'object',
          additionalProperties: true,
          description: 'Per kind (docs/events.md); `changedFields` lists only fields the caller may read.'
        }
      }
    },
    'FeedEvent'
  )
  const page = ctx.ref(
    {
      type: 'object',
      title: 'Page of events',
      required: ['items', 'nextCursor', 'hasMore', 'limit'],
      properties: {
        items: { type: 'array', items: event },
        nextCursor: {
          type: 'string',
          description:
            'Pass as `after` for the events that follow; always given, also on an empty page, so a client polls with it.'
        },
        hasMore: {
          type: 'boolean',
          description:
            'More events follow already: read on at once. False: caught up; poll again later with `nextCursor`.'
        },
        limit: { type: 'integer' }
      }
    },
    'FeedEventPage'
  )
  const query = eventsFeedQuerySchema(config.pagination.maxLimit)
  const keys = ctx.modules.map((m) => m.definition.key)
  const plain = (name: keyof typeof query.properties): JsonSchema => {
    const { description: _, ...schema } = JSON.parse(JSON.stringify(query.properties[name]))
    return schema
  }
  const defaultLimit = Math.min(feedDefaultLimit, config.pagination.maxLimit)
  return {
    tags: [
      {
        name: tag,
        description: `The tenant's events in order, for clients that cannot receive webhooks or catch up after an outage. The feed shows the last ${config.events.retentionDays} days (user and group events are kept longer, for the identity log).`
      }
    ],
    paths: {
      [`/${eventsFeedPath}`]: {
        get: operation({
          operationId: 'listEvents',
          tag,
          summary: 'Read the events feed',
          description: [
            "The tenant's events, oldest first, a page at a time: pass each page's `nextCursor` as `after`. An event appears once its transaction and every transaction that began before it has ended, so paging never skips an event committed late and never shows one twice.",
            "Each event needs the `read` right on its module (the caller's row rule applies); export events are their requester's or an admin's, user and group events an admin's.",
            `Events older than ${config.events.retentionDays} days leave the feed (and are removed, but for user and group events); a cursor whose following events were removed is 410 \`events.cursor_expired\`: resync, then read without \`after\`.`
          ].join(' '),
          scope: 'events:read',
          parameters: [
            queryParam('after', 'The `nextCursor` of the previous page. Without it, from the oldest event kept.', {
              ...cursorSchema,
              ...plain('after')
            }),
            queryParam('limit', `Page size, 1 to ${config.pagination.maxLimit}; default ${defaultLimit}.`, {
              ...plain('limit'),
              default: defaultLimit
            }),
            queryParam('types', 'Only these event types, comma-separated.', plain('types'), {
              example: 'record.created,record.transitioned'
            }),
            queryParam(
              'moduleKey',
              'Only events of this module (leaves out user and group events).',
              keys.length ? { type: 'string', enum: keys } : moduleKeySchema
            )
          ],
          responses: {
            200: {
              description: 'A page of events, and the cursor to read on (or poll) from.',
              schema: page,
              example: {
                items: [
                  {
                    id: '5b0f3c8e-7d1a-4c2b-9e6f-1a2b3c4d5e6f',
                    type: 'record.transitioned',
                    occurredAt: '2026-11-22T09:15:00.000Z',
                    tenantId: 'demo',
                    actor: { type: 'user', id: '0b7e6f3a-5c2d-4e1f-8a9b-7c6d5e4f3a2b', name: 'Dana Reyes' },
                    moduleKey: 'incident',
                    subject: { type: 'record', id: '3f6c1c9e-2b1d-4c8e-9f0a-1b2c3d4e5f60' },
                    data: {
                      number: 'INC-2026-00042',
                      version: 3,
                      transition: { key: 'start-investigation', from: 'reported', to: 'investigating' },
                      changedFields: ['investigationLead']
                    }
                  }
                ],
                nextCursor: 'A8mS1Nq0b3Pz.Xr2k9VdQwE7aLh3sTg0yNc',
                hasMore: false,
                limit: defaultLimit
              }
            }
          },
          problems: [404, 410]
        })
      }
    }
  }
}
