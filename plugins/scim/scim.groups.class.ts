import type { Id } from '@feathersjs/feathers'
import { isUuid } from '../../core/validation.ts'
import type { GroupChanges, GroupInfo, GroupMember } from '../../core/auth/groups.ts'
import {
  answered,
  ifMatchVersion,
  listResponse,
  paging,
  scimPrincipal,
  scimUrl,
  single,
  type ScimContext,
  type ScimParams
} from './scim.common.ts'
import { scimError } from './scim.errors.ts'
import { parseFilter } from './scim.filter.ts'
import { memberPlan, membersOf } from './scim.members.ts'
import { applyPatch, patchOperations } from './scim.patch.ts'
import { excludes, project, projectionOf } from './scim.projection.ts'
import { coerceIn, groupDefinition, groupDocument, groupResource } from './scim.schemas.ts'
import { urn } from './scim.shared.ts'
import { filterSql } from './scim.sql.ts'

const attempts = 5

/** What a Group resource sets in the directory. */
interface GroupWrite {
  displayName: string
  externalId: string | null
  namedRoles: string[] | null
  members: Array<{ userId: string; display: string | null }>
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v)

/**
 * A Group resource as the directory takes it: its members read by membersOf (one step each),
 * the rest checked and shaped by the schema's coercion.
 */
function groupBody(data: unknown): GroupWrite {
  if (!isObject(data)) return { ...groupFields(coerceIn(groupDefinition, data)), members: [] }
  const key = Object.keys(data).find((k) => k.toLowerCase() === 'members')
  const members = key === undefined ? [] : membersOf(data[key], 'members')
  const rest = { ...data }
  if (key !== undefined) delete rest[key]
  return {
    ...groupFields(coerceIn(groupDefinition, rest)),
    members: members.map((m) => ({ userId: m.userId, display: m.display ?? null }))
  }
}

/** The group's own attributes of a coerced resource. */
function groupFields(resource: Record<string, unknown>): Omit<GroupWrite, 'members'> {
  const ext = resource[urn.recordsGroup] as { roles?: string[] } | undefined
  return {
    displayName: resource.displayName as string,
    externalId: (resource.externalId as string | undefined) ?? null,
    namedRoles: ext?.roles ?? null
  }
}

/**
 * SCIM Groups over the directory's groups. A group grants roles (core/auth/groups.ts): those
 * its records extension names, else the role its displayName is. Members that are no user of
 * the tenant are left out. A credential acting with some roles only (not the tenant's all)
 * manages only groups that grant roles it holds itself, and adds or removes only members
 * holding nothing more than it holds (core/auth/escalation.ts, applied by the directory).
 */
export class ScimGroupsService {
  constructor(private readonly o: ScimContext) {}

  private get users() {
    return this.o.platform.users
  }

  private async current(tenantId: string, id: Id | null): Promise<GroupInfo> {
    const group = isUuid(id) ? await this.users.group(tenantId, id) : undefined
    if (!group) throw scimError(404, undefined, `No Group ${String(id)}.`, { code: 'group.not_found' })
    return group
  }

  private async shown(g: GroupInfo, params: ScimParams) {
    const projection = projectionOf(params.query ?? {})
    const members = excludes(projection, 'members') ? undefined : await this.users.groupMembers(g.tenantId, g.id)
    const base = scimUrl(this.o.platform)
    return answered(project(groupResource(g, members, base), projection), g.version, `${base}/Groups/${g.id}`)
  }

  async find(params: ScimParams) {
    const p = scimPrincipal(params)
    const filter = single(params.query, 'filter')
    const where = filterSql('Group', filter === undefined ? undefined : parseFilter(filter))
    const projection = projectionOf(params.query ?? {})
    const { startIndex, count } = paging(params.query, this.o.maxResults)
    const { total, groups } = await this.users.groupPage(p.tenantId, where, startIndex - 1, count)
    const base = scimUrl(this.o.platform)
    const withMembers = !excludes(projection, 'members')
    const members = withMembers
      ? await this.users.groupsMembers(
          p.tenantId,
          groups.map((g) => g.id)
        )
      : undefined
    const resources = groups.map((g) =>
      project(groupResource(g, members?.get(g.id) ?? (members ? [] : undefined), base), projection)
    )
    return listResponse(total, startIndex, resources)
  }

  async get(id: Id, params: ScimParams) {
    const p = scimPrincipal(params)
    return this.shown(await this.current(p.tenantId, id), params)
  }

  async create(data: unknown, params: ScimParams) {
    const p = scimPrincipal(params)
    const w = groupBody(data)
    const group = await this.users.createGroup(
      p.tenantId,
      { displayName: w.displayName, externalId: w.externalId, namedRoles: w.namedRoles, members: w.members },
      { as: p, via: 'scim' }
    )
    return this.shown(group, params)
  }

  async update(id: Id, data: unknown, params: ScimParams) {
    const p = scimPrincipal(params)
    const current = await this.current(p.tenantId, id)
    const sentId = isObject(data) ? data.id : undefined
    if (sentId !== undefined && String(sentId).toLowerCase() !== current.id)
      throw scimError(
        400,
        'mutability',
        `The body's id ${JSON.stringify(sentId)} is not this Group's (${current.id}); id cannot change.`
      )
    const w = groupBody(data)
    const group = await this.users.updateGroup(
      p.tenantId,
      current.id,
      { displayName: w.displayName, externalId: w.externalId, namedRoles: w.namedRoles, replaceMembers: w.members },
      { as: p, via: 'scim', ifVersion: ifMatchVersion(params.ifMatch, () => current.version) }
    )
    return this.shown(group, params)
  }

  /**
   * PATCH: applied to the group as it is, written as the members added and removed. The
   * membership operations identity providers send are applied by id, without reading the
   * members (scim.members.ts); others are applied to the members as they are, each element
   * metered.
   */
  async patch(id: Id | null, data: unknown, params: ScimParams) {
    const p = scimPrincipal(params)
    const operations = patchOperations(data)
    const plan = memberPlan(operations)
    for (let attempt = 1; ; attempt++) {
      const current = await this.current(p.tenantId, id)
      let changes: Pick<GroupChanges, 'replaceMembers' | 'addMembers' | 'removeMembers'>
      let w: GroupWrite
      if (plan) {
        const doc = groupDocument(current, undefined)
        w = groupBody(plan.rest.length ? applyPatch(groupDefinition, doc, plan.rest, { id: current.id }) : doc)
        changes = plan.replace ? { replaceMembers: plan.replace } : { addMembers: plan.add, removeMembers: plan.remove }
      } else {
        const members: GroupMember[] = await this.users.groupMembers(p.tenantId, current.id)
        w = groupBody(applyPatch(groupDefinition, groupDocument(current, members), operations, { id: current.id }))
        const before = new Set(members.map((m) => m.userId))
        const after = new Set(w.members.map((m) => m.userId.toLowerCase()))
        changes = {
          addMembers: w.members.filter((m) => !before.has(m.userId.toLowerCase())),
          removeMembers: [...before].filter((m) => !after.has(m))
        }
      }
      const ifVersion = ifMatchVersion(params.ifMatch, () => current.version)
      try {
        const group = await this.users.updateGroup(
          p.tenantId,
          current.id,
          { displayName: w.displayName, externalId: w.externalId, namedRoles: w.namedRoles, ...changes },
          { as: p, via: 'scim', ifVersion: ifVersion ?? current.version }
        )
        return this.shown(group, params)
      } catch (err) {
        // Changed since it was read: read again and re-apply (unless the client named the version it meant).
        if (ifVersion !== undefined || (err as { code?: number }).code !== 412) throw err
        if (attempt >= attempts)
          throw scimError(409, undefined, 'The Group kept changing while this PATCH was applied; send it again.', {
            code: 'group.busy'
          })
      }
    }
  }

  async remove(id: Id | null, params: ScimParams) {
    const p = scimPrincipal(params)
    const current = await this.current(p.tenantId, id)
    await this.users.removeGroup(p.tenantId, current.id, {
      as: p,
      via: 'scim',
      ifVersion: ifMatchVersion(params.ifMatch, () => current.version)
    })
    return null
  }
}
