import type pg from 'pg'
import { isoUtc as iso, transaction } from '../db/index.ts'
import { charge } from '../limits/budget.ts'
import { problems, type FieldProblem } from '../errors/index.ts'
import type { TenantDirectory } from '../tenancy/tenants.ts'
import { validationError } from '../validation.ts'
import {
  added,
  effectiveRolesSql,
  notifyUsers,
  removed,
  versionMismatch,
  writeEvents,
  type DirectoryEvent,
  type Via
} from './directory-log.ts'
import { actorOf, GroupWrites, type GroupInfo, type GroupInput, type GroupChanges, type GroupMember } from './groups.ts'
import { hashPassword, passwordProblem, verifyPassword } from './passwords.ts'
import { assertHoldsRoles, identityAttributes } from './escalation.ts'
import { adminRole, type Actor, type Principal } from './principal.ts'
import { tenantPool } from '../db/tenant-scope.ts'

export { effectiveRolesSql } from './directory-log.ts'
export type { GroupInfo, GroupInput, GroupChanges, GroupMember } from './groups.ts'

/** A multi-valued SCIM attribute value (emails, phoneNumbers): `value`, `type`, `primary`, `display`. */
export type MultiValue = Record<string, unknown> & { value?: unknown; type?: unknown; primary?: unknown }

export interface UserInfo {
  id: string
  tenantId: string
  userName: string
  displayName: string | null
  /** The primary e-mail address (of `emails`). */
  email: string | null
  externalId: string | null
  active: boolean
  /** Roles held directly. */
  roles: string[]
  groups: Array<{ id: string; displayName: string }>
  /** Direct roles and those of the user's groups: what the user's tokens and sessions act with. */
  effectiveRoles: string[]
  /** SCIM's `name` object (givenName, familyName, formatted…), as provisioned. */
  name: Record<string, unknown> | null
  emails: MultiValue[]
  phoneNumbers: MultiValue[]
  /** The Enterprise User extension (employeeNumber, department, manager…). */
  enterprise: Record<string, unknown> | null
  /** Every other SCIM core attribute (addresses, title, locale…), kept as sent. */
  attributes: Record<string, unknown>
  /** +1 per change: SCIM's meta.version and ETag. */
  version: number
  createdAt: string
  updatedAt: string
  lastSignInAt: string | null
}

/** What a write sets; a field left out keeps its value. */
export interface UserInput {
  userName?: string
  displayName?: string | null
  email?: string | null
  externalId?: string | null
  active?: boolean
  roles?: string[]
  name?: Record<string, unknown> | null
  emails?: MultiValue[]
  phoneNumbers?: MultiValue[]
  enterprise?: Record<string, unknown> | null
  attributes?: Record<string, unknown>
}

/** A condition over the directory's rows (SCIM filters, plugins/scim/scim.sql.ts), with the per-row work it does beyond one step. */
export interface FilterCondition {
  sql: string
  values: unknown[]
  elements?: string
}

/** Charges the request's budget for a filter's work over the tenant's rows, before the filter runs. */
async function chargeFilter(pool: pg.Pool, from: string, elements: string, tenantId: string) {
  const { rows } = await pool.query<{ n: string }>(
    `SELECT (count(*) + coalesce(sum(${elements}), 0))::text AS n FROM ${from}`,
    [tenantId]
  )
  charge(Number(rows[0].n), 'scim filter elements')
}

/** Who makes a change, through which door, and on which version of the user (SCIM's If-Match). */
export interface ChangeOptions {
  by?: Actor
  via?: Via
  ifVersion?: number
  /**
   * The caller whose roles bound the change (core/auth/escalation.ts): every door that acts
   * for a credential passes it. Left out, the change is a system action (the CLI, jobs).
   */
  as?: Principal
}

// Deleted users (SCIM DELETE) stay as rows for the names records and the audit trail show, and are no user otherwise.
const userSelect = `SELECT u.tenant_id AS "tenantId", u.id, u.user_name AS "userName", u.display_name AS "displayName", u.email,
  u.external_id AS "externalId", u.active, u.roles,
  coalesce((SELECT json_agg(json_build_object('id', g.id, 'displayName', g.display_name) ORDER BY g.display_name) FROM group_members gm
    JOIN groups g ON g.tenant_id = gm.tenant_id AND g.id = gm.group_id WHERE gm.tenant_id = u.tenant_id AND gm.user_id = u.id), '[]'::json) AS groups,
  ${effectiveRolesSql} AS "effectiveRoles", u.name, u.emails, u.phone_numbers AS "phoneNumbers", u.enterprise, u.attributes, u.version,
  ${iso('u.created_at')} AS "createdAt", ${iso('u.updated_at')} AS "updatedAt", ${iso('u.last_sign_in_at')} AS "lastSignInAt"
  FROM (SELECT * FROM users WHERE deleted_at IS NULL) u`

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Columns a UserInput field is stored in (JSON ones as jsonb). */
const columns: Record<Exclude<keyof UserInput, 'roles'>, { column: string; json?: boolean }> = {
  userName: { column: 'user_name' },
  displayName: { column: 'display_name' },
  email: { column: 'email' },
  externalId: { column: 'external_id' },
  active: { column: 'active' },
  name: { column: 'name', json: true },
  emails: { column: 'emails', json: true },
  phoneNumbers: { column: 'phone_numbers', json: true },
  enterprise: { column: 'enterprise', json: true },
  attributes: { column: 'attributes', json: true }
}

/** The e-mail address kept in `email`: the primary one of `emails`, else the first. */
export function primaryEmail(emails: readonly MultiValue[] | undefined): string | null {
  const pick =
    emails?.find((e) => e?.primary === true && typeof e.value === 'string') ??
    emails?.find((e) => typeof e?.value === 'string')
  return (pick?.value as string | undefined) ?? null
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null)

/**
 * Most values a user holds in one multi-valued attribute (emails, phoneNumbers, addresses,
 * roles, entitlements…). Identity providers send a handful (Entra ID and Okta: one to three
 * e-mails, phone numbers and addresses); the bound keeps every filter and PATCH over a user
 * small (docs/scim.md, Limits).
 */
export const maxValuesPerAttribute = 100

/**
 * Users and groups of each tenant, and the roles they hold: the one place that changes them,
 * for the CLI, the settings pages and SCIM alike. Each change runs in one transaction that
 * also writes its events (user.*, group.*) and announces what may have narrowed, so cached
 * tokens and sessions pick it up on their next call, on every instance.
 */
export class UserDirectory {
  private readonly groupWrites: GroupWrites

  constructor(
    private readonly pool: pg.Pool,
    private readonly tenants: TenantDirectory,
    /** Told after each committed change, before the NOTIFY reaches this instance (credentials drop their cache at once). */
    private readonly onAccessChange: (what: { userIds?: string[]; tenantId?: string }) => void = () => undefined
  ) {
    this.groupWrites = new GroupWrites(
      pool,
      (tenantId, roles, pointer) => this.checkRoles(tenantId, roles, pointer),
      (tenantId) => this.knownRoles(tenantId),
      onAccessChange
    )
  }

  /** Every call names its tenant, and runs in that tenant's scope (core/db/tenant-scope.ts), whoever calls. */
  private db(tenantId: string): pg.Pool {
    return tenantPool(this.pool, tenantId)
  }

  /** Roles a tenant can grant: `admin` plus every role its installed modules' permissions declare. */
  knownRoles(tenantId: string): string[] {
    const roles = new Set<string>([adminRole])
    for (const m of this.tenants.get(tenantId)?.modules.values() ?? [])
      for (const r of Object.keys(m.definition.permissions)) roles.add(r)
    return [...roles].sort()
  }

  private checkRoles(tenantId: string, roles: readonly string[], pointer: string) {
    const known = this.knownRoles(tenantId)
    const unknown = roles.filter((r) => !known.includes(r))
    if (unknown.length)
      throw validationError([
        {
          pointer,
          field: pointer.slice(1),
          code: 'enum',
          detail: `names unknown role ${unknown.join(', ')}; roles of this tenant: ${known.join(', ')}`,
          allowed: known
        }
      ])
  }

  /**
   * Bounds of what is indexed (a btree entry holds at most ~2.7 kB), and of multi-valued
   * attributes (`maxValuesPerAttribute`): refused before the database would store them.
   * `only`: the attributes a change sets (a user stored before a bound keeps what it has
   * until that attribute changes).
   */
  private checkLengths(input: UserInput, only?: ReadonlyArray<keyof UserInput>) {
    const bounds: Array<[keyof UserInput, number]> = [
      ['userName', 256],
      ['displayName', 1024],
      ['externalId', 1024],
      ['email', 1024]
    ]
    const found: FieldProblem[] = bounds
      .filter(([k, max]) => typeof input[k] === 'string' && input[k].length > max)
      .map(([k, max]) => ({
        pointer: `/${k}`,
        field: k,
        code: 'maxLength',
        detail: `must be at most ${max} characters`
      }))
    const lists: Array<[string, unknown]> = [
      ['emails', input.emails],
      ['phoneNumbers', input.phoneNumbers],
      ...(!only || only.includes('attributes') ? Object.entries(input.attributes ?? {}) : [])
    ]
    for (const [k, v] of lists) {
      if (only && (k === 'emails' || k === 'phoneNumbers') && !only.includes(k)) continue
      if (Array.isArray(v) && v.length > maxValuesPerAttribute)
        found.push({
          pointer: `/${k}`,
          field: k,
          code: 'maxItems',
          detail: `holds ${v.length} values; a user holds at most ${maxValuesPerAttribute} of each multi-valued attribute`
        })
    }
    if (found.length) throw validationError(found)
  }

  private exists(err: unknown, userName: string | undefined): never {
    if ((err as { code?: string }).code === '23505')
      throw problems.conflict(
        'user.exists',
        `A user named "${userName}" already exists in this tenant (user names are compared without regard to case).`
      )
    throw err
  }

  async create(
    tenantId: string,
    input: UserInput & { userName: string; password?: string },
    o: ChangeOptions = {}
  ): Promise<UserInfo> {
    if (typeof input.userName !== 'string' || !input.userName.trim())
      throw validationError([
        { pointer: '/userName', field: 'userName', code: 'required', detail: 'must be a non-empty string' }
      ])
    this.checkRoles(tenantId, input.roles ?? [], '/roles')
    this.checkLengths(input)
    assertHoldsRoles(o.as, input.roles ?? [], 'The new user would hold')
    let passwordHash: string | null = null
    if (input.password !== undefined) {
      const problem = passwordProblem(input.password)
      if (problem)
        throw validationError([{ pointer: '/password', field: 'password', code: 'password', detail: problem }])
      passwordHash = await hashPassword(input.password)
    }
    const emails = input.emails ?? (input.email ? [{ value: input.email, primary: true }] : [])
    const roles = [...new Set(input.roles ?? [])]
    const id = await transaction(this.db(tenantId), async (client) => {
      const { rows } = await client
        .query(
          `INSERT INTO users (tenant_id, user_name, display_name, email, external_id, password_hash, roles, active, name, emails, phone_numbers, enterprise, attributes)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id, version`,
          [
            tenantId,
            input.userName.trim(),
            input.displayName ?? null,
            input.email ?? primaryEmail(emails),
            input.externalId ?? null,
            passwordHash,
            roles,
            input.active ?? true,
            JSON.stringify(input.name ?? null),
            JSON.stringify(emails),
            JSON.stringify(input.phoneNumbers ?? []),
            JSON.stringify(input.enterprise ?? null),
            JSON.stringify(input.attributes ?? {})
          ]
        )
        .catch((err) => this.exists(err, input.userName))
      await writeEvents(client, tenantId, actorOf(o), [
        {
          type: 'user.provisioned',
          subjectId: rows[0].id,
          data: { version: rows[0].version, roles, active: input.active ?? true, via: o.via ?? 'directory' }
        }
      ])
      return rows[0].id as string
    })
    return (await this.get(tenantId, id))!
  }

  async get(tenantId: string, id: string): Promise<UserInfo | undefined> {
    if (!uuid.test(id)) return undefined
    const { rows } = await this.db(tenantId).query(`${userSelect} WHERE u.tenant_id = $1 AND u.id = $2`, [tenantId, id])
    return rows[0]
  }

  async byUserName(tenantId: string, userName: string): Promise<UserInfo | undefined> {
    const { rows } = await this.db(tenantId).query(`${userSelect} WHERE u.tenant_id = $1 AND u.user_name = $2`, [
      tenantId,
      userName
    ])
    return rows[0]
  }

  /**
   * The users a single sign-on identity names (active or not): by externalId (exact, as the
   * IdP provisioned it), or by an email equal to the user's email or user name in any case.
   * More than one is the caller's to refuse.
   */
  async forSignIn(tenantId: string, by: { externalId: string } | { email: string }): Promise<UserInfo[]> {
    const { rows } =
      'externalId' in by
        ? await this.db(tenantId).query(`${userSelect} WHERE u.tenant_id = $1 AND u.external_id = $2 LIMIT 2`, [
            tenantId,
            by.externalId
          ])
        : await this.db(tenantId).query(
            `${userSelect} WHERE u.tenant_id = $1 AND (lower(u.email) = lower($2) OR lower(u.user_name) = lower($2)) LIMIT 2`,
            [tenantId, by.email]
          )
    return rows
  }

  /** A user by id or user name, or a 404. */
  async find(tenantId: string, idOrName: string): Promise<UserInfo> {
    const user = (await this.get(tenantId, idOrName)) ?? (await this.byUserName(tenantId, idOrName))
    if (!user) throw problems.notFound('user.not_found', `No user "${idOrName}" in tenant ${tenantId}.`)
    return user
  }

  /**
   * Names (display name, else user name) of the tenant's users among `values`, by id, for
   * showing user fields to people (exports, the record report); values that are no user id
   * of the tenant are left out. Deleted users keep their names here.
   */
  async names(tenantId: string, values: Iterable<unknown>): Promise<Map<string, string>> {
    const ids = [...new Set([...values].filter((v): v is string => typeof v === 'string' && uuid.test(v)))]
    if (!ids.length) return new Map()
    const { rows } = await this.db(tenantId).query<{ id: string; name: string }>(
      'SELECT id::text AS id, coalesce(display_name, user_name) AS name FROM users WHERE tenant_id = $1 AND id = ANY($2::uuid[])',
      [tenantId, ids]
    )
    return new Map(rows.map((r) => [r.id, r.name]))
  }

  /**
   * People to pick by name (a form's user field): active users ordered by their name (display name, else user name),
   * at most `limit`; with `named`, only those whose user name or display name is that text, in any case (a name typed
   * where the tenant has more people than a picker offers).
   */
  async directory(
    tenantId: string,
    limit: number,
    named?: string
  ): Promise<Array<{ id: string; userName: string; name: string }>> {
    const { rows } = await this.db(tenantId).query<{ id: string; userName: string; name: string }>(
      `SELECT id::text AS id, user_name AS "userName", coalesce(display_name, user_name) AS name
         FROM users WHERE tenant_id = $1 AND deleted_at IS NULL AND active
          AND ($2::text IS NULL OR lower(user_name) = lower($2) OR lower(display_name) = lower($2))
        ORDER BY lower(coalesce(display_name, user_name)), id LIMIT $3`,
      [tenantId, named ?? null, limit]
    )
    return rows
  }

  async list(tenantId: string): Promise<UserInfo[]> {
    const { rows } = await this.db(tenantId).query(`${userSelect} WHERE u.tenant_id = $1 ORDER BY u.user_name`, [
      tenantId
    ])
    return rows
  }

  /**
   * Users by a WHERE condition over `u` (SCIM filters), in creation order: one page and the
   * total. `where.elements` (SQL over `u`) is the work the condition does per row beyond one
   * step: summed over the tenant's users and charged, with a unit per user, before it runs.
   */
  async page(
    tenantId: string,
    where: FilterCondition,
    offset: number,
    limit: number
  ): Promise<{ total: number; users: UserInfo[] }> {
    if (where.elements)
      await chargeFilter(
        this.db(tenantId),
        '(SELECT * FROM users WHERE deleted_at IS NULL) u WHERE u.tenant_id = $1',
        where.elements,
        tenantId
      )
    const n = where.values.length
    const condition = where.sql ? `AND (${where.sql})` : ''
    const total = await this.db(tenantId).query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT * FROM users WHERE deleted_at IS NULL) u WHERE u.tenant_id = $${n + 1} ${condition}`,
      [...where.values, tenantId]
    )
    if (!limit) return { total: total.rows[0].n, users: [] }
    const { rows } = await this.db(tenantId).query(
      `${userSelect} WHERE u.tenant_id = $${n + 1} ${condition} ORDER BY u.created_at, u.id OFFSET $${n + 2} LIMIT $${n + 3}`,
      [...where.values, tenantId, offset, limit]
    )
    return { total: total.rows[0].n, users: rows }
  }

  async setPassword(tenantId: string, id: string, password: string) {
    const problem = passwordProblem(password)
    if (problem) throw validationError([{ pointer: '/password', field: 'password', code: 'password', detail: problem }])
    await this.db(tenantId).query(
      'UPDATE users SET password_hash = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL',
      [tenantId, id, await hashPassword(password)]
    )
    // A new password ends every browser session of the user.
    await this.db(tenantId).query('DELETE FROM sessions WHERE tenant_id = $1 AND user_id = $2', [tenantId, id])
  }

  /** Grants a role directly; returns the user as now. */
  async grantRole(tenantId: string, id: string, role: string, o: ChangeOptions = {}): Promise<UserInfo> {
    this.checkRoles(tenantId, [role], '/role')
    return this.update(tenantId, id, (u) => ({ roles: [...new Set([...u.roles, role])] }), o)
  }

  /** Removes a direct role; tokens and sessions of the user lose it on their next call. */
  async revokeRole(tenantId: string, id: string, role: string, o: ChangeOptions = {}): Promise<UserInfo> {
    return this.update(tenantId, id, (u) => ({ roles: u.roles.filter((r) => r !== role) }), o)
  }

  /** Deactivating a user makes all its tokens 401 and ends its sessions. */
  async setActive(tenantId: string, id: string, active: boolean, o: ChangeOptions = {}): Promise<UserInfo> {
    return this.update(tenantId, id, () => ({ active }), o)
  }

  /**
   * Changes a user: `change` gets the user as it is (locked) and returns what to set. Nothing
   * changed, nothing written. Deactivation ends the user's sessions; any change that can
   * narrow (roles, activation) is announced. 404 for no such user, 412 when `ifVersion` is stale.
   */
  async update(
    tenantId: string,
    id: string,
    change: (current: UserInfo) => UserInput,
    o: ChangeOptions = {}
  ): Promise<UserInfo> {
    const notFound = () => problems.notFound('user.not_found', `No user ${id} in tenant ${tenantId}.`)
    if (!uuid.test(id)) throw notFound()
    const announce = await transaction(this.db(tenantId), async (client) => {
      const current = await this.locked(client, tenantId, id)
      if (!current) throw notFound()
      if (o.ifVersion !== undefined && o.ifVersion !== current.version)
        throw versionMismatch('user', id, current.version)
      const next = change(current)
      if (next.roles) this.checkRoles(tenantId, next.roles, '/roles')
      this.checkLengths(next, [])
      if (next.userName !== undefined && (typeof next.userName !== 'string' || !next.userName.trim()))
        throw validationError([
          { pointer: '/userName', field: 'userName', code: 'required', detail: 'must be a non-empty string' }
        ])
      if (next.emails && next.email === undefined) next.email = primaryEmail(next.emails)
      const changed = (Object.keys(next) as Array<keyof UserInput>).filter(
        (k) => next[k] !== undefined && !same(next[k], current[k])
      )
      if (!changed.length) return false
      this.checkLengths(next, changed)
      if (changed.some((k) => identityAttributes.has(k)))
        assertHoldsRoles(o.as, current.effectiveRoles, `User "${current.userName}" holds`)
      if (changed.includes('roles'))
        assertHoldsRoles(
          o.as,
          [...added(current.roles, next.roles), ...removed(current.roles, next.roles)],
          'This change grants or revokes'
        )
      const sets: string[] = []
      const values: unknown[] = [tenantId, id]
      for (const k of changed) {
        if (k === 'roles') {
          sets.push(`roles = $${values.push([...new Set(next.roles)])}`)
          continue
        }
        const c = columns[k]
        sets.push(
          `${c.column} = $${values.push(c.json ? JSON.stringify(next[k]) : k === 'userName' ? String(next[k]).trim() : next[k])}`
        )
      }
      const { rows: after } = await client
        .query(
          `UPDATE users u SET ${sets.join(', ')}, version = u.version + 1, updated_at = now() WHERE u.tenant_id = $1 AND u.id = $2 RETURNING u.version, ${effectiveRolesSql} AS roles`,
          values
        )
        .catch((err) => this.exists(err, next.userName))
      const deactivated = current.active && next.active === false
      if (deactivated) await client.query('DELETE FROM sessions WHERE tenant_id = $1 AND user_id = $2', [tenantId, id])
      const rolesGranted = after[0].roles.filter((r: string) => !current.effectiveRoles.includes(r))
      const rolesRevoked = removed(current.effectiveRoles, after[0].roles)
      const data = {
        version: after[0].version,
        changed: changed.filter((k) => k !== 'email' || !changed.includes('emails')),
        rolesGranted,
        rolesRevoked,
        via: o.via ?? 'directory'
      }
      await writeEvents(client, tenantId, actorOf(o), [
        {
          type: deactivated ? 'user.deactivated' : 'user.updated',
          subjectId: id,
          data: deactivated ? { ...data, deleted: false } : data
        }
      ])
      // Any change of what the user may do is announced, widening too (a role granted, a reactivation): cached tokens act on it at once.
      const narrows =
        current.active !== (next.active ?? current.active) || rolesRevoked.length > 0 || rolesGranted.length > 0
      if (narrows) await notifyUsers(client, [id])
      return narrows
    })
    if (announce) this.onAccessChange({ userIds: [id] })
    const user = await this.get(tenantId, id)
    if (!user) throw notFound()
    return user
  }

  /** The user, locked for the rest of the transaction; undefined when there is none (or it is deleted). */
  private async locked(client: pg.PoolClient, tenantId: string, id: string): Promise<UserInfo | undefined> {
    const { rowCount } = await client.query(
      'SELECT 1 FROM users WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL FOR UPDATE',
      [tenantId, id]
    )
    if (!rowCount) return undefined
    const { rows } = await client.query(`${userSelect} WHERE u.tenant_id = $1 AND u.id = $2`, [tenantId, id])
    return rows[0]
  }

  /**
   * Deletes a user as SCIM does: deactivated, out of every group (losing what they granted),
   * without direct roles, sessions ended; the row stays (records and the audit trail keep the
   * name) but no door finds it any more, and its userName is free again.
   */
  async remove(tenantId: string, id: string, o: ChangeOptions = {}): Promise<void> {
    const notFound = () => problems.notFound('user.not_found', `No user ${id} in tenant ${tenantId}.`)
    if (!uuid.test(id)) throw notFound()
    await transaction(this.db(tenantId), async (client) => {
      const current = await this.locked(client, tenantId, id)
      if (!current) throw notFound()
      if (o.ifVersion !== undefined && o.ifVersion !== current.version)
        throw versionMismatch('user', id, current.version)
      assertHoldsRoles(o.as, current.effectiveRoles, `User "${current.userName}" holds`)
      const left = await client.query<{ group_id: string }>(
        'DELETE FROM group_members WHERE tenant_id = $1 AND user_id = $2 RETURNING group_id::text',
        [tenantId, id]
      )
      if (left.rows.length)
        await client.query(
          'UPDATE groups SET version = version + 1, updated_at = now() WHERE tenant_id = $1 AND id = ANY($2::uuid[])',
          [tenantId, left.rows.map((r) => r.group_id)]
        )
      const { rows: after } = await client.query(
        "UPDATE users SET deleted_at = now(), active = false, roles = '{}', version = version + 1, updated_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING version",
        [tenantId, id]
      )
      await client.query('DELETE FROM sessions WHERE tenant_id = $1 AND user_id = $2', [tenantId, id])
      const events: DirectoryEvent[] = [
        {
          type: 'user.deactivated',
          subjectId: id,
          data: {
            version: after[0].version,
            deleted: true,
            rolesRevoked: current.effectiveRoles,
            groupsLeft: left.rows.map((r) => r.group_id),
            via: o.via ?? 'directory'
          }
        },
        ...left.rows.map((r) => ({
          type: 'group.updated' as const,
          subjectId: r.group_id,
          data: { changed: ['members'], membersRemoved: 1, via: o.via ?? 'directory' }
        }))
      ]
      await writeEvents(client, tenantId, actorOf(o), events)
      await notifyUsers(client, [id])
    })
    this.onAccessChange({ userIds: [id] })
  }

  async recordSignIn(tenantId: string, id: string) {
    await this.db(tenantId).query('UPDATE users SET last_sign_in_at = now() WHERE tenant_id = $1 AND id = $2', [
      tenantId,
      id
    ])
  }

  /** The user if the password is right and the user active; the same work is done either way. */
  async checkPassword(tenantId: string, userName: string, password: string): Promise<UserInfo | undefined> {
    const { rows } = await this.db(tenantId).query(
      'SELECT id, password_hash, active FROM users WHERE tenant_id = $1 AND user_name = $2 AND deleted_at IS NULL',
      [tenantId, userName]
    )
    const ok = await verifyPassword(password, rows[0]?.password_hash)
    return ok && rows[0].active ? this.get(tenantId, rows[0].id) : undefined
  }

  // Groups: core/auth/groups.ts, in the same transactions and events.

  async createGroup(tenantId: string, input: GroupInput, o: ChangeOptions = {}): Promise<GroupInfo> {
    return this.groupWrites.create(tenantId, input, o)
  }

  /** The roles a group with this displayName and these named roles grants (see core/auth/groups.ts). */
  rolesGrantedBy(tenantId: string, namedRoles: string[] | null, displayName: string): string[] {
    return this.groupWrites.granted(tenantId, namedRoles, displayName)
  }

  async group(tenantId: string, idOrName: string): Promise<GroupInfo | undefined> {
    return this.groupWrites.get(tenantId, idOrName)
  }

  async listGroups(tenantId: string): Promise<GroupInfo[]> {
    return this.groupWrites.list(tenantId)
  }

  /** Groups by a WHERE condition over `g` (SCIM filters), in creation order: one page and the total (metered as `page`). */
  async groupPage(tenantId: string, where: FilterCondition, offset: number, limit: number) {
    if (where.elements)
      await chargeFilter(this.db(tenantId), 'groups g WHERE g.tenant_id = $1', where.elements, tenantId)
    return this.groupWrites.page(tenantId, where, offset, limit)
  }

  /** The members of a group with the names to show for them, in the order they were added. */
  async groupMembers(tenantId: string, groupId: string): Promise<GroupMember[]> {
    return this.groupWrites.members(tenantId, groupId)
  }

  /** The members of a page of groups, in one statement. */
  async groupsMembers(tenantId: string, groupIds: readonly string[]): Promise<Map<string, GroupMember[]>> {
    return this.groupWrites.membersOf(tenantId, groupIds)
  }

  async updateGroup(
    tenantId: string,
    groupId: string,
    changes: GroupChanges,
    o: ChangeOptions = {}
  ): Promise<GroupInfo> {
    return this.groupWrites.update(tenantId, groupId, changes, o)
  }

  async removeGroup(tenantId: string, groupId: string, o: ChangeOptions = {}): Promise<void> {
    return this.groupWrites.remove(tenantId, groupId, o)
  }

  async setGroupRoles(tenantId: string, groupId: string, roles: string[], o: ChangeOptions = {}): Promise<GroupInfo> {
    return this.groupWrites.update(tenantId, groupId, { namedRoles: roles }, o)
  }

  async addMember(tenantId: string, groupId: string, userId: string, o: ChangeOptions = {}) {
    await this.groupWrites.update(tenantId, groupId, { addMembers: [{ userId }] }, o)
  }

  async removeMember(tenantId: string, groupId: string, userId: string, o: ChangeOptions = {}) {
    await this.groupWrites.update(tenantId, groupId, { removeMembers: [userId] }, o)
  }
}
