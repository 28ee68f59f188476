import type SCIMMY from 'scimmy'
import { maxValuesPerAttribute } from '../../core/auth/users.ts'
import { charge } from '../../core/limits/budget.ts'
import { scimError } from './scim.errors.ts'
import { comparisons, parsePatchPath, type Filter, type Value } from './scim.filter.ts'
import { attributeOf } from './scim.schemas.ts'
import { urn } from './scim.shared.ts'

/**
 * PATCH (RFC 7644 §3.5.2) on a resource document: add, replace and remove, with and without
 * `path`, value-filter paths (`emails[type eq "work"].value`, `members[value eq "…"]`),
 * extension attributes by URN. The patched document is then checked by the schema's coercion
 * (scim.schemas.ts), so a PATCH can store nothing a PUT could not.
 *
 * Written here rather than with scimmy's PatchOp, which refuses what Entra ID sends: `op`
 * "Replace", string booleans ("False"), paths in another case ("Name.FamilyName"), a manager
 * or member given as a bare id, and an add or replace through a value filter that matches
 * nothing (Entra's way to add a work e-mail); it also matches value filters case-sensitively.
 * Those are accepted here: ops and names in any case, booleans as strings (by normalise() in
 * the coercion), and a filter of `eq` comparisons that matches nothing makes the element.
 *
 * Bounded and metered: at most `maxOperations` operations, op values of at most
 * `maxValuesPerAttribute` values (members aside), and every array element an operation
 * evaluates a filter on or touches is charged to the request's budget before the work
 * (`scim patch elements`, one unit per element and comparison), so a PATCH past the budget
 * is 422 request.too_costly having changed nothing. Each operation is linear in the
 * elements it touches.
 */

type Definition = InstanceType<typeof SCIMMY.Types.SchemaDefinition>
type Attribute = InstanceType<typeof SCIMMY.Types.Attribute>
type Doc = Record<string, unknown>

const isObject = (v: unknown): v is Doc => !!v && typeof v === 'object' && !Array.isArray(v)
const isDefinition = (a: unknown): a is Definition =>
  !!a && typeof (a as Definition).id === 'string' && Array.isArray((a as Definition).attributes)
const keyOf = (o: Doc, name: string) => {
  if (Object.hasOwn(o, name)) return name
  const lower = name.toLowerCase()
  return Object.keys(o).find((k) => k.toLowerCase() === lower)
}
/** Entra ID sends one operation per changed attribute (a handful), Okta one or two. */
export const maxOperations = 100
const meter = 'scim patch elements'

export interface PatchOperation {
  op: 'add' | 'replace' | 'remove'
  path?: string
  value?: unknown
}

/** The operations of a PatchOp body, checked (RFC 7644 §3.5.2: schemas, Operations, op, path). */
export function patchOperations(body: unknown): PatchOperation[] {
  if (!isObject(body))
    throw scimError(
      400,
      'invalidSyntax',
      'The body must be a PatchOp message: {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [...]}.'
    )
  const schemas = body[keyOf(body, 'schemas') ?? 'schemas']
  if (
    schemas !== undefined &&
    (!Array.isArray(schemas) ||
      !schemas.some((s) => typeof s === 'string' && s.toLowerCase() === urn.patchOp.toLowerCase()))
  ) {
    throw scimError(400, 'invalidSyntax', `A PATCH body's schemas must be ["${urn.patchOp}"].`)
  }
  const ops = body[keyOf(body, 'Operations') ?? 'Operations']
  if (!Array.isArray(ops) || !ops.length)
    throw scimError(400, 'invalidValue', 'A PATCH body needs "Operations": a non-empty array of {op, path, value}.')
  if (ops.length > maxOperations)
    throw scimError(400, 'tooMany', `A PATCH takes at most ${maxOperations} operations; this one has ${ops.length}.`)
  return ops.map((raw, i) => {
    const n = i + 1
    if (!isObject(raw)) throw scimError(400, 'invalidValue', `Operation ${n} is not an object.`)
    const get = (name: string) => raw[keyOf(raw, name) ?? name]
    const op = get('op')
    if (typeof op !== 'string' || !['add', 'replace', 'remove'].includes(op.toLowerCase()))
      throw scimError(
        400,
        'invalidSyntax',
        `Operation ${n}: "op" must be add, replace or remove, not ${JSON.stringify(op)}.`
      )
    const path = get('path')
    if (path !== undefined && (typeof path !== 'string' || !path.trim()))
      throw scimError(400, 'invalidPath', `Operation ${n}: "path" must be a non-empty string.`)
    const value = get('value')
    const lower = op.toLowerCase() as PatchOperation['op']
    if (lower === 'remove' && path === undefined)
      throw scimError(400, 'noTarget', `Operation ${n}: remove needs a "path".`)
    if (lower !== 'remove' && value === undefined)
      throw scimError(400, 'invalidValue', `Operation ${n}: ${lower} needs a "value".`)
    if (lower !== 'remove' && path === undefined && !isObject(value))
      throw scimError(
        400,
        'invalidValue',
        `Operation ${n}: ${lower} without a path takes an object of attributes as its value.`
      )
    checkCount(n, typeof path === 'string' ? path : undefined, value)
    return {
      op: lower,
      ...(path !== undefined ? { path: path.trim() } : {}),
      ...(value !== undefined ? { value } : {})
    }
  })
}

const isMembers = (name: string) => /^(urn:ietf:params:scim:schemas:core:2\.0:group:)?members\b/i.test(name.trim())

/** An operation's value holds at most maxValuesPerAttribute values of an attribute (members aside: metered, not capped). */
function checkCount(n: number, path: string | undefined, value: unknown) {
  const lists: Array<[string, unknown]> =
    path !== undefined ? [[path, value]] : isObject(value) ? Object.entries(value) : []
  for (const [name, v] of lists) {
    if (Array.isArray(v) && v.length > maxValuesPerAttribute && !isMembers(name)) {
      throw scimError(
        400,
        'invalidValue',
        `Operation ${n}: ${name} is given ${v.length} values; a resource holds at most ${maxValuesPerAttribute} values of each multi-valued attribute (emails, phoneNumbers, addresses, roles…).`,
        { code: 'scim.too_many_values' }
      )
    }
  }
}

/** Whether a value of a multi-valued attribute matches a value filter (strings compared without regard to case). */
export function matches(f: Filter, element: unknown): boolean {
  switch (f.op) {
    case 'and':
      return matches(f.left, element) && matches(f.right, element)
    case 'or':
      return matches(f.left, element) || matches(f.right, element)
    case 'not':
      return !matches(f.expr, element)
    case 'has':
      return false
    default: {
      // Inside brackets a plain value (`emails[value eq "x"]`) or a sub-attribute of it.
      const name = f.path.sub ?? f.path.attr
      const actual = isObject(element)
        ? element[keyOf(element, name) ?? name]
        : name.toLowerCase() === 'value'
          ? element
          : undefined
      if (f.op === 'pr') return actual !== undefined && actual !== null && actual !== ''
      return compare(f.op, actual, f.value)
    }
  }
}

function compare(op: string, actual: unknown, expected: Value): boolean {
  if (expected === null)
    return op === 'eq'
      ? actual === undefined || actual === null
      : op === 'ne'
        ? actual !== undefined && actual !== null
        : false
  if (typeof actual === 'boolean') {
    const e = typeof expected === 'string' ? expected.toLowerCase() === 'true' : expected
    return op === 'eq' ? actual === e : op === 'ne' ? actual !== e : false
  }
  if (actual === undefined || actual === null) return op === 'ne'
  const a = typeof actual === 'string' ? actual.toLowerCase() : actual
  const e = typeof expected === 'string' ? expected.toLowerCase() : expected
  switch (op) {
    case 'eq':
      return a === e || String(a) === String(e)
    case 'ne':
      return !(a === e || String(a) === String(e))
    case 'co':
      return String(a).includes(String(e))
    case 'sw':
      return String(a).startsWith(String(e))
    case 'ew':
      return String(a).endsWith(String(e))
    case 'gt':
      return a > e
    case 'ge':
      return a >= e
    case 'lt':
      return a < e
    case 'le':
      return a <= e
    default:
      return false
  }
}

/** The sub-attribute values an `eq`-only filter fixes (`type eq "work"`), to build the element it names; undefined when it fixes none. */
function fixedBy(f: Filter): Doc | undefined {
  if (f.op === 'eq' && !f.path.sub) return { [f.path.attr]: f.value }
  if (f.op === 'and') {
    const l = fixedBy(f.left)
    const r = fixedBy(f.right)
    return l && r ? { ...l, ...r } : undefined
  }
  return undefined
}

interface Target {
  holder: Doc
  key: string
  attr: Attribute
  sub?: Attribute
  filter?: Filter
}

function canonicalSub(attr: Attribute, name: string, path: string): Attribute {
  const sub = (attr.subAttributes ?? []).find((s) => s.name.toLowerCase() === name.toLowerCase())
  if (!sub) throw scimError(400, 'invalidPath', `"${path}": ${attr.name} has no sub-attribute "${name}".`)
  return sub
}

const readOnly = (a: Attribute) => a.config.mutable === false || a.config.mutable === 'readOnly'

/** Resolves a path against the schema; `create` makes a missing extension object (add, replace). */
function resolve(doc: Doc, definition: Definition, text: string, create: boolean): Target | { extension: Definition } {
  const { path, filter } = parsePatchPath(text)
  let holder = doc
  let scope: Definition = definition
  if (path.schema) {
    const whole = attributeOf(definition, `${path.schema}:${path.attr}`)
    if (isDefinition(whole) && !path.sub && !filter) return { extension: whole }
    const ext = attributeOf(definition, path.schema)
    if (isDefinition(ext)) {
      scope = ext
      const key = keyOf(doc, ext.id) ?? ext.id
      if (!isObject(doc[key])) {
        if (!create) return { holder: {}, key: path.attr, attr: attributeOf(ext, path.attr) as Attribute }
        doc[key] = {}
      }
      holder = doc[key] as Doc
    } else if (path.schema.toLowerCase() !== definition.id.toLowerCase()) {
      throw scimError(400, 'invalidPath', `"${text}": this resource has no schema ${path.schema}.`)
    }
  }
  const attr = attributeOf(scope, path.attr)
  if (!attr || isDefinition(attr)) throw scimError(400, 'invalidPath', `"${text}" names no attribute of this resource.`)
  if (readOnly(attr) || attr.name === 'id') throw scimError(400, 'mutability', `"${text}" is read-only.`)
  const a = attr
  if (filter && !a.config.multiValued)
    throw scimError(400, 'invalidPath', `"${text}" filters ${a.name}, which has one value.`)
  const sub = path.sub ? canonicalSub(a, path.sub, text) : undefined
  if (sub && readOnly(sub)) throw scimError(400, 'mutability', `"${text}" is read-only.`)
  return {
    holder,
    key: keyOf(holder, a.name) ?? a.name,
    attr: a,
    ...(sub ? { sub } : {}),
    ...(filter ? { filter } : {})
  }
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

function addValues(t: Target, value: unknown) {
  const current = t.holder[t.key]
  if (t.attr.config.multiValued) {
    const list = Array.isArray(current) ? current : []
    const values = Array.isArray(value) ? value : [value]
    charge(list.length + values.length, meter)
    // A value already there is not added twice (RFC 7644 §3.5.2.1); for members, the same id is the same value.
    const key = (v: unknown) =>
      isObject(v) && t.key === 'members' ? String(v[keyOf(v, 'value') ?? 'value']).toLowerCase() : JSON.stringify(v)
    const there = new Set(list.map(key))
    const fresh = values.filter((v) => {
      const k = key(v)
      if (there.has(k)) return false
      there.add(k)
      return true
    })
    t.holder[t.key] = [...list, ...fresh]
  } else if (t.attr.type === 'complex' && isObject(value) && isObject(current)) {
    t.holder[t.key] = { ...current, ...value }
  } else {
    t.holder[t.key] = value
  }
}

/** Sets (or removes) the sub-attribute of the elements matching the target's filter, making the element when none does. */
function throughFilter(t: Target, op: PatchOperation['op'], value: unknown, text: string) {
  const list = Array.isArray(t.holder[t.key]) ? (t.holder[t.key] as unknown[]) : []
  charge(list.length * comparisons(t.filter!), meter)
  const hits = new Set(list.filter((e) => matches(t.filter!, e)))
  if (op === 'remove') {
    if (!t.sub) t.holder[t.key] = list.filter((e) => !hits.has(e))
    else for (const e of hits) if (isObject(e)) delete e[keyOf(e, t.sub.name) ?? t.sub.name]
    return
  }
  if (!hits.size) {
    const fixed = fixedBy(t.filter!)
    if (!fixed) throw scimError(400, 'noTarget', `"${text}" matches no value to ${op}.`)
    t.holder[t.key] = [
      ...list,
      t.sub ? { ...fixed, [t.sub.name]: value } : { ...fixed, ...(isObject(value) ? value : { value }) }
    ]
    return
  }
  t.holder[t.key] = list.map((e) =>
    !hits.has(e)
      ? e
      : t.sub
        ? { ...(isObject(e) ? e : {}), [t.sub.name]: value }
        : op === 'replace' && isObject(value)
          ? value
          : isObject(e) && isObject(value)
            ? { ...e, ...value }
            : value
  )
}

function applyAt(doc: Doc, definition: Definition, op: PatchOperation['op'], text: string, value: unknown) {
  const t = resolve(doc, definition, text, op !== 'remove')
  if ('extension' in t) {
    const key = keyOf(doc, t.extension.id) ?? t.extension.id
    if (op === 'remove') delete doc[key]
    else if (!isObject(value)) throw scimError(400, 'invalidValue', `"${text}" takes an object of its attributes.`)
    else doc[key] = op === 'add' && isObject(doc[key]) ? { ...doc[key], ...value } : value
    return
  }
  if (t.filter) return throughFilter(t, op, value, text)
  if (t.sub) {
    const current = t.holder[t.key]
    const each = (e: unknown) => {
      const o = isObject(e) ? { ...e } : {}
      if (op === 'remove') delete o[keyOf(o, t.sub!.name) ?? t.sub!.name]
      else o[keyOf(o, t.sub!.name) ?? t.sub!.name] = value
      return o
    }
    if (t.attr.config.multiValued) {
      const list = Array.isArray(current) ? current : []
      charge(list.length, meter)
      t.holder[t.key] = list.map(each)
    } else if (op !== 'remove' || isObject(current)) t.holder[t.key] = each(current)
    return
  }
  if (op === 'remove') {
    // `"remove", "path": "members", "value": [{"value": "<id>"}]`: only those values (Entra's way to remove a member).
    if (t.attr.config.multiValued && value !== undefined && Array.isArray(t.holder[t.key])) {
      const list = t.holder[t.key] as unknown[]
      const values = Array.isArray(value) ? value : [value]
      charge(list.length + values.length, meter)
      const gone = new Set(
        values.map((v) => (isObject(v) ? v[keyOf(v, 'value') ?? 'value'] : v)).map((v) => String(v).toLowerCase())
      )
      t.holder[t.key] = list.filter(
        (e) => !gone.has(String(isObject(e) ? e[keyOf(e, 'value') ?? 'value'] : e).toLowerCase())
      )
    } else delete t.holder[t.key]
    return
  }
  if (op === 'replace') {
    if (t.attr.type === 'complex' && !t.attr.config.multiValued && isObject(value) && isObject(t.holder[t.key]))
      t.holder[t.key] = { ...(t.holder[t.key] as Doc), ...value }
    else t.holder[t.key] = t.attr.config.multiValued && !Array.isArray(value) ? [value] : value
    return
  }
  addValues(t, value)
}

/**
 * Applies the operations to a copy of `doc` (the resource's writable attributes) and returns
 * it. `readOnlyKeys` are attributes a no-path value may repeat (Okta sends the group's `id`
 * with a rename): ignored when equal to the resource's, a mutability error otherwise.
 */
export function applyPatch(
  definition: Definition,
  doc: Doc,
  operations: PatchOperation[],
  readOnlyKeys: Record<string, unknown> = {}
): Doc {
  // Copying the document touches each of its values once.
  charge(
    operations.length + Object.values(doc).reduce<number>((n, v) => n + (Array.isArray(v) ? v.length : 1), 0),
    meter
  )
  const out = structuredClone(doc)
  for (const [i, o] of operations.entries()) {
    try {
      if (o.path !== undefined) {
        applyAt(out, definition, o.op, o.path, o.value)
        continue
      }
      for (const [k, v] of Object.entries(o.value as Doc)) {
        const fixed = Object.keys(readOnlyKeys).find((r) => r.toLowerCase() === k.toLowerCase())
        if (fixed) {
          if (!same(readOnlyKeys[fixed], v)) throw scimError(400, 'mutability', `"${k}" is read-only.`)
          continue
        }
        const a = attributeOf(definition, k.split('.')[0].includes(':') ? k : k.split('.')[0])
        // Read-only attributes (meta, groups) and attributes of no schema here are not values to set: left alone.
        if (
          k.toLowerCase() === 'schemas' ||
          (!a && !k.includes(':') && !k.includes('.')) ||
          (a && !isDefinition(a) && readOnly(a))
        )
          continue
        applyAt(out, definition, o.op, k, v)
      }
    } catch (err) {
      const e = err as Error & { message: string }
      e.message = `Operation ${i + 1} (${o.op}${o.path ? ` ${o.path}` : ''}): ${e.message}`
      throw err
    }
  }
  return out
}
