import fc from 'fast-check'
import { keys, rawBodies, values } from './hostile.ts'
import type { Pools } from './seed.ts'
import { cloneJson, jsonText, obj, Raw, setKey, type JsonLike } from './wire.ts'

/**
 * SCIM requests derived from the live /Schemas and /ResourceTypes: for each resource type,
 * create (POST), replace (PUT), PATCH, list with a filter and get, each valid or with one
 * or two hostile mutations (attribute values, unknown and prototype members, huge
 * multi-valued arrays within the 1 MiB cap, filters built from the schema's attributes and
 * hostile ones, PATCH operations with hostile ops, paths and values, many of them).
 * A case is a plan of small choices; `render()` builds it against the pools' real ids.
 */
export interface Attribute {
  name: string
  type: string
  multiValued: boolean
  mutability?: string
  required?: boolean
  uniqueness?: string
  canonicalValues?: string[]
  subAttributes?: Attribute[]
}

export interface ResourceType {
  name: string
  endpoint: string
  schema: string
  extensions: string[]
}

export type ScimOp = 'create' | 'replace' | 'patch' | 'list' | 'get'

export interface ScimMutation {
  how:
    | 'value'
    | 'member'
    | 'huge'
    | 'schemas'
    | 'drop'
    | 'raw-body'
    | 'filter'
    | 'hostile-filter'
    | 'param'
    | 'patch-op'
    | 'patch-path'
    | 'patch-value'
    | 'many-ops'
    | 'id'
  pick: number
  at: number
}

export interface ScimCase {
  type: string
  op: ScimOp
  mutations: ScimMutation[]
  mediaType: 'application/scim+json' | 'application/json'
  /** Aimed at the pooled user with as many e-mails as the service accepts (`scim-user-big`), not the small one. */
  big?: boolean
}

export const errorUrn = 'urn:ietf:params:scim:api:messages:2.0:Error'
const patchUrn = 'urn:ietf:params:scim:api:messages:2.0:PatchOp'

/** Paths into a schema's attributes: `name`, `name.givenName`, `emails.value`, `urn:…:department`. */
export interface PathInfo {
  path: string
  attribute: Attribute
  /** The complex attribute above a sub-attribute. */
  parent?: Attribute
}

export class ScimSchemaView {
  readonly types: ResourceType[]
  private readonly schemas = new Map<string, Attribute[]>()
  constructor(resourceTypes: any[], schemas: any[]) {
    for (const s of schemas) this.schemas.set(s.id, s.attributes)
    this.types = resourceTypes.map((r) => ({
      name: r.name,
      endpoint: r.endpoint,
      schema: r.schema,
      extensions: (r.schemaExtensions ?? []).map((e: { schema: string }) => e.schema)
    }))
  }

  attributes(urn: string): Attribute[] {
    return this.schemas.get(urn) ?? []
  }

  /** Every attribute path of a resource type (core ones bare, extension ones by URN). */
  paths(rt: ResourceType): PathInfo[] {
    const out: PathInfo[] = []
    for (const urn of [rt.schema, ...rt.extensions])
      for (const a of this.attributes(urn)) {
        const base = urn === rt.schema ? a.name : `${urn}:${a.name}`
        out.push({ path: base, attribute: a })
        for (const sub of a.subAttributes ?? []) out.push({ path: `${base}.${sub.name}`, attribute: sub, parent: a })
      }
    return out
  }
}

/** A valid value of an attribute; `unique()` gives a fresh string for attributes the server keeps unique. */
export function sampleValue(
  a: Attribute,
  ctx: { unique: () => string; pools: Pools; parent?: Attribute },
  single = false
): JsonLike {
  if (a.multiValued && !single) return [sampleValue(a, ctx, true)]
  if (a.type === 'complex') {
    const o = obj()
    for (const sub of a.subAttributes ?? [])
      if (sub.mutability !== 'readOnly') o[sub.name] = sampleValue(sub, { ...ctx, parent: a })
    if ('primary' in o && a.name !== 'members') o.primary = true
    if (a.name === 'members') return obj([['value', ctx.pools.id('scim-user')]])
    return o
  }
  if (a.canonicalValues?.length) return a.canonicalValues[0]
  switch (a.type) {
    case 'boolean':
      return true
    case 'integer':
      return 1
    case 'decimal':
      return 1.5
    case 'dateTime':
      return '2026-11-20T08:30:00Z'
    case 'binary':
      return 'aGVsbG8='
    case 'reference':
      return ctx.parent?.name === 'members' ? ctx.pools.id('scim-user') : 'https://example.com/fuzz'
  }
  if (a.uniqueness === 'server' || ['userName', 'displayName', 'externalId'].includes(a.name)) return ctx.unique()
  if (ctx.parent?.name === 'emails' && a.name === 'value') return `${ctx.unique()}@example.com`
  return 'fuzz'
}

/** Filters written by hand that parsers get wrong: prototype names, NUL, nesting, length, value paths. */
export const hostileFilters: Array<{ label: string; text: () => string }> = [
  ...[
    'constructor pr',
    '__proto__ eq "x"',
    'toString pr',
    'hasOwnProperty eq "x"',
    'name.__proto__ pr',
    'name.constructor eq "x"',
    'emails[__proto__ pr]',
    'userName eq "\u0000"',
    'userName eq "a\u0000b"',
    'userName eq "\ud800"',
    'displayName co "\udfff"',
    'userName eq "a\\"b"',
    'userName eq "\\u0000"',
    'displayName eq "\\ud800"',
    'emails[value eq "\\u0000"]',
    'userName eq',
    'userName xx "a"',
    'userName eq "unterminated',
    'emails[type eq "work" and value co "@x"]',
    'emails[type eq "work"].value eq "a@example.com"',
    'emails[type eq "work"',
    'emails[type eq "work"]]',
    'emails[value co "@"][type eq "work"]',
    'members[value eq "x"].display eq "y"',
    'members[value eq "00000000-0000-0000-0000-000000000000"]',
    'meta.lastModified gt "not a date"',
    'meta.created gt "2026-99-99T00:00:00Z"',
    'meta.created gt "+275760-09-13T00:00:00.001Z"',
    'userName gt 1e400',
    'userName eq 9007199254740993',
    'active eq tru',
    'active eq "true"',
    'name.givenName.x eq "a"',
    'fooBar eq "x"',
    'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:__proto__ pr',
    'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager.value eq "x"',
    'urn:x:y:z eq "a"',
    'userName sw "%"',
    'userName co "_"',
    'userName eq "\'; DROP TABLE users; --"',
    'not userName pr',
    'not (userName pr',
    '()',
    '(userName pr) and',
    'and userName pr',
    'userName pr or',
    ''
  ].map((text) => ({ label: JSON.stringify(text), text: () => text })),
  {
    label: "'('.repeat(1000) + 'userName pr' + ')'.repeat(1000)",
    text: () => '('.repeat(1000) + 'userName pr' + ')'.repeat(1000)
  },
  {
    label: "'not ('.repeat(500) + 'userName pr' + ')'.repeat(500)",
    text: () => 'not ('.repeat(500) + 'userName pr' + ')'.repeat(500)
  },
  {
    label: "'emails[' .repeat(300) + 'value pr' + ']'.repeat(300)",
    text: () => 'emails['.repeat(300) + 'value pr' + ']'.repeat(300)
  },
  // Long ones stay under 14 KB percent-encoded: past Node's 16 KiB request head, Node answers before the service.
  {
    label: '300 × userName eq "x<n>" joined by or',
    text: () => Array.from({ length: 300 }, (_x, i) => `userName eq "x${i}"`).join(' or ')
  },
  {
    label: '250 × emails[value co "a"] joined by and',
    text: () => Array.from({ length: 250 }, () => 'emails[value co "a"]').join(' and ')
  },
  { label: 'userName eq "x…" of 10,000 characters', text: () => `userName eq "${'x'.repeat(10_000)}"` }
]

/** Paths PATCH must refuse or handle: prototype names, unknown attributes, broken value filters, long and deep. */
export const hostilePaths: string[] = [
  '__proto__',
  'constructor',
  'constructor.prototype',
  'prototype',
  'name.__proto__',
  'name.constructor',
  'emails[type eq "work"].__proto__',
  'emails[__proto__ eq "x"].value',
  'members[value eq "\u0000"]',
  'members[value eq "\ud800"]',
  'emails[type eq "work"',
  'emails[]',
  'emails.value.x',
  'fooBar',
  'id',
  'meta.created',
  'schemas',
  'groups',
  'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:__proto__',
  'urn:ietf:params:scim:api:messages:2.0:Error:detail',
  'urn:',
  '',
  '.',
  'name..givenName',
  'x'.repeat(10_000),
  `${'emails['.repeat(200)}value pr${']'.repeat(200)}`,
  `emails[${Array.from({ length: 300 }, () => 'value co "a"').join(' or ')}].value`
]

const opNames: JsonLike[] = [
  'add',
  'replace',
  'remove',
  'ADD',
  'Replace',
  'move',
  'copy',
  'test',
  '',
  '__proto__',
  null,
  1,
  ['add'],
  obj([['op', 'add']])
]

export function showScim(c: ScimCase): string {
  return `${c.op} ${c.type} as ${c.mediaType} with ${JSON.stringify(c.mutations)}`
}

const mutation = (hows: ScimMutation['how'][]) =>
  fc.record({ how: fc.constantFrom(...hows), pick: fc.nat(500), at: fc.nat(100) })

const byOp: Record<ScimOp, ScimMutation['how'][]> = {
  create: ['value', 'value', 'member', 'huge', 'schemas', 'drop', 'raw-body'],
  replace: ['value', 'value', 'member', 'huge', 'schemas', 'drop', 'raw-body', 'id'],
  patch: [
    'patch-op',
    'patch-path',
    'patch-path',
    'patch-value',
    'patch-value',
    'many-ops',
    'huge',
    'member',
    'raw-body',
    'id'
  ],
  list: ['filter', 'filter', 'hostile-filter', 'hostile-filter', 'param'],
  get: ['param', 'id']
}

/** Cases for one operation of one resource type: none, one or two mutations (a list always has a filter). */
export function scimCases(type: string, op: ScimOp): fc.Arbitrary<ScimCase> {
  return fc.record({
    type: fc.constant(type),
    op: fc.constant(op),
    mutations: fc.array(mutation(byOp[op]), { minLength: op === 'list' ? 1 : 0, maxLength: 2 }),
    mediaType: fc.constantFrom<ScimCase['mediaType']>(
      'application/scim+json',
      'application/scim+json',
      'application/json'
    )
  })
}

/** Which scimType fits a 400 caused by each kind of mutation (RFC 7644 §3.12). */
export const fittingScimTypes: Record<ScimMutation['how'], string[]> = {
  filter: ['invalidFilter'],
  // A filter that parses but compares with what no column holds (NUL, a lone surrogate) may be an invalid value.
  'hostile-filter': ['invalidFilter', 'invalidValue'],
  'patch-path': ['invalidPath', 'noTarget', 'invalidFilter', 'mutability', 'invalidValue'],
  'patch-op': ['invalidValue', 'invalidSyntax'],
  'patch-value': ['invalidValue', 'invalidSyntax', 'mutability', 'uniqueness', 'noTarget'],
  'many-ops': ['tooMany', 'invalidValue', 'invalidSyntax', 'uniqueness'],
  value: ['invalidValue', 'invalidSyntax', 'uniqueness', 'mutability'],
  member: ['invalidValue', 'invalidSyntax', 'mutability', 'invalidPath'],
  huge: ['tooMany', 'invalidValue', 'invalidSyntax', 'uniqueness'],
  schemas: ['invalidValue', 'invalidSyntax'],
  drop: ['invalidValue', 'invalidSyntax'],
  'raw-body': ['invalidSyntax', 'invalidValue'],
  param: ['invalidValue', 'invalidFilter', 'invalidPath', 'invalidSyntax', 'tooMany'],
  id: ['invalidValue', 'invalidSyntax', 'noTarget']
}

export interface RenderedScim {
  method: string
  target: string
  body?: Buffer
  notes: string[]
}

interface RenderContext {
  view: ScimSchemaView
  pools: Pools
  unique: () => string
  encode: (s: string) => string
}

const cap = 1_000_000
const writable = (p: PathInfo) =>
  p.attribute.mutability !== 'readOnly' &&
  (!p.parent || p.parent.mutability !== 'readOnly') &&
  p.attribute.name !== 'password' &&
  !['id', 'meta', 'groups'].includes(p.attribute.name)

/** A filter built from the schema's attributes: comparisons by type, presence, value paths, and/or/not. */
export function schemaFilter(paths: PathInfo[], n: number, depth = 0): string {
  const p = paths[n % paths.length]
  const ops = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le', 'pr']
  const o = ops[Math.floor(n / 7) % ops.length]
  const lit = (a: Attribute, k: number) =>
    a.type === 'boolean'
      ? k % 2
        ? 'false'
        : 'true'
      : a.type === 'dateTime'
        ? '"2026-11-20T08:30:00Z"'
        : a.type === 'integer' || a.type === 'decimal'
          ? '1'
          : ['"fuzz"', '"a@example.com"', '"FUZZ"', '"work"', '""'][k % 5]
  let atom: string
  if (p.attribute.type === 'complex' && p.attribute.subAttributes?.length) {
    const subs = p.attribute.subAttributes
    const a = subs[n % subs.length]
    const b = subs[(n + 1) % subs.length]
    atom = `${p.path}[${a.name} ${o === 'pr' ? 'pr' : `${o} ${lit(a, n)}`} and ${b.name} co "@x"]`
  } else atom = o === 'pr' ? `${p.path} pr` : `${p.path} ${o} ${lit(p.attribute, n)}`
  if (depth > 1) return atom
  const next = (k: number) => schemaFilter(paths, Math.floor(n / 3) + k * 17, depth + 1)
  switch (Math.floor(n / 70) % 5) {
    case 1:
      return `${atom} and ${next(1)}`
    case 2:
      return `${atom} or ${next(2)}`
    case 3:
      return `not (${atom})`
    case 4:
      return `(${atom} or ${next(3)}) and ${next(4)}`
    default:
      return atom
  }
}

/** Sets `path` (`a` or `a.b`) in a resource body; in the first element of a multi-valued complex attribute. */
function setPath(body: Record<string, JsonLike>, info: PathInfo, urn: string | undefined, value: JsonLike) {
  const holder = urn ? ((body[urn] as Record<string, JsonLike>) ?? (body[urn] = obj())) : body
  if (!info.parent) return setKey(holder, info.attribute.name, value)
  let parent = holder[info.parent.name]
  if (info.parent.multiValued) {
    if (!Array.isArray(parent) || !parent.length) parent = holder[info.parent.name] = [obj()]
    parent = parent[0]
  } else if (!parent || typeof parent !== 'object' || Array.isArray(parent) || parent instanceof Raw)
    parent = holder[info.parent.name] = obj()
  setKey(parent as object, info.attribute.name, value)
}

/** Items of a multi-valued attribute, as many as fit under the body cap (up to `n`). */
function hugeList(a: Attribute, n: number, ctx: RenderContext): Raw {
  const item = (i: number) =>
    a.name === 'members'
      ? `{"value":"${ctx.pools.id('scim-user')}"}`
      : a.type === 'complex'
        ? jsonText(
            obj(
              (a.subAttributes ?? [])
                .filter((s) => s.mutability !== 'readOnly' && s.type === 'string')
                .slice(0, 2)
                .map((s) => [s.name, `${s.name}${i}@example.com`])
            )
          )
        : `"v${i}"`
  const size = item(0).length + 1
  const count = Math.min(n, Math.floor(cap / size) - 20)
  return new Raw(
    `[${Array.from({ length: count }, (_x, i) => item(i)).join(',')}]`,
    `${count} items like ${item(0).slice(0, 80)}`
  )
}

/** One filter per request: a second filter mutation replaces the first (a repeated parameter is a `param` mutation's business). */
function setParam(query: Array<[string, string]>, name: string, value: string) {
  const at = query.findIndex(([k]) => k === name)
  if (at >= 0) query[at] = [name, value]
  else query.push([name, value])
}

/** The request a case stands for. */
export function renderScim(c: ScimCase, ctx: RenderContext): RenderedScim {
  const rt = ctx.view.types.find((r) => r.name === c.type)!
  const paths = ctx.view.paths(rt)
  const writablePaths = paths.filter(writable)
  const urnOf = (p: PathInfo) =>
    [rt.schema, ...rt.extensions].find((u) => u !== rt.schema && p.path.startsWith(`${u}:`))
  const notes: string[] = []
  const base = `/api/scim/v2${rt.endpoint}`
  const poolId = rt.name === 'Group' ? 'scim-group' : 'scim-user'
  let id = ctx.pools.id(c.big ? 'scim-user-big' : poolId)
  const query: Array<[string, string]> = []
  let raw: Buffer | undefined

  // The valid resource: required attributes, the common ones, and an extension attribute.
  const resource = obj([['schemas', [rt.schema]]])
  const common = ['userName', 'displayName', 'name', 'emails', 'active', 'externalId', 'title', 'members']
  for (const p of writablePaths.filter(
    (x) => !x.parent && !urnOf(x) && (x.attribute.required || common.includes(x.attribute.name))
  ))
    resource[p.attribute.name] = sampleValue(p.attribute, ctx)
  const ext = writablePaths.find((x) => !x.parent && urnOf(x) && x.attribute.type === 'string')
  if (ext) {
    resource.schemas = [rt.schema, urnOf(ext)!]
    setPath(resource, { ...ext, attribute: ext.attribute }, urnOf(ext), sampleValue(ext.attribute, ctx))
  }

  // The valid PATCH: one operation on an attribute the type has.
  const patchTarget = writablePaths.filter((x) => !x.parent)[0 % writablePaths.length]
  const op = obj([
    ['op', 'replace'],
    ['path', patchTarget.path],
    ['value', sampleValue(patchTarget.attribute, ctx)]
  ])
  if (rt.name === 'Group') {
    op.op = 'add'
    op.path = 'members'
    op.value = [obj([['value', ctx.pools.id('scim-user')]])]
  }
  const operations: JsonLike[] = [op]
  const patch = obj([
    ['schemas', [patchUrn]],
    ['Operations', operations]
  ])

  for (const m of c.mutations) {
    const pick = <T>(list: T[]) => list[m.pick % list.length]
    switch (m.how) {
      case 'value': {
        const p = writablePaths[m.at % writablePaths.length]
        const h = pick(values)
        setPath(
          resource,
          p,
          urnOf(p),
          h.make(() => cloneJson(resource))
        )
        notes.push(`${p.path} := ${h.label}`)
        break
      }
      case 'member': {
        const k = pick(keys)
        const h = values[m.at % values.length]
        const into = c.op === 'patch' ? op : resource
        setKey(
          into,
          k,
          h.make(() => cloneJson(resource))
        )
        notes.push(
          `${c.op === 'patch' ? 'operation' : 'resource'} member ${JSON.stringify(k.length > 40 ? `${k.slice(0, 10)}…(${k.length} chars)` : k)} := ${h.label}`
        )
        break
      }
      case 'huge': {
        const multi = writablePaths.filter((x) => !x.parent && x.attribute.multiValued)
        if (!multi.length) break
        const p = multi[m.at % multi.length]
        const list = hugeList(p.attribute, pick([1_000, 10_000, 20_000, 100_000]), ctx)
        if (c.op === 'patch') Object.assign(op, { op: 'add', path: p.path, value: list })
        else setPath(resource, p, urnOf(p), list)
        notes.push(`${p.path} := ${list.label}${c.op === 'patch' ? ' (in one add operation)' : ''}`)
        break
      }
      case 'schemas': {
        const v = pick<JsonLike>([
          [],
          ['urn:x:y'],
          'urn:ietf:params:scim:schemas:core:2.0:User',
          null,
          [errorUrn],
          [rt.schema, rt.schema],
          [rt.schema.toUpperCase()],
          [`${rt.schema}\u0000`],
          new Raw(
            `[${Array.from({ length: 10_000 }, () => JSON.stringify(rt.schema)).join(',')}]`,
            '10,000 × the core schema URN'
          )
        ])
        resource.schemas = v
        notes.push(`schemas := ${v instanceof Raw ? v.label : JSON.stringify(v)}`)
        break
      }
      case 'drop': {
        const required = writablePaths.filter((x) => !x.parent && x.attribute.required).map((x) => x.attribute.name)
        const k = pick(['schemas', ...required])
        delete resource[k]
        notes.push(`${k} left out`)
        break
      }
      case 'raw-body': {
        const b = pick(rawBodies)
        raw = b.bytes()
        notes.push(`body := ${b.label}`)
        break
      }
      case 'filter': {
        const f = schemaFilter(paths, m.pick * 101 + m.at)
        setParam(query, 'filter', ctx.encode(f))
        notes.push(`filter=${f}`)
        break
      }
      case 'hostile-filter': {
        const f = pick(hostileFilters)
        setParam(query, 'filter', ctx.encode(f.text()))
        notes.push(`filter=${f.label}`)
        break
      }
      case 'param': {
        const name = pick([
          'startIndex',
          'count',
          'attributes',
          'excludedAttributes',
          'sortBy',
          '__proto__[x]',
          'filter',
          'startIndex'
        ])
        const all = [
          ...paths.map((p) => p.path),
          '0',
          '-1',
          '1e400',
          'x',
          '9007199254740993',
          '',
          '201',
          '100000',
          '1.5',
          '__proto__',
          'constructor',
          ...hostilePaths.slice(0, 12)
        ]
        const v = all[m.at % all.length]
        query.push([ctx.encode(name).replace(/%5B/g, '[').replace(/%5D/g, ']'), ctx.encode(v)])
        notes.push(`query ${name}=${JSON.stringify(v.length > 60 ? `${v.slice(0, 30)}…(${v.length} chars)` : v)}`)
        break
      }
      case 'id': {
        const v = pick([
          ctx.pools.id(rt.name === 'Group' ? 'scim-user' : 'scim-group'),
          '__proto__',
          'constructor',
          '00000000-0000-0000-0000-000000000000',
          `${id}%00`,
          `${id}%ED%A0%80`,
          id.toUpperCase(),
          'x'.repeat(300),
          '%2E%2E',
          ctx.pools.id('record:incident:0')
        ])
        notes.push(`path id := ${JSON.stringify(v.length > 60 ? `${v.slice(0, 30)}…(${v.length} chars)` : v)}`)
        id = v
        break
      }
      case 'patch-op': {
        const v = pick(opNames)
        op.op = v
        notes.push(`operation op := ${JSON.stringify(v)}`)
        break
      }
      case 'patch-path': {
        const v = pick(hostilePaths)
        op.path = v
        notes.push(`operation path := ${JSON.stringify(v.length > 60 ? `${v.slice(0, 40)}…(${v.length} chars)` : v)}`)
        break
      }
      case 'patch-value': {
        const h = pick(values)
        op.value = h.make(() => cloneJson(resource))
        notes.push(`operation value := ${h.label}`)
        break
      }
      case 'many-ops': {
        const n = pick([1_000, 1_001, 5_000, 20_000])
        // The same operation again and again, or (odd `at`, users) an add through a value filter over every e-mail.
        const filtered = m.at % 2 === 1 && rt.name === 'User'
        const one = filtered
          ? '{"op":"add","path":"emails[type eq \\"work\\" and value co \\"@x\\"].display","value":"d"}'
          : jsonText(op)
        const count = Math.min(n, Math.floor(cap / (one.length + 1)) - 10)
        patch.Operations = new Raw(
          `[${Array.from({ length: count }, () => one).join(',')}]`,
          `${count} × ${one.slice(0, 120)}`
        )
        notes.push(`Operations := ${count} copies of the operation`)
        break
      }
    }
  }

  const target = (path: string) => `${path}${query.length ? `?${query.map(([k, v]) => `${k}=${v}`).join('&')}` : ''}`
  const item = `${base}/${id}`
  const json = (v: JsonLike) => raw ?? Buffer.from(jsonText(v), 'utf8')
  switch (c.op) {
    case 'create':
      return { method: 'POST', target: target(base), body: json(resource), notes }
    case 'replace':
      return { method: 'PUT', target: target(item), body: json(resource), notes }
    case 'patch':
      return { method: 'PATCH', target: target(item), body: json(patch), notes }
    case 'list':
      return { method: 'GET', target: target(base), notes }
    case 'get':
      return { method: 'GET', target: target(item), notes }
  }
}
