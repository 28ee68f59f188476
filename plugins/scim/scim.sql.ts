import { scimError } from './scim.errors.ts'
import { comparisons, type AttrPath, type Filter, type Value } from './scim.filter.ts'
import { urn } from './scim.shared.ts'

/**
 * A SCIM filter as a SQL condition over the directory's tables (`users u`, `groups g`), with
 * its values as parameters. Each attribute a filter may name is one row of a table per
 * resource type; an attribute the table lacks is 400 invalidFilter naming it. Strings compare
 * without regard to case except where the schema says caseExact (id, externalId, member ids);
 * every comparison is true or false, never NULL, so `not (…)` means what it says.
 */

type Scalar = 'text' | 'exact' | 'bool' | 'time'
type Column = { kind: Scalar; sql: string }
/** A multi-valued attribute: a jsonb array expression and the types of its elements' sub-attributes. */
type Multi = { kind: 'multi'; sql: string; subs: Record<string, Scalar>; scalar?: boolean }
/** A single complex attribute: its sub-attributes. */
type Complex = { kind: 'complex'; sql: string; subs: Record<string, Column> }
type Entry = Column | Multi | Complex

const jsonText = (base: string, key: string): Column => ({ kind: 'text', sql: `(${base}->>'${key}')` })
const text = (sql: string): Column => ({ kind: 'text', sql })
const typed: Record<string, Scalar> = { value: 'text', display: 'text', type: 'text', primary: 'bool' }

const userAttributes: Record<string, Entry> = {
  id: { kind: 'exact', sql: 'u.id::text' },
  externalid: { kind: 'exact', sql: 'u.external_id' },
  username: text('u.user_name'),
  displayname: text('u.display_name'),
  active: { kind: 'bool', sql: 'u.active' },
  name: {
    kind: 'complex',
    sql: 'u.name',
    subs: Object.fromEntries(
      ['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'].map((k) => [
        k.toLowerCase(),
        jsonText('u.name', k)
      ])
    )
  },
  emails: { kind: 'multi', sql: 'u.emails', subs: typed },
  phonenumbers: { kind: 'multi', sql: 'u.phone_numbers', subs: typed },
  ...Object.fromEntries(
    ['nickName', 'profileUrl', 'title', 'userType', 'preferredLanguage', 'locale', 'timezone'].map((k) => [
      k.toLowerCase(),
      jsonText('u.attributes', k)
    ])
  ),
  ...Object.fromEntries(
    ['ims', 'photos', 'entitlements', 'roles', 'x509Certificates'].map((k) => [
      k.toLowerCase(),
      { kind: 'multi', sql: `(u.attributes->'${k}')`, subs: typed }
    ])
  ),
  addresses: {
    kind: 'multi',
    sql: "(u.attributes->'addresses')",
    subs: {
      ...Object.fromEntries(
        ['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country', 'type'].map((k) => [
          k.toLowerCase(),
          'text'
        ])
      ),
      primary: 'bool'
    }
  },
  groups: {
    kind: 'multi',
    sql: `(SELECT coalesce(jsonb_agg(jsonb_build_object('value', g.id::text, 'display', g.display_name, 'type', 'direct')), '[]'::jsonb)
             FROM group_members gm JOIN groups g ON g.tenant_id = gm.tenant_id AND g.id = gm.group_id WHERE gm.tenant_id = u.tenant_id AND gm.user_id = u.id)`,
    subs: { value: 'exact', display: 'text', type: 'text' }
  },
  meta: {
    kind: 'complex',
    sql: 'u.created_at',
    subs: { created: { kind: 'time', sql: 'u.created_at' }, lastmodified: { kind: 'time', sql: 'u.updated_at' } }
  }
}

const enterpriseAttributes: Record<string, Entry> = {
  ...Object.fromEntries(
    ['employeeNumber', 'costCenter', 'organization', 'division', 'department'].map((k) => [
      k.toLowerCase(),
      jsonText('u.enterprise', k)
    ])
  ),
  manager: {
    kind: 'complex',
    sql: "(u.enterprise->'manager')",
    subs: {
      value: jsonText("u.enterprise->'manager'", 'value'),
      displayname: jsonText("u.enterprise->'manager'", 'displayName')
    }
  }
}

const groupAttributes: Record<string, Entry> = {
  id: { kind: 'exact', sql: 'g.id::text' },
  externalid: { kind: 'exact', sql: 'g.external_id' },
  displayname: text('g.display_name'),
  members: {
    kind: 'multi',
    sql: `(SELECT coalesce(jsonb_agg(jsonb_build_object('value', gm.user_id::text, 'type', 'User')), '[]'::jsonb) FROM group_members gm WHERE gm.tenant_id = g.tenant_id AND gm.group_id = g.id)`,
    subs: { value: 'exact', type: 'text' }
  },
  meta: {
    kind: 'complex',
    sql: 'g.created_at',
    subs: { created: { kind: 'time', sql: 'g.created_at' }, lastmodified: { kind: 'time', sql: 'g.updated_at' } }
  }
}

const recordsGroupAttributes: Record<string, Entry> = {
  roles: { kind: 'multi', sql: "to_jsonb(coalesce(g.named_roles, '{}'))", subs: {}, scalar: true },
  grantedroles: { kind: 'multi', sql: 'to_jsonb(g.roles)', subs: {}, scalar: true }
}

const tables = {
  User: {
    core: urn.user,
    attributes: userAttributes,
    extensions: { [urn.enterpriseUser.toLowerCase()]: enterpriseAttributes }
  },
  Group: {
    core: urn.group,
    attributes: groupAttributes,
    extensions: { [urn.recordsGroup.toLowerCase()]: recordsGroupAttributes }
  }
} as const

export type ResourceType = keyof typeof tables

/** A table's entry for a name the client wrote: its own entries only (`constructor`, `__proto__` name no attribute). */
const own = <T>(table: Record<string, T>, key: string): T | undefined =>
  Object.hasOwn(table, key) ? table[key] : undefined

const name = (p: AttrPath) => `${p.schema ? `${p.schema}:` : ''}${p.attr}${p.sub ? `.${p.sub}` : ''}`
const unknown = (p: AttrPath, type: ResourceType) =>
  scimError(400, 'invalidFilter', `The filter names "${name(p)}", which is no attribute a ${type} can be filtered on.`)

class Builder {
  readonly values: unknown[] = []
  /** Per row, the elements of multi-valued attributes the filter is evaluated on, times the comparisons made on each (SQL over the row). */
  readonly elements: string[] = []
  constructor(private readonly type: ResourceType) {}

  private param(v: unknown) {
    return `$${this.values.push(v)}`
  }

  private entry(p: AttrPath): Entry {
    const table = tables[this.type]
    let attrs: Record<string, Entry> = table.attributes
    if (p.schema) {
      const ext = own(table.extensions as Record<string, Record<string, Entry>>, p.schema.toLowerCase())
      if (ext) attrs = ext
      else if (p.schema.toLowerCase() !== table.core.toLowerCase()) throw unknown(p, this.type)
    }
    const e = own(attrs, p.attr.toLowerCase())
    if (!e) throw unknown(p, this.type)
    return e
  }

  /** A comparison of one scalar SQL expression. */
  private scalar(kind: Scalar, sql: string, op: string, value: Value, p: AttrPath): string {
    if (op === 'pr')
      return kind === 'text' || kind === 'exact' ? `(${sql} IS NOT NULL AND ${sql} <> '')` : `${sql} IS NOT NULL`
    if (value === null) {
      if (op === 'eq') return `${sql} IS NULL`
      if (op === 'ne') return `${sql} IS NOT NULL`
      throw scimError(400, 'invalidFilter', `"${name(p)} ${op} null" compares with null, which only eq and ne do.`)
    }
    if (kind === 'bool') {
      const b =
        typeof value === 'boolean'
          ? value
          : typeof value === 'string' && /^(true|false)$/i.test(value)
            ? value.toLowerCase() === 'true'
            : undefined
      if (b === undefined || !['eq', 'ne'].includes(op))
        throw scimError(400, 'invalidFilter', `"${name(p)}" is a boolean: compare it with eq or ne and true or false.`)
      return op === 'eq' ? `${sql} = ${this.param(b)}` : `${sql} IS DISTINCT FROM ${this.param(b)}`
    }
    if (kind === 'time') {
      const at = typeof value === 'string' ? dateTime(value) : undefined
      if (!at)
        throw scimError(
          400,
          'invalidFilter',
          `"${name(p)}" is a date-time: compare it with one such as "2026-01-31T12:00:00Z", not ${JSON.stringify(value)}.`
        )
      const ops: Record<string, string> = { eq: '=', ne: '<>', gt: '>', ge: '>=', lt: '<', le: '<=' }
      if (!ops[op])
        throw scimError(400, 'invalidFilter', `"${name(p)}" is a date-time: ${op} does not compare date-times.`)
      return `${sql} ${ops[op]} ${this.param(at)}::timestamptz`
    }
    const v = String(value)
    const [col, val] =
      kind === 'exact'
        ? [sql, (x: string) => this.param(x)]
        : [`lower(${sql})`, (x: string) => `lower(${this.param(x)})`]
    const like = (pattern: string) => `${col} LIKE ${val(pattern)} ESCAPE '\\'`
    const escaped = v.replace(/[\\%_]/g, (c) => `\\${c}`)
    switch (op) {
      case 'eq':
        return `${col} = ${val(v)}`
      case 'ne':
        return `${col} IS DISTINCT FROM ${val(v)}`
      case 'co':
        return like(`%${escaped}%`)
      case 'sw':
        return like(`${escaped}%`)
      case 'ew':
        return like(`%${escaped}`)
      default:
        return `${col} ${{ gt: '>', ge: '>=', lt: '<', le: '<=' }[op]} ${val(v)}`
    }
  }

  /** A filter over the elements `e` of a multi-valued attribute. */
  private element(m: Multi, f: Filter, outer: AttrPath): string {
    switch (f.op) {
      case 'and':
      case 'or':
        return `(${this.element(m, f.left, outer)} ${f.op.toUpperCase()} ${this.element(m, f.right, outer)})`
      case 'not':
        return `NOT ${this.element(m, f.expr, outer)}`
      case 'has':
        throw scimError(400, 'invalidFilter', `"${name(outer)}[…]" cannot hold another value filter.`)
      default: {
        const sub = (f.path.sub ?? f.path.attr).toLowerCase()
        if (m.scalar) {
          if (sub !== 'value') throw unknown({ ...outer, sub: f.path.attr }, this.type)
          return `coalesce(${this.scalar('text', "(e #>> '{}')", f.op, f.op === 'pr' ? null : f.value, outer)}, false)`
        }
        const kind = own(m.subs, sub)
        if (!kind) throw unknown({ ...outer, sub: f.path.sub ?? f.path.attr }, this.type)
        const sql = kind === 'bool' ? `(e->>'${keyName(m, sub)}')::boolean` : `(e->>'${keyName(m, sub)}')`
        return `coalesce(${this.scalar(kind, sql, f.op, f.op === 'pr' ? null : f.value, { ...outer, sub })}, false)`
      }
    }
  }

  private exists(m: Multi, condition: string, comparisons: number): string {
    this.elements.push(
      `${comparisons} * coalesce(jsonb_array_length(CASE WHEN jsonb_typeof(${m.sql}) = 'array' THEN ${m.sql} END), 0)`
    )
    return `EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${m.sql}) = 'array' THEN ${m.sql} ELSE '[]'::jsonb END) AS e WHERE ${condition})`
  }

  build(f: Filter): string {
    switch (f.op) {
      case 'and':
      case 'or':
        return `(${this.build(f.left)} ${f.op.toUpperCase()} ${this.build(f.right)})`
      case 'not':
        return `NOT ${this.build(f.expr)}`
      case 'has': {
        const e = this.entry(f.path)
        if (e.kind !== 'multi')
          throw scimError(
            400,
            'invalidFilter',
            `"${name(f.path)}[…]" filters the values of an attribute that has one value.`
          )
        const inner = this.element(e, f.filter, f.path)
        return this.exists(e, f.then ? `${inner} AND ${this.element(e, f.then, f.path)}` : inner, comparisons(f))
      }
      default: {
        const e = this.entry(f.path)
        const value = f.op === 'pr' ? null : f.value
        if (e.kind === 'multi') {
          if (f.op === 'pr' && !f.path.sub)
            return `coalesce(jsonb_array_length(CASE WHEN jsonb_typeof(${e.sql}) = 'array' THEN ${e.sql} END) > 0, false)`
          // `emails eq "x"` compares the values; `emails.type eq "work"` a sub-attribute of any element.
          return this.exists(e, this.element(e, { ...f, path: { attr: f.path.sub ?? 'value' } }, f.path), 1)
        }
        if (e.kind === 'complex') {
          if (!f.path.sub) {
            if (f.op === 'pr')
              return `coalesce(${e.sql} IS NOT NULL AND jsonb_typeof(${e.sql}) = 'object' AND ${e.sql} <> '{}'::jsonb, false)`
            throw scimError(
              400,
              'invalidFilter',
              `"${name(f.path)}" is complex: filter on one of its sub-attributes (${Object.keys(e.subs).join(', ')}).`
            )
          }
          const sub = own(e.subs, f.path.sub.toLowerCase())
          if (!sub) throw unknown(f.path, this.type)
          return `coalesce(${this.scalar(sub.kind, sub.sql, f.op, value, f.path)}, false)`
        }
        if (f.path.sub) throw unknown(f.path, this.type)
        return `coalesce(${this.scalar(e.kind, e.sql, f.op, value, f.path)}, false)`
      }
    }
  }
}

/** The stored key of a sub-attribute (stored keys are in the schema's case). */
function keyName(m: Multi, lower: string): string {
  const canonical: Record<string, string> = { streetaddress: 'streetAddress', postalcode: 'postalCode' }
  return own(m.subs, lower) ? (own(canonical, lower) ?? lower) : lower
}

/** An ISO 8601 date-time PostgreSQL can hold (years 1 to 9999, any fraction, an offset or Z), as UTC text; undefined otherwise. */
export function dateTime(value: string): string | undefined {
  if (
    !/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i.test(value) ||
    value.startsWith('0000')
  )
    return undefined
  const ms = Date.parse(value.replace(/(\.\d{3})\d+/, '$1'))
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString()
}

/**
 * The SQL condition (and its values) of a filter over `u` (User) or `g` (Group), and, when it
 * looks into multi-valued attributes, `elements`: an SQL expression over the row counting the
 * elements it is evaluated on times its comparisons, which the directory sums over the tenant
 * and charges to the request's budget before running the filter (a comparison of a column
 * costs nothing extra: an index or one step per row).
 */
export function filterSql(
  type: ResourceType,
  f: Filter | undefined
): { sql: string; values: unknown[]; elements?: string } {
  if (!f) return { sql: '', values: [] }
  const b = new Builder(type)
  const sql = b.build(f)
  return {
    sql,
    values: b.values,
    ...(b.elements.length ? { elements: b.elements.map((e) => `(${e})`).join(' + ') } : {})
  }
}
