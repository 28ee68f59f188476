import SCIMMY from 'scimmy'
import {
  maxValuesPerAttribute,
  type GroupInfo,
  type GroupMember,
  type MultiValue,
  type UserInfo,
  type UserInput
} from '../../core/auth/users.ts'
import { entityTag } from '../../core/http/entity-tag.ts'
import { charge } from '../../core/limits/budget.ts'
import { scimError } from './scim.errors.ts'
import { urn } from './scim.shared.ts'

/**
 * The SCIM resource schemas, from scimmy (RFC 7643's User, the Enterprise User extension and
 * Group, with their attribute characteristics and descriptions), plus this service's Group
 * extension naming the roles a group grants. Requests are checked and shaped by scimmy's
 * coercion: attribute names in any case, unknown attributes dropped, read-only ones (id, meta,
 * groups) ignored, types checked. What Entra ID sends that scimmy would refuse is normalised
 * first (`normalise`): booleans as "True"/"False", a manager as a bare id, a member as a bare id.
 */

type Definition = InstanceType<typeof SCIMMY.Types.SchemaDefinition>
type Attribute = InstanceType<typeof SCIMMY.Types.Attribute>

const isDefinition = (a: unknown): a is Definition =>
  !!a && typeof (a as Definition).id === 'string' && Array.isArray((a as Definition).attributes)

const { Attribute: Attr, SchemaDefinition } = SCIMMY.Types

// scimmy takes only ids under urn:ietf:params:scim:schemas:; this service's extension lives in its own namespace (RFC 7643 §3.3 lets it), set once the definition is made.
export const recordsGroupDefinition: Definition = new SchemaDefinition(
  'RecordsGroup',
  'urn:ietf:params:scim:schemas:extension:records:2.0:Group',
  'How a group maps onto the roles of the records platform',
  [
    new Attr('string', 'roles', {
      multiValued: true,
      description:
        'Roles of the tenant the group grants its members (e.g. "safety-manager"). Left out, a group whose displayName is a role key grants that role. An unknown role is refused (400 invalidValue) naming the roles the tenant has.'
    }),
    new Attr('string', 'grantedRoles', {
      multiValued: true,
      mutable: false,
      description: 'The roles members get through this group: `roles`, or the role its displayName names.'
    })
  ]
)
recordsGroupDefinition.id = urn.recordsGroup

// scimmy's definitions are process-wide; extending them with the same definition again is a no-op.
export const userDefinition: Definition = SCIMMY.Schemas.User.definition.extend(
  SCIMMY.Schemas.EnterpriseUser.definition,
  false
)
export const groupDefinition: Definition = SCIMMY.Schemas.Group.definition.extend(recordsGroupDefinition, false)
export const enterpriseDefinition: Definition = SCIMMY.Schemas.EnterpriseUser.definition

/**
 * Canonical values are suggestions (RFC 7643 §2.3.1: "service providers MAY allow other
 * values"); scimmy refuses anything else, and with roles' and x509Certificates' empty lists
 * refuses every `type`. So the `type` of a User's multi-valued attributes takes any text; the
 * suggested values (emails: work, home, other…) are still advertised in /Schemas, from here.
 */
export const suggestedValues = new Map<string, string[]>()
for (const a of userDefinition.attributes as Array<Attribute | Definition>) {
  if (isDefinition(a) || !a.config.multiValued || a.name === 'groups') continue
  for (const sub of a.subAttributes ?? []) {
    const values = sub.config.canonicalValues
    if (sub.name !== 'type' || !Array.isArray(values)) continue
    if (values.length) suggestedValues.set(`${a.name}.${sub.name}`, [...values])
    sub.config.canonicalValues = false
  }
}

/** An attribute (or extension schema) of a definition by name, in any case. */
export function attributeOf(definition: Definition, name: string): Attribute | Definition | undefined {
  const lower = name.toLowerCase()
  return (definition.attributes as Array<Attribute | Definition>).find(
    (a) =>
      ((a as Definition).id ?? a.name).toLowerCase() === lower ||
      (!(a as Definition).id && a.name.toLowerCase() === lower)
  )
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v)

/** Entra's string booleans, bare ids for complex values, single objects for collections: made what the schema says. */
function normaliseValue(a: Attribute, value: unknown): unknown {
  if (a.type === 'boolean' && typeof value === 'string' && /^(true|false)$/i.test(value))
    return value.toLowerCase() === 'true'
  if (a.type !== 'complex') return value
  const subs = a.subAttributes ?? []
  const one = (v: unknown) => {
    if ((typeof v === 'string' || typeof v === 'number') && subs.some((s) => s.name === 'value'))
      return { value: String(v) }
    if (!isObject(v)) return v
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v)) {
      const sub = subs.find((s) => s.name.toLowerCase() === k.toLowerCase())
      out[k] = sub ? normaliseValue(sub, x) : x
    }
    return out
  }
  if (a.config.multiValued)
    return Array.isArray(value) ? value.map(one) : value === null || value === undefined ? value : [one(value)]
  return one(value)
}

/** A request body made what the schema expects where Entra ID and Microsoft's collection send otherwise. */
export function normalise(definition: Definition, data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(data)) {
    const a = attributeOf(definition, k)
    if (isDefinition(a)) out[k] = isObject(v) ? normalise(a, v) : v
    else out[k] = a ? normaliseValue(a, v) : v
  }
  return out
}

/**
 * 400 invalidValue when a body gives a multi-valued attribute more values than a resource
 * may hold (`maxValuesPerAttribute`; a group's members are bounded by the body's size and
 * metered instead). Checked on what a client sends, before any coercion or PATCH works on it.
 */
export function checkValueCounts(definition: Definition, data: unknown): void {
  if (!isObject(data)) return
  for (const [k, v] of Object.entries(data)) {
    const a = attributeOf(definition, k)
    if (isDefinition(a)) checkValueCounts(a, v)
    else if (a?.config.multiValued && a.name !== 'members' && Array.isArray(v) && v.length > maxValuesPerAttribute)
      throw tooManyValues(a.name, v.length)
  }
}

/** The refusal of a multi-valued attribute holding too many values. */
export const tooManyValues = (name: string, n: number) =>
  scimError(
    400,
    'invalidValue',
    `${name} holds ${n} values; a resource holds at most ${maxValuesPerAttribute} values of each multi-valued attribute (emails, phoneNumbers, addresses, roles…).`,
    { code: 'scim.too_many_values' }
  )

/**
 * Budget units per value scimmy's coercion shapes: it builds getters, setters and a frozen
 * object per value, about 80 µs of CPU each where a filter comparison costs about 1 µs (one
 * unit). Measured on the biggest user the caps allow (800 values: ~70 ms). At the default
 * budget (50,000) the caps refuse first (800 × 50 = 40,000 units); the charge refuses only for
 * a tenant whose budget is lowered, and counts the work against the rate limit either way.
 */
export const coercionUnits = 50

/** The values a coercion shapes: one per attribute, one per element of a multi-valued one, extensions likewise. */
export function valuesIn(data: Record<string, unknown>): number {
  let n = 0
  for (const v of Object.values(data))
    n += Array.isArray(v)
      ? v.length
      : isObject(v) && !Array.isArray(v)
        ? 1 + Object.values(v).reduce<number>((m, x) => m + (Array.isArray(x) ? x.length : 1), 0)
        : 1
  return n
}

/** scimmy's coercion of a request body (direction in), its refusals as 400 invalidValue; charged to the request's budget first. */
export function coerceIn(definition: Definition, data: unknown): Record<string, unknown> {
  if (!isObject(data)) throw scimError(400, 'invalidSyntax', 'The body must be a JSON object: a SCIM resource.')
  charge(valuesIn(data) * coercionUnits, 'scim schema coercion')
  try {
    return JSON.parse(JSON.stringify(definition.coerce(normalise(definition, data), 'in')))
  } catch (err) {
    if ((err as { scimType?: string }).scimType)
      throw scimError(400, (err as { scimType: 'invalidValue' }).scimType, (err as Error).message)
    throw scimError(400, 'invalidValue', `${(err as Error).message}.`)
  }
}

const coreUserKeys = new Set([
  'schemas',
  'id',
  'externalId',
  'meta',
  'userName',
  'name',
  'displayName',
  'active',
  'emails',
  'phoneNumbers',
  'groups',
  'password'
])

/** A coerced User resource as the directory stores it: columns, and every other attribute kept in `attributes`. */
export function userInput(resource: Record<string, unknown>): UserInput & { userName: string } {
  const attributes: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(resource))
    if (!coreUserKeys.has(k) && k !== urn.enterpriseUser && v !== undefined) attributes[k] = v
  const enterprise = resource[urn.enterpriseUser] as Record<string, unknown> | undefined
  // A collection holds values: a null in one (which the schema lets through) is no value.
  const values = (v: unknown) =>
    Array.isArray(v) ? (v.filter((x) => x !== null && x !== undefined) as MultiValue[]) : []
  return {
    userName: resource.userName as string,
    displayName: (resource.displayName as string | undefined) ?? null,
    externalId: (resource.externalId as string | undefined) ?? null,
    active: (resource.active as boolean | undefined) ?? true,
    name: (resource.name as Record<string, unknown> | undefined) ?? null,
    emails: values(resource.emails),
    phoneNumbers: values(resource.phoneNumbers),
    enterprise: enterprise && Object.keys(enterprise).length ? enterprise : null,
    attributes
  }
}

/** The writable part of a user as a SCIM resource: what PATCH operations apply to. */
export function userDocument(u: UserInfo): Record<string, unknown> {
  return {
    schemas: [urn.user, ...(u.enterprise ? [urn.enterpriseUser] : [])],
    ...(u.externalId !== null ? { externalId: u.externalId } : {}),
    userName: u.userName,
    ...(u.name ? { name: u.name } : {}),
    ...(u.displayName !== null ? { displayName: u.displayName } : {}),
    active: u.active,
    ...(u.emails.length ? { emails: u.emails } : {}),
    ...(u.phoneNumbers.length ? { phoneNumbers: u.phoneNumbers } : {}),
    ...u.attributes,
    ...(u.enterprise ? { [urn.enterpriseUser]: u.enterprise } : {})
  }
}

const etagOf = (version: number) => entityTag(version, true)

/** A user as SCIM shows it. */
export function userResource(u: UserInfo, base: string): Record<string, unknown> {
  const { schemas, ...rest } = userDocument(u)
  return {
    schemas,
    id: u.id,
    ...rest,
    ...(u.groups.length
      ? {
          groups: u.groups.map((g) => ({
            value: g.id,
            display: g.displayName,
            $ref: `${base}/Groups/${g.id}`,
            type: 'direct'
          }))
        }
      : {}),
    meta: {
      resourceType: 'User',
      created: u.createdAt,
      lastModified: u.updatedAt,
      location: `${base}/Users/${u.id}`,
      version: etagOf(u.version)
    }
  }
}

/** The writable part of a group: what PATCH operations apply to. */
export function groupDocument(g: GroupInfo, members: GroupMember[] | undefined): Record<string, unknown> {
  return {
    schemas: [urn.group, urn.recordsGroup],
    displayName: g.displayName,
    ...(g.externalId !== null ? { externalId: g.externalId } : {}),
    ...(members?.length
      ? { members: members.map((m) => ({ value: m.userId, display: m.display, type: 'User' })) }
      : {}),
    ...(g.namedRoles ? { [urn.recordsGroup]: { roles: g.namedRoles } } : {})
  }
}

/** A group as SCIM shows it; without `members` when they were not asked for. */
export function groupResource(g: GroupInfo, members: GroupMember[] | undefined, base: string): Record<string, unknown> {
  return {
    schemas: [urn.group, urn.recordsGroup],
    id: g.id,
    displayName: g.displayName,
    ...(g.externalId !== null ? { externalId: g.externalId } : {}),
    ...(members?.length
      ? {
          members: members.map((m) => ({
            value: m.userId,
            display: m.display,
            $ref: `${base}/Users/${m.userId}`,
            type: 'User'
          }))
        }
      : {}),
    // `roles` only when the group names them: a client that reads a group and PUTs it back keeps the name rule.
    [urn.recordsGroup]: { ...(g.namedRoles ? { roles: g.namedRoles } : {}), grantedRoles: g.roles },
    meta: {
      resourceType: 'Group',
      created: g.createdAt,
      lastModified: g.updatedAt,
      location: `${base}/Groups/${g.id}`,
      version: etagOf(g.version)
    }
  }
}

export { etagOf }
