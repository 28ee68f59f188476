import type { UserInfo } from '../../core/auth/users.ts'
import type { Id } from '@feathersjs/feathers'
import { charge } from '../../core/limits/budget.ts'
import {
  answered,
  listResponse,
  paging,
  scimPrincipal,
  scimUrl,
  single,
  ifMatchVersion,
  type ScimContext,
  type ScimParams
} from './scim.common.ts'
import { scimError } from './scim.errors.ts'
import { parseFilter } from './scim.filter.ts'
import { applyPatch, patchOperations } from './scim.patch.ts'
import { project, projectionOf } from './scim.projection.ts'
import {
  checkValueCounts,
  coerceIn,
  userDefinition,
  valuesIn,
  userDocument,
  userInput,
  userResource
} from './scim.schemas.ts'
import { filterSql } from './scim.sql.ts'

/** A change lost a race with another (its version moved between reading and writing): read again and re-apply. */
class Moved extends Error {}
const attempts = 5

/**
 * SCIM Users (RFC 7644 §3) over the tenant's user directory: every write goes through
 * `platform.users` (core/auth/users.ts), as the CLI's do, so both write the same events and
 * announce what narrows access. A deleted user is 404 here and keeps its row (see
 * UserDirectory.remove).
 */
export class ScimUsersService {
  constructor(private readonly o: ScimContext) {}

  private get users() {
    return this.o.platform.users
  }

  private async current(tenantId: string, id: Id | null): Promise<UserInfo> {
    const user = typeof id === 'string' ? await this.users.get(tenantId, id) : undefined
    if (!user) throw scimError(404, undefined, `No User ${String(id)}.`, { code: 'user.not_found' })
    return user
  }

  private shown(u: UserInfo, params: ScimParams) {
    const base = scimUrl(this.o.platform)
    return answered(
      project(userResource(u, base), projectionOf(params.query ?? {})),
      u.version,
      `${base}/Users/${u.id}`
    )
  }

  async find(params: ScimParams) {
    const p = scimPrincipal(params)
    const filter = single(params.query, 'filter')
    const where = filterSql('User', filter === undefined ? undefined : parseFilter(filter))
    const projection = projectionOf(params.query ?? {})
    const { startIndex, count } = paging(params.query, this.o.maxResults)
    const { total, users } = await this.users.page(p.tenantId, where, startIndex - 1, count)
    const base = scimUrl(this.o.platform)
    // Shaping the page touches each value of each user once.
    charge(
      users.reduce((n, u) => n + 1 + u.emails.length + u.phoneNumbers.length + valuesIn(u.attributes), 0),
      'scim users shown'
    )
    return listResponse(
      total,
      startIndex,
      users.map((u) => project(userResource(u, base), projection))
    )
  }

  async get(id: Id, params: ScimParams) {
    const p = scimPrincipal(params)
    return this.shown(await this.current(p.tenantId, id), params)
  }

  async create(data: unknown, params: ScimParams) {
    const p = scimPrincipal(params)
    checkValueCounts(userDefinition, data)
    const input = userInput(coerceIn(userDefinition, data))
    const user = await this.users.create(p.tenantId, input, { as: p, via: 'scim' })
    return this.shown(user, params)
  }

  /** PUT: every writable attribute as given; what the body leaves out is cleared. */
  async update(id: Id, data: unknown, params: ScimParams) {
    const p = scimPrincipal(params)
    const current = await this.current(p.tenantId, id)
    const sentId = data && typeof data === 'object' && 'id' in data ? data.id : undefined
    if (sentId !== undefined && String(sentId).toLowerCase() !== current.id)
      throw scimError(
        400,
        'mutability',
        `The body's id ${JSON.stringify(sentId)} is not this User's (${current.id}); id cannot change.`
      )
    checkValueCounts(userDefinition, data)
    const input = userInput(coerceIn(userDefinition, data))
    const ifVersion = ifMatchVersion(params.ifMatch, () => current.version)
    const user = await this.users.update(p.tenantId, current.id, () => input, { as: p, via: 'scim', ifVersion })
    return this.shown(user, params)
  }

  /**
   * PATCH: the operations applied to the user as it is, the result checked by the schema and
   * written as one change. A concurrent change in between makes it start again from the new
   * state (with If-Match: 412 instead).
   */
  async patch(id: Id | null, data: unknown, params: ScimParams) {
    const p = scimPrincipal(params)
    const operations = patchOperations(data)
    for (let attempt = 1; ; attempt++) {
      const current = await this.current(p.tenantId, id)
      const patched = applyPatch(userDefinition, userDocument(current), operations, { id: current.id })
      const input = userInput(coerceIn(userDefinition, patched))
      const ifVersion = ifMatchVersion(params.ifMatch, () => current.version)
      try {
        const user = await this.users.update(
          p.tenantId,
          current.id,
          (now) => {
            if (ifVersion === undefined && now.version !== current.version) throw new Moved()
            return input
          },
          { as: p, via: 'scim', ifVersion }
        )
        return this.shown(user, params)
      } catch (err) {
        if (!(err instanceof Moved) || attempt >= attempts)
          throw err instanceof Moved
            ? scimError(409, undefined, 'The User kept changing while this PATCH was applied; send it again.', {
                code: 'user.busy'
              })
            : err
      }
    }
  }

  async remove(id: Id | null, params: ScimParams) {
    const p = scimPrincipal(params)
    const current = await this.current(p.tenantId, id)
    await this.users.remove(p.tenantId, current.id, {
      as: p,
      via: 'scim',
      ifVersion: ifMatchVersion(params.ifMatch, () => current.version)
    })
    return null
  }
}
