import type { NewMember } from '../../core/auth/groups.ts'
import { charge } from '../../core/limits/budget.ts'
import { scimError } from './scim.errors.ts'
import { parsePatchPath } from './scim.filter.ts'
import type { PatchOperation } from './scim.patch.ts'

/**
 * The membership operations of a group PATCH as identity providers send them, turned into
 * what the directory takes (members to add and remove by id, or the whole membership)
 * without reading the group's members: `add`/`replace` of `members` with values, `remove` of
 * `members` with values (Entra ID), `members[value eq "<id>"]` (Okta) or with nothing (all).
 * Each costs one budget unit per member it names, however large the group. Any other
 * operation on members (another filter, a sub-attribute) makes the whole PATCH go through
 * the general engine (scim.patch.ts), which evaluates it on every member and is metered so.
 */
export interface MemberPlan {
  /** The whole membership, when an operation replaced it (later adds and removes applied to it). */
  replace?: NewMember[]
  add: NewMember[]
  remove: string[]
  /** The operations that are not about members, for the general engine. */
  rest: PatchOperation[]
}

const membersPath = /^(urn:ietf:params:scim:schemas:core:2\.0:group:)?members$/i
const hasMembersKey = (v: unknown) => !!v && typeof v === 'object' && Object.keys(v).some((k) => membersPath.test(k))
const meter = 'scim patch elements'

/**
 * The member a value names: a bare id, or `{value, display}` (Microsoft's collection labels
 * it `displayName`; kept as `display`). Read here in one step rather than by the schema's
 * coercion, which costs about 0.1 ms per member: a group body may name thousands. A member
 * without a value names nobody (left out, as members that are no user of the tenant are);
 * a value of another type is 400 invalidValue. `where` names it in the refusal.
 */
export function memberOf(v: unknown, where: string): NewMember | undefined {
  if (typeof v === 'string' || typeof v === 'number') return { userId: String(v) }
  const o = v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined
  const get = (name: string) => (o ? o[Object.keys(o).find((k) => k.toLowerCase() === name) ?? name] : undefined)
  const id = get('value')
  const display = get('display') ?? get('displayname')
  if (
    !o ||
    (id !== undefined && typeof id !== 'string') ||
    (display !== undefined && display !== null && typeof display !== 'string')
  ) {
    throw scimError(
      400,
      'invalidValue',
      `${where}: a member is {"value": "<user id>"} (and optionally "display", a string), not ${JSON.stringify(v)?.slice(0, 80)}.`
    )
  }
  return id === undefined ? undefined : { userId: id, ...(typeof display === 'string' ? { display } : {}) }
}

/** The members a `members` value lists (one member or an array; null: none), each checked; charged one unit each. */
export function membersOf(value: unknown, where: string): NewMember[] {
  const list = value === undefined || value === null ? [] : Array.isArray(value) ? value : [value]
  charge(list.length, 'scim group members')
  return list.flatMap((m, i) => memberOf(m, `${where}[${i}]`) ?? [])
}

/** The id a `members[value eq "<id>"]` path names, or undefined for any other path. */
function removedById(path: string): string | undefined {
  if (!/^(urn:ietf:params:scim:schemas:core:2\.0:group:)?members\s*\[/i.test(path) || !path.trim().endsWith(']'))
    return undefined
  const { path: p, filter: f } = parsePatchPath(path)
  if (
    !f ||
    p.sub ||
    f.op !== 'eq' ||
    f.path.sub ||
    f.path.schema ||
    f.path.attr.toLowerCase() !== 'value' ||
    typeof f.value !== 'string'
  )
    return undefined
  return f.value
}

/** The plan of a PATCH's member operations; undefined when one of them needs the general engine. */
export function memberPlan(operations: PatchOperation[]): MemberPlan | undefined {
  let replace: Map<string, NewMember> | undefined
  const add = new Map<string, NewMember>()
  const remove = new Set<string>()
  const rest: PatchOperation[] = []
  const put = (m: NewMember) => {
    const id = m.userId.toLowerCase()
    if (replace) replace.set(id, { ...m, userId: id })
    else {
      add.set(id, { ...m, userId: id })
      remove.delete(id)
    }
  }
  const drop = (id: string) => {
    const lower = id.toLowerCase()
    if (replace) replace.delete(lower)
    else {
      add.delete(lower)
      remove.add(lower)
    }
  }
  for (const [i, o] of operations.entries()) {
    const n = i + 1
    if (o.path === undefined) {
      if (hasMembersKey(o.value)) return undefined
      rest.push(o)
      continue
    }
    if (membersPath.test(o.path)) {
      charge(1, meter)
      const members = membersOf(o.value, `Operation ${n}: members`)
      if (o.op === 'remove' && o.value === undefined) replace = new Map()
      else if (o.op === 'remove') members.forEach((m) => drop(m.userId))
      else {
        if (o.op === 'replace') replace = new Map()
        members.forEach(put)
      }
      continue
    }
    if (/^(urn:ietf:params:scim:schemas:core:2\.0:group:)?members\b/i.test(o.path)) {
      const id = o.op === 'remove' ? removedById(o.path) : undefined
      if (id === undefined) return undefined
      charge(1, meter)
      drop(id)
      continue
    }
    rest.push(o)
  }
  return { ...(replace ? { replace: [...replace.values()] } : {}), add: [...add.values()], remove: [...remove], rest }
}
