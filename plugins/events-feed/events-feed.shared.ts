import type { Actor } from '../../core/auth/principal.ts'

export const eventsFeedPath = 'api/v1/events'
export const eventsFeedMethods = ['find'] as const

/** What an event is about, by the prefix of its type. */
export type SubjectType = 'record' | 'export' | 'user' | 'group'
const subjectOf: Record<string, SubjectType> = { record: 'record', attachment: 'record', export: 'export', user: 'user', group: 'group' }

/** An event as clients see it (feed items; the shape a webhook delivery can share). No position: it counts every tenant's events. */
export interface EventEnvelope {
  id: string
  type: string
  occurredAt: string
  tenant: string
  actor: Actor | null
  moduleKey: string | null
  subject: { type: SubjectType; id: string | null }
  data: Record<string, unknown>
}

/** The envelope of a stored event of `tenant`. */
export function eventEnvelope(tenant: string, e: { id: string; type: string; occurredAt: string; actor: unknown; moduleKey: string | null; subjectId: string | null; data: Record<string, unknown> }): EventEnvelope {
  return {
    id: e.id,
    type: e.type,
    occurredAt: e.occurredAt,
    tenant,
    actor: (e.actor as Actor | null) ?? null,
    moduleKey: e.moduleKey,
    subject: { type: subjectOf[e.type.split('.')[0]] ?? 'record', id: e.subjectId },
    data: e.data ?? {}
  }
}
