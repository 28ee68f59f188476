import type { Actor } from '../auth/principal.ts'
/**
 * Domain events: one per committed change, written by the statement that makes the change
 * (table `events`, migration 006). Whatever reads events (the webhook outbox, an events
 * feed, subscriptions) reads this table, so every writer (REST, bulk, the CLI, later
 * transports) produces them the same way and an idempotent replay or a rolled-back write
 * produces none. docs/events.md describes each kind's `data`.
 */
export const eventKinds = {
  'record.created': 'A record was created, by a single call or a bulk row. data: number, version.',
  'record.updated':
    "A record's payload changed (PATCH or a bulk upsert that changed something). data: number, version, changedFields.",
  'record.transitioned':
    'A workflow transition was fired. data: number, version, transition {key, from, to}, changedFields (fields set with it).',
  'record.deleted': 'A record was soft-deleted. data: number, version.',
  'record.migrated':
    "A record moved to its module's new version through the migration the module's package declares (by the background job, or before a write of a record not yet moved). data: number, version, changedFields, migration {from, to}.",
  'record.overdue':
    "A record's due date (the module's `due` field) passed while it was in a state where it counts; once per record and due date (a changed due date that passes again is a new event). Written by the platform's clock (actor: system date-rules). data: number, version, field, due.",
  'attachment.added':
    'An upload was verified and attached to a record (subject: the record). data: attachmentId, fileName, contentType, size.',
  'export.succeeded':
    'An export job finished; its file can be downloaded (subject: the export). data: format, rows, size.',
  'export.failed': 'An export job failed or gave up (subject: the export). data: format, code.',
  'user.provisioned':
    'A user was created (SCIM, the CLI). Subject: the user. data: version, roles (direct), via (scim|directory).',
  'user.updated':
    'A user changed: attributes (names only), direct roles, group memberships or the roles granted through them; a reactivation. Subject: the user. data: version, changed, rolesGranted, rolesRevoked, groupsJoined, groupsLeft, via.',
  'user.deactivated':
    'A user was deactivated or deleted: its tokens and sessions stop on their next call. Subject: the user. data: version, deleted, rolesRevoked, groupsLeft, via.',
  'group.provisioned':
    'A group was created. Subject: the group. data: version, roles (those it grants), members (count), via.',
  'group.updated':
    'A group changed: display name, external id, the roles it grants, members. Subject: the group. data: version, changed, rolesGranted, rolesRevoked, membersAdded, membersRemoved (counts), via.',
  'group.deleted':
    'A group was deleted; its members lost the roles it granted. Subject: the group. data: version, roles, members (count), via.'
} as const satisfies Record<string, string>

export type EventType = keyof typeof eventKinds

/**
 * The kinds that make the identity audit trail (users and groups: who was given which
 * roles, by whom). The events feed's retention leaves them; the identity log reads them
 * for as long as the tenant exists.
 */
export const identityEventKinds: readonly EventType[] = (Object.keys(eventKinds) as EventType[]).filter(
  (k) => k.startsWith('user.') || k.startsWith('group.')
)

/** SQL expressions, over the rows of a CTE or table, that make one event per row. */
export interface EventSql {
  tenantId: string
  type: string
  actor: string
  moduleKey: string
  subjectId: string
  data: string
}

/**
 * `INSERT INTO events … SELECT … FROM <from>`: the tail of a data-modifying CTE, so the
 * event is written by the same statement as the change and exists exactly when it commits.
 * `orderBy` keeps the events of a batch in its order (an UPDATE returns rows in no set order).
 */
export function insertEvents(e: EventSql, from: string, orderBy?: string): string {
  return `INSERT INTO events (tenant_id, type, actor, module_key, subject_id, data)
    SELECT ${e.tenantId}, ${e.type}, ${e.actor}, ${e.moduleKey}, ${e.subjectId}, ${e.data} FROM ${from}${orderBy ? ` ORDER BY ${orderBy}` : ''}`
}

/** A SQL string literal of an event type, checked against the kinds. */
export const eventType = (type: EventType) => `'${type}'`

/** What an event is about, by the prefix of its type (an attachment event is about its record). */
export type SubjectType = 'record' | 'export' | 'user' | 'group' | 'webhook'
const subjectTypes: Record<string, SubjectType> = {
  record: 'record',
  attachment: 'record',
  export: 'export',
  user: 'user',
  group: 'group',
  webhook: 'webhook'
}

/**
 * An event as clients see it, the same in the events feed and in webhook deliveries: a
 * reference to what changed (names of fields, never their values). No position: it counts
 * every tenant's events.
 */
export interface EventEnvelope {
  id: string
  type: string
  occurredAt: string
  tenantId: string
  actor: Actor | null
  moduleKey: string | null
  subject: { type: SubjectType; id: string | null }
  data: Record<string, unknown>
}

/** An event as read from the log (the feed's page, a webhook claim): what its envelope is made of. */
export interface LoggedEvent {
  id: string
  type: string
  occurredAt: string
  actor: unknown
  moduleKey: string | null
  subjectId: string | null
  data: Record<string, unknown>
}

/** The envelope of a stored event of the tenant. */
export function eventEnvelope(
  tenantId: string,
  e: Omit<LoggedEvent, 'actor' | 'moduleKey' | 'subjectId' | 'data'> &
    Partial<Pick<LoggedEvent, 'actor' | 'moduleKey' | 'subjectId'>> & { data?: Record<string, unknown> | null }
): EventEnvelope {
  return {
    id: e.id,
    type: e.type,
    occurredAt: e.occurredAt,
    tenantId,
    actor: (e.actor as Actor | null | undefined) ?? null,
    moduleKey: e.moduleKey ?? null,
    subject: { type: subjectTypes[e.type.split('.')[0]] ?? 'record', id: e.subjectId ?? null },
    data: e.data ?? {}
  }
}
