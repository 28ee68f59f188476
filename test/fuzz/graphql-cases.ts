import fc from 'fast-check'
import type {
  IntrospectionField,
  IntrospectionInputValue,
  IntrospectionSchema,
  IntrospectionType,
  IntrospectionTypeRef
} from 'graphql'
import { numbers, strings, values } from './hostile.ts'
import { pascal } from './samples.ts'
import { fullPayload, type Pools } from './seed.ts'
import { jsonText, obj, Raw, setKey, type JsonLike } from './wire.ts'

/**
 * GraphQL operations derived from the live schema (introspection): every query and
 * mutation field with arguments built from their types (valid, or one or two hostile),
 * selections built from the output types, dressed with aliases, named and inline
 * fragments, nested spreads, introspection fields; and documents of several mutations.
 * A case is a plan of small choices (fast-check shrinks them); `document()` turns it into
 * the request text against the pools' real ids.
 */
export interface Root {
  kind: 'query' | 'mutation'
  field: IntrospectionField
}

export interface ArgMutation {
  arg: number
  how: 'typed' | 'any' | 'wrong' | 'huge-list' | 'deep' | 'member' | 'null' | 'omit' | 'unknown-arg'
  pick: number
  inline: boolean
}

export interface Selection {
  style: 'plain' | 'named' | 'inline' | 'nested' | 'aliases' | 'introspection'
  depth: number
  aliases: number
}

export interface Part {
  root: Root
  mutations: ArgMutation[]
  selection: Selection
}

export interface GqlCase {
  family: string
  parts: Part[]
  transport: 'json' | 'graphql-response' | 'get'
  quirk: 'none' | 'operation-name' | 'unknown-operation-name' | 'extra-variable' | 'variables-array'
}

const named = (t: IntrospectionTypeRef): string =>
  'ofType' in t && t.ofType ? named(t.ofType) : (t as { name: string }).name
export const typeText = (t: IntrospectionTypeRef): string =>
  t.kind === 'NON_NULL' ? `${typeText(t.ofType)}!` : t.kind === 'LIST' ? `[${typeText(t.ofType)}]` : t.name
const listOf = (t: IntrospectionTypeRef): boolean => t.kind === 'LIST' || (t.kind === 'NON_NULL' && listOf(t.ofType))
/** The item type of a list type (`[X!]!` → `X!`); the type itself when it is not a list. */
const itemOf = (t: IntrospectionTypeRef): IntrospectionTypeRef =>
  t.kind === 'NON_NULL' ? (t.ofType.kind === 'LIST' ? t.ofType.ofType : t) : t.kind === 'LIST' ? t.ofType : t

export class GraphQLSchemaView {
  readonly types = new Map<string, IntrospectionType>()
  readonly roots: Root[] = []
  constructor(readonly schema: IntrospectionSchema) {
    for (const t of schema.types) this.types.set(t.name, t)
    for (const [kind, ref] of [
      ['query', schema.queryType],
      ['mutation', schema.mutationType]
    ] as const) {
      const t = ref && this.types.get(ref.name)
      if (t && t.kind === 'OBJECT') for (const field of t.fields) this.roots.push({ kind, field })
    }
  }

  type(ref: IntrospectionTypeRef) {
    return this.types.get(named(ref))!
  }

  /** The fields of an object or interface type (by reference or name); none for other kinds. */
  fields(ref: IntrospectionTypeRef | string): readonly IntrospectionField[] {
    const t = typeof ref === 'string' ? this.types.get(ref) : this.type(ref)
    return t && (t.kind === 'OBJECT' || t.kind === 'INTERFACE') ? t.fields : []
  }

  /**
   * A path of fields from the query root, without required arguments, that comes back to a
   * type it passed (`prefix`, then `loop` repeatable at will), for selections as deep as
   * one likes; undefined when the schema has no such cycle.
   */
  cycle(): { prefix: string[]; loop: string[] } | undefined {
    const start = this.schema.queryType.name
    const queue: Array<{ type: string; path: Array<{ field: string; type: string }> }> = [{ type: start, path: [] }]
    const seen = new Set<string>([start])
    while (queue.length) {
      const { type, path } = queue.shift()!
      const t = this.types.get(type)
      if (!t || (t.kind !== 'OBJECT' && t.kind !== 'INTERFACE')) continue
      for (const f of t.fields) {
        if (f.args.some((a) => a.type.kind === 'NON_NULL' && a.defaultValue == null) || f.name.startsWith('__'))
          continue
        const next = named(f.type)
        const k = this.types.get(next)?.kind
        if (k !== 'OBJECT' && k !== 'INTERFACE') continue
        const at = [{ field: '', type: start }, ...path].findIndex((p) => p.type === next)
        const full = [...path, { field: f.name, type: next }]
        if (at >= 0) return { prefix: full.slice(0, at).map((p) => p.field), loop: full.slice(at).map((p) => p.field) }
        if (!seen.has(next)) {
          seen.add(next)
          queue.push({ type: next, path: full })
        }
      }
    }
    return undefined
  }

  /** A selection of up to `depth` levels: leaf fields, object fields, and the possible types of an interface inline. */
  select(ref: IntrospectionTypeRef | string, depth: number): string {
    const t = typeof ref === 'string' ? this.types.get(ref)! : this.type(ref)
    if (t.kind !== 'OBJECT' && t.kind !== 'INTERFACE') return ''
    const callable = t.fields.filter((f) => !f.args.some((a) => a.type.kind === 'NON_NULL' && a.defaultValue == null))
    const leaves = callable.filter((f) => ['SCALAR', 'ENUM'].includes(this.type(f.type).kind)).slice(0, 6)
    const parts = leaves.map((f) => f.name)
    if (depth > 1)
      for (const f of callable.filter((x) => ['OBJECT', 'INTERFACE'].includes(this.type(x.type).kind)).slice(0, 3)) {
        const inner = this.select(f.type, depth - 1)
        if (inner) parts.push(`${f.name} { ${inner} }`)
      }
    if (t.kind === 'INTERFACE')
      for (const p of t.possibleTypes.slice(0, 2)) {
        const inner = this.select(p.name, 1)
        if (inner) parts.push(`... on ${p.name} { ${inner} }`)
      }
    return parts.length ? parts.join(' ') : '__typename'
  }
}

/** Valid values by argument and field name where the type alone would not do. */
function validArg(view: GraphQLSchemaView, pools: Pools, root: Root, a: IntrospectionInputValue): JsonLike {
  const module = moduleOf(pools, root.field.name)
  if (a.name === 'id') {
    if (root.field.name === 'export') return pools.id('export')
    // A delete takes the second seeded record, so reads of the first keep finding it.
    return pools.id(`record:${module ?? 'incident'}:${root.field.name === 'deleteRecord' ? 1 : 0}`)
  }
  if (a.name === 'key') return 'incident'
  if (a.name === 'payload' && module) return fromTemplate(view, a.type, fullPayload(pools, module))
  if (a.name === 'expectedVersion' || a.name === 'after' || a.name === 'externalRef') return null
  return validValue(view, pools, a.type, a.name, 0)
}

/**
 * A valid REST value (the module's sample payload) as GraphQL takes it: enum values by
 * their GraphQL names (`very-high` → `VERY_HIGH`), members the input type lacks left out.
 */
function fromTemplate(view: GraphQLSchemaView, ref: IntrospectionTypeRef, v: JsonLike): JsonLike {
  if (ref.kind === 'NON_NULL') return fromTemplate(view, ref.ofType, v)
  if (ref.kind === 'LIST') return Array.isArray(v) ? v.map((x) => fromTemplate(view, ref.ofType, x)) : v
  const t = view.types.get(ref.name)!
  const squash = (x: string) => x.toLowerCase().replace(/[^a-z0-9]/g, '')
  if (t.kind === 'ENUM')
    return t.enumValues.find((e) => squash(e.name) === squash(String(v)))?.name ?? t.enumValues[0].name
  if (t.kind === 'INPUT_OBJECT' && v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Raw))
    return obj(
      t.inputFields
        .filter((f) => f.name in v)
        .map((f) => [f.name, fromTemplate(view, f.type, (v as Record<string, JsonLike>)[f.name])])
    )
  return v
}

function validValue(
  view: GraphQLSchemaView,
  pools: Pools,
  ref: IntrospectionTypeRef,
  name: string,
  level: number
): JsonLike {
  if (ref.kind === 'NON_NULL') return validValue(view, pools, ref.ofType, name, level)
  if (ref.kind === 'LIST') return [validValue(view, pools, ref.ofType, name, level)]
  const t = view.types.get(ref.name)!
  if (t.kind === 'ENUM') return t.enumValues[0].name
  if (t.kind === 'INPUT_OBJECT') {
    const o = obj()
    if (level < 4)
      for (const f of t.inputFields.filter((x) => x.type.kind === 'NON_NULL'))
        o[f.name] = validValue(view, pools, f.type, f.name, level + 1)
    return o
  }
  const byName: Record<string, JsonLike> = {
    moduleKey: 'incident',
    recordId: pools.id('record:attachments'),
    fileName: 'fuzz.txt',
    contentType: 'text/plain',
    size: 5,
    first: 2
  }
  if (name in byName) return byName[name]
  return (
    (
      {
        Int: 1,
        Float: 1.5,
        Boolean: true,
        ID: pools.id('record:incident:0'),
        DateTime: '2026-11-20T08:30:00Z',
        Date: '2026-11-20',
        JSON: obj()
      } as Record<string, JsonLike>
    )[t.name] ?? 'fuzz'
  )
}

/** `createIncident` → `incident`, `correctiveActions` → `corrective-action`. */
function moduleOf(pools: Pools, field: string): string | undefined {
  return pools.modules.find((m) => new RegExp(`^(create|update|transition)?${pascal(m)}s?$`, 'i').test(field))
}

/** A hostile value for an argument of this type, by the mutation's kind and pick. */
function hostileArg(
  view: GraphQLSchemaView,
  pools: Pools,
  root: Root,
  a: IntrospectionInputValue,
  m: ArgMutation
): { value: JsonLike; note: string } {
  const t = view.type(a.type)
  const at = <T>(list: T[]) => list[m.pick % list.length]
  const full = () => fullPayload(pools, moduleOf(pools, root.field.name))
  const make = (label: string, value: JsonLike) => ({ value, note: label })
  const fromValues = (list: typeof values) => {
    const h = at(list)
    return make(h.label, h.make(full))
  }
  const stringish = values.slice(0, strings.length)
  const numeric = [...values.slice(strings.length, strings.length + numbers.length)]
  switch (m.how) {
    case 'null':
      return make('null', null)
    case 'any':
      return fromValues(values)
    case 'wrong':
      return t.kind === 'SCALAR' && ['Int', 'Float'].includes(t.name)
        ? fromValues([...stringish.slice(0, 8), ...values.filter((v) => /^(true|\[\]|\{\}|null)$/.test(v.label))])
        : fromValues(numeric)
    case 'huge-list': {
      const item = validValue(view, pools, itemOf(a.type), a.name, 0)
      const n = at([1_000, 10_000, 50_000])
      return make(
        `a list of ${n} valid items`,
        new Raw(
          `[${Array.from({ length: n }, () => jsonText(item)).join(',')}]`,
          `a list of ${n} × ${jsonText(item).slice(0, 60)}`
        )
      )
    }
    case 'deep': {
      const n = at([64, 1_000, 5_000])
      if (t.kind === 'INPUT_OBJECT') {
        // An input type that holds itself (a filter's and/or) nests for real; others nest an unknown member.
        const self = t.inputFields.find((f) => named(f.type) === t.name)
        const key = self?.name ?? t.inputFields[0]?.name ?? 'a'
        const wrap = self && listOf(self.type) ? ['[', ']'] : ['', '']
        return make(
          `${key} nested ${n} levels`,
          new Raw(
            `{"${key}":${wrap[0]}`.repeat(n) + '{}' + `${wrap[1]}}`.repeat(n),
            `'{"${key}":${wrap[0]}'.repeat(${n}) + '{}' + '${wrap[1]}}'.repeat(${n})`
          )
        )
      }
      return make(
        `'['.repeat(${n}) + ']'.repeat(${n})`,
        new Raw('['.repeat(n) + ']'.repeat(n), `'['.repeat(${n}) + ']'.repeat(${n})`)
      )
    }
    case 'member': {
      if (t.kind !== 'INPUT_OBJECT' || !t.inputFields.length) return fromValues(values)
      const base = validArg(view, pools, root, a)
      const o = base && typeof base === 'object' && !Array.isArray(base) && !(base instanceof Raw) ? base : obj()
      const f = t.inputFields[Math.floor(m.pick / 7) % t.inputFields.length]
      const h = at(values)
      o[f.name] = h.make(full)
      return make(`member ${f.name} := ${h.label}`, o)
    }
    default: {
      // typed: a hostile value of the argument's own kind
      if (t.kind === 'SCALAR' && ['Int', 'Float'].includes(t.name))
        return fromValues([...numeric, ...values.filter((v) => ['"NaN"', '"1e400"', '"-0"'].includes(v.label))])
      if (t.kind === 'SCALAR' && t.name === 'Boolean')
        return fromValues(values.filter((v) => /^("true"|"1"|0|null|\[\])$/.test(v.label)))
      if (t.kind === 'INPUT_OBJECT')
        return fromValues(
          values.filter(
            (v) =>
              v.label.startsWith('{') || v.label.startsWith('<') || v.label.startsWith("'") || v.label.startsWith('an ')
          )
        )
      return fromValues(stringish)
    }
  }
}

/** A JSON-like value as a GraphQL literal (enum values unquoted when the type is an enum). */
function literal(v: JsonLike, enumType: boolean): string {
  if (v instanceof Raw) return v.text.replace(/"([A-Za-z_][A-Za-z0-9_]*)":/g, '$1:')
  if (v === null || typeof v !== 'object')
    return enumType && typeof v === 'string' && /^[A-Za-z_]\w*$/.test(v) ? v : JSON.stringify(v)
  if (Array.isArray(v)) return `[${v.map((x) => literal(x, enumType)).join(', ')}]`
  return `{${Object.keys(v)
    .map((k) => `${k}: ${literal(v[k], false)}`)
    .join(', ')}}`
}

export interface Document {
  query: string
  variables: Record<string, JsonLike>
  operationName?: string
  notes: string[]
  mutation: boolean
}

/** The request a case stands for, against the pools' ids as they are now. */
export function document(view: GraphQLSchemaView, pools: Pools, c: GqlCase): Document {
  const notes: string[] = []
  const variables = obj()
  const declared: string[] = []
  const fragments: string[] = []
  const selections: string[] = []
  const mutation = c.parts.some((p) => p.root.kind === 'mutation')
  c.parts.forEach((p, i) => {
    const f = p.root.field
    const args = new Map<string, string>()
    f.args.forEach((a) => {
      const value = validArg(view, pools, p.root, a)
      if (value === null && a.type.kind !== 'NON_NULL') return
      variables[`v${i}_${a.name}`] = value
      declared.push(`$v${i}_${a.name}: ${typeText(a.type)}`)
      args.set(a.name, `$v${i}_${a.name}`)
    })
    for (const m of p.mutations) {
      if (m.how === 'unknown-arg') {
        args.set(['__proto__', 'constructor', 'fuzzExtra', 'first_'][m.pick % 4], '1')
        notes.push(`${f.name}: an unknown argument`)
        continue
      }
      if (!f.args.length) continue
      const a = f.args[m.arg % f.args.length]
      const name = `v${i}_${a.name}`
      if (m.how === 'omit') {
        args.delete(a.name)
        delete variables[name]
        notes.push(`${f.name}(${a.name}:) left out`)
        continue
      }
      const { value, note } = hostileArg(view, pools, p.root, a, m)
      if (m.inline) {
        args.set(a.name, literal(value, view.type(a.type).kind === 'ENUM'))
        delete variables[name]
        notes.push(`${f.name}(${a.name}:) := ${note} (inline)`)
      } else {
        if (!declared.some((d) => d.startsWith(`$${name}:`))) declared.push(`$${name}: ${typeText(a.type)}`)
        variables[name] = value
        args.set(a.name, `$${name}`)
        notes.push(`${f.name}(${a.name}:) := ${note} (variable $${name})`)
      }
    }
    // A variable no argument uses any more is not declared (GraphQL refuses unused variables; that is not this case's point).
    const argText = args.size ? `(${[...args].map(([k, v]) => `${k}: ${v}`).join(', ')})` : ''
    const target = view.type(f.type)
    const inner = view.select(f.type, p.selection.depth)
    const body = (s: string) => (target.kind === 'OBJECT' || target.kind === 'INTERFACE' ? ` { ${s} }` : '')
    const call = (alias: string, s: string) => `${alias}${f.name}${argText}${body(s)}`
    const S = p.selection
    if (S.style === 'named' && inner) {
      fragments.push(`fragment P${i} on ${target.name} { ${inner} }`)
      selections.push(call(`r${i}: `, `...P${i}`))
    } else if (S.style === 'inline' && inner) {
      selections.push(call(`r${i}: `, `... on ${target.name} { ${inner} } ... { __typename }`))
    } else if (S.style === 'nested' && inner) {
      fragments.push(
        `fragment P${i}a on ${target.name} { ...P${i}b __typename }`,
        `fragment P${i}b on ${target.name} { ... on ${target.name} { ...P${i}c } }`,
        `fragment P${i}c on ${target.name} { ${inner} }`
      )
      selections.push(call(`r${i}: `, `...P${i}a ...P${i}b`))
    } else if (S.style === 'aliases') {
      // Mutations run one after another: 40 writes in one document is a cost question the cost family asks, not a fuzz case.
      for (let k = 0; k < (p.root.kind === 'mutation' ? Math.min(S.aliases, 3) : S.aliases); k++)
        selections.push(call(`r${i}_${k}: `, inner))
    } else {
      selections.push(call(`r${i}: `, inner))
    }
    if (S.style === 'introspection')
      selections.push(
        `__typename t${i}: __typename __type(name: ${JSON.stringify(target.name)}) { name kind fields { name type { name kind ofType { name kind } } } }`,
        `s${i}: __schema { queryType { name } mutationType { name } types { name } }`
      )
    notes.push(
      `${p.root.kind} ${f.name}: selection ${S.style}${S.style === 'aliases' ? ` ×${S.aliases}` : ''}, depth ${S.depth}`
    )
  })
  // Declare only what is used, after mutations replaced some arguments.
  const used = declared.filter((d) => {
    const name = d.slice(1, d.indexOf(':'))
    return name in variables && selections.some((s) => s.includes(`$${name}`))
  })
  for (const k of Object.keys(variables)) if (!used.some((d) => d.startsWith(`$${k}:`))) delete variables[k]
  const opName = c.quirk === 'operation-name' || c.quirk === 'unknown-operation-name' ? 'Fuzz' : undefined
  const head = `${mutation ? 'mutation' : 'query'}${opName ? ` ${opName}` : ''}${used.length ? `(${used.join(', ')})` : ''}`
  const query = [`${head} { ${selections.join(' ')} }`, ...fragments].join('\n')
  if (c.quirk === 'extra-variable') setKey(variables, '__proto__', obj([['polluted', 'yes']]))
  if (c.quirk !== 'none') notes.push(`quirk: ${c.quirk}`)
  return { query, variables, operationName: c.quirk === 'unknown-operation-name' ? 'Other' : opName, notes, mutation }
}

const selection = fc.record({
  style: fc.constantFrom<Selection['style']>('plain', 'named', 'inline', 'nested', 'aliases', 'introspection'),
  depth: fc.integer({ min: 1, max: 3 }),
  aliases: fc.constantFrom(2, 3, 40)
})

const argMutation = fc.record({
  arg: fc.nat(20),
  how: fc.constantFrom<ArgMutation['how']>(
    'typed',
    'typed',
    'any',
    'wrong',
    'member',
    'deep',
    'huge-list',
    'null',
    'omit',
    'unknown-arg'
  ),
  pick: fc.nat(400),
  inline: fc.boolean()
})

/** Cases for one root field: mostly one or two hostile arguments, sometimes none. */
export function fieldCases(root: Root): fc.Arbitrary<GqlCase> {
  return fc.record({
    family: fc.constant(root.field.name),
    parts: fc
      .tuple(fc.array(argMutation, { minLength: 0, maxLength: 2 }), selection)
      .map(([mutations, s]) => [{ root, mutations, selection: s }]),
    transport:
      root.kind === 'query'
        ? fc.constantFrom<GqlCase['transport']>('graphql-response', 'json', 'get')
        : fc.constantFrom<GqlCase['transport']>('graphql-response', 'json'),
    quirk: fc.constantFrom<GqlCase['quirk']>(
      'none',
      'none',
      'none',
      'operation-name',
      'unknown-operation-name',
      'extra-variable',
      'variables-array'
    )
  })
}

/** Documents of two to four mutation fields, some of them hostile. */
export function multiMutationCases(roots: Root[]): fc.Arbitrary<GqlCase> {
  const mutations = roots.filter((r) => r.kind === 'mutation')
  const part = fc.record({
    root: fc.constantFrom(...mutations),
    mutations: fc.array(argMutation, { maxLength: 1 }),
    selection: selection.map((s) => ({ ...s, style: s.style === 'aliases' ? ('plain' as const) : s.style }))
  })
  return fc.record({
    family: fc.constant('multi-mutation'),
    parts: fc.array(part, { minLength: 2, maxLength: 4 }),
    transport: fc.constantFrom<GqlCase['transport']>('graphql-response', 'json'),
    quirk: fc.constant<GqlCase['quirk']>('none')
  })
}

export const showCase = (c: GqlCase) =>
  `${c.family} via ${c.transport}${c.quirk === 'none' ? '' : ` (${c.quirk})`}: ${JSON.stringify(c.parts.map((p) => ({ field: p.root.field.name, mutations: p.mutations, selection: p.selection })))}`
