import type pg from 'pg'
import { ApiError } from '../errors/index.ts'
import { credentialsChannel } from './changes.ts'
import type { EventType } from '../events/events.ts'
import type { Actor } from './principal.ts'

/**
 * What every change of the user directory (core/auth/users.ts) leaves behind, inside its own
 * transaction: the domain events (docs/events.md: user.*, group.*), with the roles each
 * affected user gained or lost, and the NOTIFY that makes every instance drop cached
 * resolutions (delivered at commit, so a rolled-back change announces nothing).
 */

/** SQL for a user's effective roles (direct plus through groups), over `users u`. */
export const effectiveRolesSql = `ARRAY(SELECT unnest(u.roles) UNION SELECT unnest(g.roles) FROM group_members gm
  JOIN groups g ON g.tenant_id = gm.tenant_id AND g.id = gm.group_id WHERE gm.tenant_id = u.tenant_id AND gm.user_id = u.id ORDER BY 1)`

/** Who changed the directory; the CLI and internal callers that name nobody are the system. */
export const directoryActor: Actor = { type: 'system', id: 'directory', name: 'directory' }

/** Which door a change came through: SCIM provisioning or the directory itself (CLI, settings). */
export type Via = 'scim' | 'directory'

export interface DirectoryEvent {
  type: EventType
  subjectId: string
  data: Record<string, unknown>
}

/** Effective roles (direct and through groups) of the tenant's users among `ids`, by id. */
export async function effectiveRoles(
  client: pg.PoolClient,
  tenantId: string,
  ids: readonly string[]
): Promise<Map<string, string[]>> {
  if (!ids.length) return new Map()
  const { rows } = await client.query<{ id: string; roles: string[] }>(
    `SELECT u.id::text AS id, ${effectiveRolesSql} AS roles FROM users u WHERE u.tenant_id = $1 AND u.id = ANY($2::uuid[])`,
    [tenantId, [...new Set(ids)]]
  )
  return new Map(rows.map((r) => [r.id, r.roles]))
}

/** Group ids of the tenant's users among `ids`, by user id. */
export async function memberships(
  client: pg.PoolClient,
  tenantId: string,
  ids: readonly string[]
): Promise<Map<string, string[]>> {
  if (!ids.length) return new Map()
  const { rows } = await client.query<{ id: string; groups: string[] }>(
    `SELECT u.id::text AS id, ARRAY(SELECT gm.group_id::text FROM group_members gm WHERE gm.tenant_id = u.tenant_id AND gm.user_id = u.id ORDER BY 1) AS groups
       FROM users u WHERE u.tenant_id = $1 AND u.id = ANY($2::uuid[])`,
    [tenantId, [...new Set(ids)]]
  )
  return new Map(rows.map((r) => [r.id, r.groups]))
}

export const added = (before: readonly string[] = [], after: readonly string[] = []) =>
  after.filter((r) => !before.includes(r))
export const removed = (before: readonly string[] = [], after: readonly string[] = []) =>
  before.filter((r) => !after.includes(r))

/**
 * The users among `ids` whose effective roles or groups changed between two snapshots, as
 * `user.updated` events (`changed` names what changed), skipping `skip` (users whose own
 * event already says it). Users who are deactivated get none: their access ended anyway.
 */
export function accessEvents(
  before: { roles: Map<string, string[]>; groups: Map<string, string[]> },
  after: { roles: Map<string, string[]>; groups: Map<string, string[]> },
  extra: (id: string) => Record<string, unknown>,
  skip: ReadonlySet<string> = new Set()
): DirectoryEvent[] {
  const out: DirectoryEvent[] = []
  for (const id of new Set([...before.roles.keys(), ...after.roles.keys()])) {
    if (skip.has(id)) continue
    const rolesGranted = added(before.roles.get(id), after.roles.get(id))
    const rolesRevoked = removed(before.roles.get(id), after.roles.get(id))
    const groupsJoined = added(before.groups.get(id), after.groups.get(id))
    const groupsLeft = removed(before.groups.get(id), after.groups.get(id))
    if (!rolesGranted.length && !rolesRevoked.length && !groupsJoined.length && !groupsLeft.length) continue
    const changed = [
      ...(groupsJoined.length || groupsLeft.length ? ['groups'] : []),
      ...(rolesGranted.length || rolesRevoked.length ? ['roles'] : [])
    ]
    out.push({
      type: 'user.updated',
      subjectId: id,
      data: { changed, rolesGranted, rolesRevoked, groupsJoined, groupsLeft, ...extra(id) }
    })
  }
  return out
}

/** Writes events in the transaction of the change they describe (one statement for all). */
export async function writeEvents(
  client: pg.PoolClient,
  tenantId: string,
  actor: Actor,
  events: readonly DirectoryEvent[]
) {
  if (!events.length) return
  await client.query(
    `INSERT INTO events (tenant_id, type, actor, subject_id, data)
     SELECT $1, e.type, $2::jsonb, e.subject::uuid, e.data FROM jsonb_to_recordset($3::jsonb) AS e(type text, subject text, data jsonb)`,
    [
      tenantId,
      JSON.stringify(actor),
      JSON.stringify(events.map((e) => ({ type: e.type, subject: e.subjectId, data: e.data })))
    ]
  )
}

/** 412: the change was based on a version of the user or group that is no longer current. */
export function versionMismatch(kind: 'user' | 'group', id: string, current: number) {
  return new ApiError(
    'precondition-failed',
    `${kind}.version_mismatch`,
    `The ${kind} ${id} is at version ${current}; If-Match names another. Read it again and re-apply the change.`,
    { currentVersion: current }
  )
}

/** NOTIFY (every instance drops cached resolutions of these users), delivered when the change commits. */
export async function notifyUsers(client: pg.PoolClient, ids: readonly string[]) {
  if (ids.length)
    await client.query("SELECT pg_notify($1, 'u:' || id) FROM unnest($2::text[]) AS id", [
      credentialsChannel,
      [...new Set(ids)]
    ])
}
