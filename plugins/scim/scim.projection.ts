import { scimError } from './scim.errors.ts'
import { parseAttrPath, type AttrPath } from './scim.filter.ts'

/**
 * `attributes` and `excludedAttributes` (RFC 7644 §3.4.2.5) on a resource as shown: names in
 * any case, `urn:…:attr` for extension (or core) attributes, `attr.sub` for sub-attributes.
 * `id` and `schemas` are always returned. A filter in brackets (`emails[type eq "work"]`, which
 * Microsoft's collection sends) is read as its attribute.
 *
 * Written here: scimmy 1.3.5's projection drops `schemas` and, for `name.givenName`, also
 * returns extension attributes that were not asked for.
 */

type Resource = Record<string, unknown>

const always = new Set(['id', 'schemas'])

export interface Projection {
  mode: 'include' | 'exclude'
  paths: AttrPath[]
}

/** The projection the query asks for, if any (`attributes` wins over `excludedAttributes`, as scimmy and most providers do). */
export function projectionOf(query: Record<string, unknown>): Projection | undefined {
  for (const [param, mode] of [
    ['attributes', 'include'],
    ['excludedAttributes', 'exclude']
  ] as const) {
    const raw = query[param]
    if (raw === undefined) continue
    if (typeof raw !== 'string')
      throw scimError(400, 'invalidValue', `${param} is a comma-separated list of attribute names, given once.`)
    const names = raw
      .split(',')
      .map((s) => s.replace(/\[[^\]]*\]/g, '').trim())
      .filter(Boolean)
    if (!names.length) continue
    if (names.length > 100) throw scimError(400, 'invalidValue', `${param} names more than 100 attributes.`)
    return { mode, paths: names.map((n) => parseAttrPath(n, 'attribute name')) }
  }
  return undefined
}

/** Whether a projection leaves an attribute out entirely (e.g. `excludedAttributes=members`: not worth loading). */
export function excludes(p: Projection | undefined, attr: string): boolean {
  if (!p) return false
  const hit = p.paths.some((x) => x.attr.toLowerCase() === attr.toLowerCase() && !x.sub)
  return p.mode === 'exclude' ? hit : !p.paths.some((x) => x.attr.toLowerCase() === attr.toLowerCase())
}

const keyOf = (o: Resource, name: string) => Object.keys(o).find((k) => k.toLowerCase() === name.toLowerCase())

/** Where a path points in a resource: the object holding the attribute, and its key there. */
function locate(resource: Resource, path: AttrPath): { holder: Resource; key: string } | undefined {
  let holder = resource
  if (path.schema) {
    const ext = keyOf(resource, `${path.schema}:${path.attr}`)
    // The path is a whole extension (`urn:…:enterprise:2.0:User`).
    if (ext && !path.sub) return { holder: resource, key: ext }
    const schemaKey = keyOf(resource, path.schema)
    if (schemaKey && resource[schemaKey] && typeof resource[schemaKey] === 'object')
      holder = resource[schemaKey] as Resource
    else if (!/^urn:ietf:params:scim:schemas:core:2\.0:/i.test(path.schema)) return undefined
  }
  const key = keyOf(holder, path.attr)
  return key ? { holder, key } : undefined
}

function pick(value: unknown, sub: string): unknown {
  const one = (v: unknown) => {
    if (!v || typeof v !== 'object') return undefined
    const k = keyOf(v as Resource, sub)
    return k ? { [k]: (v as Resource)[k] } : undefined
  }
  if (Array.isArray(value)) {
    const items = value.map(one).filter((x) => x !== undefined)
    return items.length ? items : undefined
  }
  return one(value)
}

/** The resource as the projection asks. */
export function project(resource: Resource, p: Projection | undefined): Resource {
  if (!p) return resource
  if (p.mode === 'include') {
    const out: Resource = {}
    for (const k of Object.keys(resource)) if (always.has(k)) out[k] = resource[k]
    for (const path of p.paths) {
      const at = locate(resource, path)
      if (!at) continue
      const value = path.sub ? pick(at.holder[at.key], path.sub) : at.holder[at.key]
      if (value === undefined) continue
      // Into the same place of the output: the top level, or the extension's object.
      const target = at.holder === resource ? out : ((out[keyOf(resource, path.schema!)!] ??= {}) as Resource)
      const existing = target[at.key]
      target[at.key] =
        path.sub && existing && typeof existing === 'object' && !Array.isArray(existing)
          ? { ...(existing as Resource), ...(value as Resource) }
          : path.sub && Array.isArray(existing)
            ? existing.map((e, i) => ({ ...e, ...(value as Resource[])[i] }))
            : value
    }
    return out
  }
  const out: Resource = structuredClone(resource)
  for (const path of p.paths) {
    const at = locate(out, path)
    if (!at || (at.holder === out && always.has(at.key))) continue
    if (!path.sub) delete at.holder[at.key]
    else {
      const value = at.holder[at.key]
      for (const v of Array.isArray(value) ? value : [value]) {
        const k = v && typeof v === 'object' ? keyOf(v as Resource, path.sub) : undefined
        if (k) delete (v as Resource)[k]
      }
    }
  }
  return out
}
