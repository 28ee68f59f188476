import type pg from 'pg'
import { isoUtc as iso } from '../db/index.ts'
import { problems } from '../errors/index.ts'
import type { TenantDirectory } from '../tenancy/tenants.ts'
import { validationError } from '../validation.ts'
import { announceAccessChange } from './changes.ts'
import { hashPassword, passwordProblem, verifyPassword } from './passwords.ts'
import { adminRole } from './principal.ts'

export interface UserInfo {
  id: string
  tenantId: string
  userName: string
  displayName: string | null
  email: string | null
  externalId: string | null
  active: boolean
  /** Roles held directly. */
  roles: string[]
  groups: Array<{ id: string; displayName: string }>
  /** Direct roles and those of the user's groups: what the user's tokens and sessions act with. */
  effectiveRoles: string[]
  createdAt: string
  updatedAt: string
  lastSignInAt: string | null
}

export interface GroupInfo {
  id: string
  tenantId: string
  displayName: string
  externalId: string | null
  roles: string[]
  members: string[]
  createdAt: string
  updatedAt: string
}

/** SQL for a user's effective roles (direct plus through groups), over `users u`. */
export const effectiveRolesSql = `ARRAY(SELECT unnest(u.roles) UNION SELECT unnest(g.roles) FROM group_members gm
  JOIN groups g ON g.tenant_id = gm.tenant_id AND g.id = gm.group_id WHERE gm.tenant_id = u.tenant_id AND gm.user_id = u.id ORDER BY 1)`

const userSelect = `SELECT u.tenant_id AS "tenantId", u.id, u.user_name AS "userName", u.display_name AS "displayName", u.email,
  u.external_id AS "externalId", u.active, u.roles,
  coalesce((SELECT json_agg(json_build_object('id', g.id, 'displayName', g.display_name) ORDER BY g.display_name) FROM group_members gm
    JOIN groups g ON g.tenant_id = gm.tenant_id AND g.id = gm.group_id WHERE gm.tenant_id = u.tenant_id AND gm.user_id = u.id), '[]'::json) AS groups,
  ${effectiveRolesSql} AS "effectiveRoles",
  ${iso('u.created_at')} AS "createdAt", ${iso('u.updated_at')} AS "updatedAt", ${iso('u.last_sign_in_at')} AS "lastSignInAt"
  FROM users u`

const groupSelect = `SELECT g.tenant_id AS "tenantId", g.id, g.display_name AS "displayName", g.external_id AS "externalId", g.roles,
  ARRAY(SELECT gm.user_id::text FROM group_members gm WHERE gm.tenant_id = g.tenant_id AND gm.group_id = g.id ORDER BY 1) AS members,
  ${iso('g.created_at')} AS "createdAt", ${iso('g.updated_at')} AS "updatedAt" FROM groups g`

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * Users and groups of each tenant, and the roles they hold. Every change that can
 * narrow a principal is announced, so cached tokens and sessions pick it up at once.
 */
export class UserDirectory {
  constructor(
    private readonly pool: pg.Pool,
    private readonly tenants: TenantDirectory
  ) {}

  /** Roles a tenant can grant: `admin` plus every role its installed modules' permissions declare. */
  knownRoles(tenantId: string): string[] {
    const roles = new Set<string>([adminRole])
    for (const m of this.tenants.get(tenantId)?.modules.values() ?? []) for (const r of Object.keys(m.definition.permissions)) roles.add(r)
    return [...roles].sort()
  }

  private checkRoles(tenantId: string, roles: readonly string[], pointer: string) {
    const known = this.knownRoles(tenantId)
    const unknown = roles.filter((r) => !known.includes(r))
    if (unknown.length) throw validationError([{ pointer, field: pointer.slice(1), code: 'enum', detail: `names unknown role ${unknown.join(', ')}; roles of this tenant: ${known.join(', ')}`, allowed: known }])
  }

  async create(tenantId: string, input: { userName: string; displayName?: string | null; email?: string | null; externalId?: string | null; password?: string; roles?: string[]; active?: boolean }): Promise<UserInfo> {
    if (!input.userName?.trim()) throw validationError([{ pointer: '/userName', field: 'userName', code: 'required', detail: 'must be a non-empty string' }])
    this.checkRoles(tenantId, input.roles ?? [], '/roles')
    let passwordHash: string | null = null
    if (input.password !== undefined) {
      const problem = passwordProblem(input.password)
      if (problem) throw validationError([{ pointer: '/password', field: 'password', code: 'password', detail: problem }])
      passwordHash = await hashPassword(input.password)
    }
    try {
      const { rows } = await this.pool.query(
        `INSERT INTO users (tenant_id, user_name, display_name, email, external_id, password_hash, roles, active) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
        [tenantId, input.userName.trim(), input.displayName ?? null, input.email ?? null, input.externalId ?? null, passwordHash, [...new Set(input.roles ?? [])], input.active ?? true]
      )
      return (await this.get(tenantId, rows[0].id))!
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw problems.conflict('user.exists', `A user named "${input.userName}" already exists in this tenant.`)
      throw err
    }
  }

  async get(tenantId: string, id: string): Promise<UserInfo | undefined> {
    if (!uuid.test(id)) return undefined
    const { rows } = await this.pool.query(`${userSelect} WHERE u.tenant_id = $1 AND u.id = $2`, [tenantId, id])
    return rows[0]
  }

  async byUserName(tenantId: string, userName: string): Promise<UserInfo | undefined> {
    const { rows } = await this.pool.query(`${userSelect} WHERE u.tenant_id = $1 AND u.user_name = $2`, [tenantId, userName])
    return rows[0]
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
   * of the tenant are left out.
   */
  async names(tenantId: string, values: Iterable<unknown>): Promise<Map<string, string>> {
    const ids = [...new Set([...values].filter((v): v is string => typeof v === 'string' && uuid.test(v)))]
    if (!ids.length) return new Map()
    const { rows } = await this.pool.query<{ id: string; name: string }>('SELECT id::text AS id, coalesce(display_name, user_name) AS name FROM users WHERE tenant_id = $1 AND id = ANY($2::uuid[])', [tenantId, ids])
    return new Map(rows.map((r) => [r.id, r.name]))
  }

  async list(tenantId: string): Promise<UserInfo[]> {
    const { rows } = await this.pool.query(`${userSelect} WHERE u.tenant_id = $1 ORDER BY u.user_name`, [tenantId])
    return rows
  }

  async setPassword(tenantId: string, id: string, password: string) {
    const problem = passwordProblem(password)
    if (problem) throw validationError([{ pointer: '/password', field: 'password', code: 'password', detail: problem }])
    await this.pool.query('UPDATE users SET password_hash = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2', [tenantId, id, await hashPassword(password)])
    // A new password ends every browser session of the user.
    await this.pool.query('DELETE FROM sessions WHERE tenant_id = $1 AND user_id = $2', [tenantId, id])
  }

  /** Grants a role directly; returns the user as now. */
  async grantRole(tenantId: string, id: string, role: string): Promise<UserInfo> {
    this.checkRoles(tenantId, [role], '/role')
    await this.pool.query('UPDATE users SET roles = array_append(roles, $3), updated_at = now() WHERE tenant_id = $1 AND id = $2 AND NOT ($3 = ANY (roles))', [tenantId, id, role])
    return this.changed(tenantId, id)
  }

  /** Removes a direct role; tokens and sessions of the user lose it on their next call. */
  async revokeRole(tenantId: string, id: string, role: string): Promise<UserInfo> {
    await this.pool.query('UPDATE users SET roles = array_remove(roles, $3), updated_at = now() WHERE tenant_id = $1 AND id = $2', [tenantId, id, role])
    return this.changed(tenantId, id)
  }

  /** Deactivating a user makes all its tokens 401 and ends its sessions. */
  async setActive(tenantId: string, id: string, active: boolean): Promise<UserInfo> {
    await this.pool.query('UPDATE users SET active = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2', [tenantId, id, active])
    if (!active) await this.pool.query('DELETE FROM sessions WHERE tenant_id = $1 AND user_id = $2', [tenantId, id])
    return this.changed(tenantId, id)
  }

  async recordSignIn(tenantId: string, id: string) {
    await this.pool.query('UPDATE users SET last_sign_in_at = now() WHERE tenant_id = $1 AND id = $2', [tenantId, id])
  }

  /** The user if the password is right and the user active; the same work is done either way. */
  async checkPassword(tenantId: string, userName: string, password: string): Promise<UserInfo | undefined> {
    const { rows } = await this.pool.query('SELECT id, password_hash, active FROM users WHERE tenant_id = $1 AND user_name = $2', [tenantId, userName])
    const ok = await verifyPassword(password, rows[0]?.password_hash)
    return ok && rows[0].active ? this.get(tenantId, rows[0].id) : undefined
  }

  private async changed(tenantId: string, id: string): Promise<UserInfo> {
    const user = await this.get(tenantId, id)
    if (!user) throw problems.notFound('user.not_found', `No user ${id} in tenant ${tenantId}.`)
    await announceAccessChange(this.pool, { userId: id })
    return user
  }

  async createGroup(tenantId: string, input: { displayName: string; roles?: string[]; externalId?: string | null }): Promise<GroupInfo> {
    if (!input.displayName?.trim()) throw validationError([{ pointer: '/displayName', field: 'displayName', code: 'required', detail: 'must be a non-empty string' }])
    this.checkRoles(tenantId, input.roles ?? [], '/roles')
    try {
      const { rows } = await this.pool.query('INSERT INTO groups (tenant_id, display_name, external_id, roles) VALUES ($1, $2, $3, $4) RETURNING id', [
        tenantId,
        input.displayName.trim(),
        input.externalId ?? null,
        [...new Set(input.roles ?? [])]
      ])
      return (await this.group(tenantId, rows[0].id))!
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw problems.conflict('group.exists', `A group named "${input.displayName}" already exists in this tenant.`)
      throw err
    }
  }

  async group(tenantId: string, idOrName: string): Promise<GroupInfo | undefined> {
    const { rows } = uuid.test(idOrName)
      ? await this.pool.query(`${groupSelect} WHERE g.tenant_id = $1 AND g.id = $2`, [tenantId, idOrName])
      : await this.pool.query(`${groupSelect} WHERE g.tenant_id = $1 AND g.display_name = $2`, [tenantId, idOrName])
    return rows[0]
  }

  async listGroups(tenantId: string): Promise<GroupInfo[]> {
    const { rows } = await this.pool.query(`${groupSelect} WHERE g.tenant_id = $1 ORDER BY g.display_name`, [tenantId])
    return rows
  }

  async setGroupRoles(tenantId: string, groupId: string, roles: string[]): Promise<GroupInfo> {
    this.checkRoles(tenantId, roles, '/roles')
    await this.pool.query('UPDATE groups SET roles = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2', [tenantId, groupId, [...new Set(roles)]])
    await announceAccessChange(this.pool, { tenantId })
    return (await this.group(tenantId, groupId))!
  }

  async addMember(tenantId: string, groupId: string, userId: string) {
    await this.pool.query('INSERT INTO group_members (tenant_id, group_id, user_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [tenantId, groupId, userId])
    await announceAccessChange(this.pool, { userId })
  }

  async removeMember(tenantId: string, groupId: string, userId: string) {
    await this.pool.query('DELETE FROM group_members WHERE tenant_id = $1 AND group_id = $2 AND user_id = $3', [tenantId, groupId, userId])
    await announceAccessChange(this.pool, { userId })
  }
}
