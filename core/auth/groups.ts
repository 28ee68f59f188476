import type pg from 'pg'
import { isoUtc as iso, transaction } from '../db/index.ts'
import { problems } from '../errors/index.ts'
import { validationError } from '../validation.ts'
import {
  accessEvents,
  added,
  directoryActor,
  effectiveRoles,
  memberships,
  notifyUsers,
  removed,
  versionMismatch,
  writeEvents,
  type DirectoryEvent
} from './directory-log.ts'
import { assertHoldsRoles } from './escalation.ts'
import type { Actor, Principal } from './principal.ts'
import type { ChangeOptions } from './users.ts'
import { tenantPool } from '../db/tenant-scope.ts'

/** The actor a change is written with: the one named, else the caller's, else the directory's. */
export const actorOf = (o: ChangeOptions): Actor => o.by ?? o.as?.actor ?? directoryActor

/**
 * Groups of the user directory (UserDirectory delegates here). A group grants roles to its
 * members: the roles it names (`namedRoles`: the SCIM records extension, the CLI), or, when
 * it names none, the role its displayName is (a group called "safety-manager" grants
 * safety-manager), so an identity provider's groups map onto roles without configuration.
 */

export interface GroupInfo {
  id: string
  tenantId: string
  displayName: string
  externalId: string | null
  /** The roles the group grants its members. */
  roles: string[]
  /** The roles the group names itself; null when it grants the role its displayName names. */
  namedRoles: string[] | null
  /** Member user ids. */
  members: string[]
  version: number
  createdAt: string
  updatedAt: string
}

export interface GroupMember {
  userId: string
  /** What to show for the member: the label the client sent when it added it, else the user's name. */
  display: string
}

/** A member to add: the user's id and, optionally, the client's label for it. */
export interface NewMember {
  userId: string
  display?: string | null
}

export interface GroupInput {
  displayName: string
  externalId?: string | null
  /** The CLI's roles: named by the group (none given: none). */
  roles?: string[]
  /** SCIM: the roles named by the records extension, or null to grant the displayName's role. */
  namedRoles?: string[] | null
  members?: NewMember[]
}

export interface GroupChanges {
  displayName?: string
  externalId?: string | null
  namedRoles?: string[] | null
  /** The whole membership (PUT); else the members to add and remove. */
  replaceMembers?: NewMember[]
  addMembers?: NewMember[]
  removeMembers?: string[]
  /** Every member removed. */
  removeAllMembers?: boolean
}

const groupSelect = `SELECT g.tenant_id AS "tenantId", g.id, g.display_name AS "displayName", g.external_id AS "externalId", g.roles, g.named_roles AS "namedRoles",
  ARRAY(SELECT gm.user_id::text FROM group_members gm WHERE gm.tenant_id = g.tenant_id AND gm.group_id = g.id ORDER BY 1) AS members, g.version,
  ${iso('g.created_at')} AS "createdAt", ${iso('g.updated_at')} AS "updatedAt" FROM groups g`

const same = (a: readonly string[] = [], b: readonly string[] = []) =>
  a.length === b.length && a.every((r) => b.includes(r))

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export class GroupWrites {
  constructor(
    private readonly pool: pg.Pool,
    private readonly checkRoles: (tenantId: string, roles: readonly string[], pointer: string) => void,
    private readonly knownRoles: (tenantId: string) => string[],
    private readonly onAccessChange: (what: { userIds?: string[]; tenantId?: string }) => void
  ) {}

  /** Every call names its tenant, and runs in that tenant's scope (core/db/tenant-scope.ts), whoever calls. */
  private db(tenantId: string): pg.Pool {
    return tenantPool(this.pool, tenantId)
  }

  /** What a group grants: the roles it names, else the role its displayName is (any case), else none. */
  granted(tenantId: string, named: string[] | null, displayName: string): string[] {
    if (named) return [...new Set(named)]
    const role = displayName.trim().toLowerCase()
    return this.knownRoles(tenantId).includes(role) ? [role] : []
  }

  /** Bounds of what is indexed: refused before the database would. */
  private checkLengths(g: { displayName?: string; externalId?: string | null }) {
    const found = (['displayName', 'externalId'] as const)
      .filter((k) => typeof g[k] === 'string' && g[k].length > 1024)
      .map((k) => ({ pointer: `/${k}`, field: k, code: 'maxLength', detail: 'must be at most 1024 characters' }))
    if (found.length) throw validationError(found)
  }

  private exists(err: unknown, displayName: string | undefined): never {
    if ((err as { code?: string }).code === '23505')
      throw problems.conflict('group.exists', `A group named "${displayName}" already exists in this tenant.`)
    throw err
  }

  /** The tenant's live users among `members` (others are no user of the tenant: left out), each once. */
  private async liveMembers(
    client: pg.PoolClient,
    tenantId: string,
    members: readonly NewMember[]
  ): Promise<NewMember[]> {
    const ids = [
      ...new Set(
        members
          .map((m) => m.userId)
          .filter((id) => uuid.test(id))
          .map((id) => id.toLowerCase())
      )
    ]
    if (!ids.length) return []
    const { rows } = await client.query<{ id: string }>(
      'SELECT id::text FROM users WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND deleted_at IS NULL',
      [tenantId, ids]
    )
    const live = new Set(rows.map((r) => r.id))
    const seen = new Set<string>()
    return members.flatMap((m) => {
      const id = m.userId.toLowerCase()
      if (!live.has(id) || seen.has(id)) return []
      seen.add(id)
      return [{ userId: id, display: m.display ?? null }]
    })
  }

  async create(tenantId: string, input: GroupInput, o: ChangeOptions = {}): Promise<GroupInfo> {
    if (typeof input.displayName !== 'string' || !input.displayName.trim())
      throw validationError([
        { pointer: '/displayName', field: 'displayName', code: 'required', detail: 'must be a non-empty string' }
      ])
    this.checkLengths(input)
    const named = input.namedRoles !== undefined ? input.namedRoles : (input.roles ?? [])
    if (named) this.checkRoles(tenantId, named, '/roles')
    const roles = this.granted(tenantId, named, input.displayName)
    assertHoldsRoles(o.as, roles, 'This group would grant')
    const { id, userIds } = await transaction(this.db(tenantId), async (client) => {
      const { rows } = await client
        .query(
          'INSERT INTO groups (tenant_id, display_name, external_id, roles, named_roles) VALUES ($1, $2, $3, $4, $5) RETURNING id::text, version',
          [tenantId, input.displayName.trim(), input.externalId ?? null, roles, named ? [...new Set(named)] : null]
        )
        .catch((err) => this.exists(err, input.displayName))
      const id = rows[0].id as string
      const members = await this.liveMembers(client, tenantId, input.members ?? [])
      const via = o.via ?? 'directory'
      const events: DirectoryEvent[] = [
        {
          type: 'group.provisioned',
          subjectId: id,
          data: { version: rows[0].version, roles, members: members.length, via }
        }
      ]
      if (members.length)
        events.push(...(await this.changeMembers(client, tenantId, id, { add: members }, { groupId: id, via }, o.as)))
      await writeEvents(client, tenantId, actorOf(o), events)
      return { id, userIds: members.map((m) => m.userId) }
    })
    if (userIds.length) this.onAccessChange({ userIds })
    return (await this.get(tenantId, id))!
  }

  async get(tenantId: string, idOrName: string): Promise<GroupInfo | undefined> {
    const { rows } = uuid.test(idOrName)
      ? await this.db(tenantId).query(`${groupSelect} WHERE g.tenant_id = $1 AND g.id = $2`, [tenantId, idOrName])
      : await this.db(tenantId).query(`${groupSelect} WHERE g.tenant_id = $1 AND g.display_name = $2`, [
          tenantId,
          idOrName
        ])
    return rows[0]
  }

  async list(tenantId: string): Promise<GroupInfo[]> {
    const { rows } = await this.db(tenantId).query(`${groupSelect} WHERE g.tenant_id = $1 ORDER BY g.display_name`, [
      tenantId
    ])
    return rows
  }

  async page(
    tenantId: string,
    where: { sql: string; values: unknown[] },
    offset: number,
    limit: number
  ): Promise<{ total: number; groups: GroupInfo[] }> {
    const n = where.values.length
    const condition = where.sql ? `AND (${where.sql})` : ''
    const total = await this.db(tenantId).query<{ n: number }>(
      `SELECT count(*)::int AS n FROM groups g WHERE g.tenant_id = $${n + 1} ${condition}`,
      [...where.values, tenantId]
    )
    if (!limit) return { total: total.rows[0].n, groups: [] }
    const { rows } = await this.db(tenantId).query(
      `${groupSelect} WHERE g.tenant_id = $${n + 1} ${condition} ORDER BY g.created_at, g.id OFFSET $${n + 2} LIMIT $${n + 3}`,
      [...where.values, tenantId, offset, limit]
    )
    return { total: total.rows[0].n, groups: rows }
  }

  async members(tenantId: string, groupId: string): Promise<GroupMember[]> {
    return (await this.membersOf(tenantId, [groupId])).get(groupId) ?? []
  }

  /** The members of several groups (a page of them) in one statement, by group id. */
  async membersOf(tenantId: string, groupIds: readonly string[]): Promise<Map<string, GroupMember[]>> {
    const out = new Map<string, GroupMember[]>(groupIds.map((id) => [id, []]))
    if (!groupIds.length) return out
    const { rows } = await this.db(tenantId).query<GroupMember & { groupId: string }>(
      `SELECT gm.group_id::text AS "groupId", gm.user_id::text AS "userId", coalesce(gm.display, u.display_name, u.user_name) AS display
         FROM group_members gm JOIN users u ON u.tenant_id = gm.tenant_id AND u.id = gm.user_id
        WHERE gm.tenant_id = $1 AND gm.group_id = ANY($2::uuid[]) ORDER BY gm.added_at, gm.user_id`,
      [tenantId, groupIds]
    )
    for (const { groupId, ...member } of rows) out.get(groupId)?.push(member)
    return out
  }

  /**
   * Adds and removes members inside a transaction, and returns the `user.updated` events of
   * the members whose roles or groups changed (computed before and after, so a user who keeps
   * a role through another group or directly is told only about the group).
   */
  private async changeMembers(
    client: pg.PoolClient,
    tenantId: string,
    groupId: string,
    m: { add?: NewMember[]; remove?: string[]; removeAll?: boolean },
    extra: Record<string, unknown>,
    as: Principal | undefined
  ) {
    const removing = m.removeAll
      ? (
          await client.query<{ id: string }>(
            'SELECT user_id::text AS id FROM group_members WHERE tenant_id = $1 AND group_id = $2',
            [tenantId, groupId]
          )
        ).rows.map((r) => r.id)
      : (m.remove ?? []).filter((id) => uuid.test(id)).map((id) => id.toLowerCase())
    const affected = [...new Set([...(m.add ?? []).map((a) => a.userId), ...removing])]
    const before = {
      roles: await effectiveRoles(client, tenantId, affected),
      groups: await memberships(client, tenantId, affected)
    }
    // Joining or leaving a group is a change of the user: only by a caller holding what the user holds.
    for (const id of affected) assertHoldsRoles(as, before.roles.get(id) ?? [], `User ${id} holds`)
    if (removing.length)
      await client.query(
        'DELETE FROM group_members WHERE tenant_id = $1 AND group_id = $2 AND user_id = ANY($3::uuid[])',
        [tenantId, groupId, removing]
      )
    if (m.add?.length) {
      await client.query(
        // clock_timestamp(): members keep the order they were sent in.
        `INSERT INTO group_members (tenant_id, group_id, user_id, display, added_at)
         SELECT $1, $2, (a.e->>'user_id')::uuid, a.e->>'display', clock_timestamp() FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS a(e, n) ORDER BY a.n ON CONFLICT DO NOTHING`,
        [tenantId, groupId, JSON.stringify(m.add.map((a) => ({ user_id: a.userId, display: a.display ?? null })))]
      )
    }
    const after = {
      roles: await effectiveRoles(client, tenantId, affected),
      groups: await memberships(client, tenantId, affected)
    }
    const events = accessEvents(before, after, () => extra)
    const changedUsers = events.map((e) => e.subjectId)
    if (changedUsers.length)
      await client.query(
        'UPDATE users SET version = version + 1, updated_at = now() WHERE tenant_id = $1 AND id = ANY($2::uuid[])',
        [tenantId, changedUsers]
      )
    const joined = affected.filter((id) => added(before.groups.get(id), after.groups.get(id)).includes(groupId)).length
    const left = affected.filter((id) => removed(before.groups.get(id), after.groups.get(id)).includes(groupId)).length
    // Widening is announced too: a member added is to act with the group's roles on its next call, not once a cache expires.
    return Object.assign(events, {
      joined,
      left,
      narrowed: affected.filter((id) => !same(before.roles.get(id), after.roles.get(id)))
    })
  }

  async update(tenantId: string, groupId: string, c: GroupChanges, o: ChangeOptions = {}): Promise<GroupInfo> {
    const notFound = () => problems.notFound('group.not_found', `No group ${groupId} in tenant ${tenantId}.`)
    if (!uuid.test(groupId)) throw notFound()
    if (c.displayName !== undefined && (typeof c.displayName !== 'string' || !c.displayName.trim()))
      throw validationError([
        { pointer: '/displayName', field: 'displayName', code: 'required', detail: 'must be a non-empty string' }
      ])
    if (c.namedRoles) this.checkRoles(tenantId, c.namedRoles, '/roles')
    this.checkLengths(c)
    const via = o.via ?? 'directory'
    const result = await transaction(this.db(tenantId), async (client) => {
      const { rows } = await client.query(
        'SELECT id::text, display_name, external_id, roles, named_roles, version FROM groups WHERE tenant_id = $1 AND id = $2 FOR UPDATE',
        [tenantId, groupId]
      )
      const g = rows[0]
      if (!g) throw notFound()
      if (o.ifVersion !== undefined && o.ifVersion !== g.version) throw versionMismatch('group', groupId, g.version)
      const displayName = c.displayName?.trim() ?? g.display_name
      const externalId = c.externalId !== undefined ? c.externalId : g.external_id
      const named: string[] | null =
        c.namedRoles !== undefined ? (c.namedRoles ? [...new Set(c.namedRoles)] : null) : g.named_roles
      const roles = this.granted(tenantId, named, displayName)
      assertHoldsRoles(o.as, [...g.roles, ...roles], 'This group grants')
      const changed = [
        ...(displayName !== g.display_name ? ['displayName'] : []),
        ...(externalId !== g.external_id ? ['externalId'] : []),
        ...(JSON.stringify(named) !== JSON.stringify(g.named_roles) ? ['namedRoles'] : [])
      ]
      const rolesGranted = added(g.roles, roles)
      const rolesRevoked = removed(g.roles, roles)
      // Roles first: members whose roles change with the group's are affected too.
      const current = (
        await client.query<{ id: string }>(
          'SELECT user_id::text AS id FROM group_members WHERE tenant_id = $1 AND group_id = $2',
          [tenantId, groupId]
        )
      ).rows.map((r) => r.id)
      const rolesChange = rolesGranted.length || rolesRevoked.length
      const before = rolesChange
        ? {
            roles: await effectiveRoles(client, tenantId, current),
            groups: await memberships(client, tenantId, current)
          }
        : undefined
      if (changed.length) {
        await client
          .query(
            'UPDATE groups SET display_name = $3, external_id = $4, named_roles = $5, roles = $6 WHERE tenant_id = $1 AND id = $2',
            [tenantId, groupId, displayName, externalId, named, roles]
          )
          .catch((err) => this.exists(err, displayName))
      }
      const events: DirectoryEvent[] = []
      let narrowed: string[] = []
      if (before) {
        const after = {
          roles: await effectiveRoles(client, tenantId, current),
          groups: await memberships(client, tenantId, current)
        }
        const roleEvents = accessEvents(before, after, () => ({ groupId, via }))
        events.push(...roleEvents)
        narrowed = current.filter((id) => !same(before.roles.get(id), after.roles.get(id)))
      }
      // Membership: the whole of it (PUT), or what is added and removed (PATCH).
      let add = c.addMembers ? await this.liveMembers(client, tenantId, c.addMembers) : []
      // Only members can leave: an id that is no member (or no user) is nothing to remove.
      // Sets, not includes: a PUT of 10,000 members against 10,000 was 10^8 comparisons.
      const isMember = new Set(current)
      let remove = (c.removeMembers ?? []).map((id) => id.toLowerCase()).filter((id) => isMember.has(id))
      if (c.replaceMembers) {
        const wanted = await this.liveMembers(client, tenantId, c.replaceMembers)
        const wantedIds = new Set(wanted.map((w) => w.userId))
        add = wanted.filter((w) => !isMember.has(w.userId))
        remove = current.filter((id) => !wantedIds.has(id))
      }
      const removing = new Set(remove)
      add = add.filter((a) => !isMember.has(a.userId) || removing.has(a.userId))
      const membership =
        add.length || remove.length || (c.removeAllMembers && current.length)
          ? await this.changeMembers(
              client,
              tenantId,
              groupId,
              { add, remove, removeAll: c.removeAllMembers },
              { groupId, via },
              o.as
            )
          : undefined
      if (membership) {
        events.push(...membership)
        narrowed.push(...membership.narrowed)
      }
      const membersChanged = !!membership && (membership.joined > 0 || membership.left > 0)
      if (!changed.length && !membersChanged) return { narrowed: [], affected: [] }
      const { rows: v } = await client.query(
        'UPDATE groups SET version = version + 1, updated_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING version',
        [tenantId, groupId]
      )
      events.unshift({
        type: 'group.updated',
        subjectId: groupId,
        data: {
          version: v[0].version,
          changed: [...changed, ...(membersChanged ? ['members'] : [])],
          rolesGranted,
          rolesRevoked,
          membersAdded: membership?.joined ?? 0,
          membersRemoved: membership?.left ?? 0,
          via
        }
      })
      await writeEvents(client, tenantId, actorOf(o), events)
      if (narrowed.length) await notifyUsers(client, narrowed)
      return { narrowed, affected: events.filter((e) => e.type === 'user.updated').map((e) => e.subjectId) }
    })
    if (result.narrowed.length) this.onAccessChange({ userIds: result.narrowed })
    return (await this.get(tenantId, groupId))!
  }

  /** Deletes a group: its members lose what it granted on their next call. */
  async remove(tenantId: string, groupId: string, o: ChangeOptions = {}): Promise<void> {
    const notFound = () => problems.notFound('group.not_found', `No group ${groupId} in tenant ${tenantId}.`)
    if (!uuid.test(groupId)) throw notFound()
    const narrowed = await transaction(this.db(tenantId), async (client) => {
      const { rows } = await client.query(
        'SELECT roles, version FROM groups WHERE tenant_id = $1 AND id = $2 FOR UPDATE',
        [tenantId, groupId]
      )
      if (!rows[0]) throw notFound()
      if (o.ifVersion !== undefined && o.ifVersion !== rows[0].version)
        throw versionMismatch('group', groupId, rows[0].version)
      assertHoldsRoles(o.as, rows[0].roles, 'This group grants')
      const via = o.via ?? 'directory'
      const members = await this.changeMembers(client, tenantId, groupId, { removeAll: true }, { groupId, via }, o.as)
      await client.query('DELETE FROM groups WHERE tenant_id = $1 AND id = $2', [tenantId, groupId])
      await writeEvents(client, tenantId, actorOf(o), [
        {
          type: 'group.deleted',
          subjectId: groupId,
          data: { version: rows[0].version, roles: rows[0].roles, members: members.left, via }
        },
        ...members
      ])
      if (members.narrowed.length) await notifyUsers(client, members.narrowed)
      return members.narrowed
    })
    if (narrowed.length) this.onAccessChange({ userIds: narrowed })
  }
}
