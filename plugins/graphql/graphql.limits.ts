import {
  getOperationAST,
  getNamedType,
  getNullableType,
  GraphQLError,
  isInputObjectType,
  isInterfaceType,
  isIntrospectionType,
  isListType,
  isObjectType,
  isEnumType,
  Kind,
  OperationTypeNode,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  TypeNameMetaFieldDef,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValueNode
} from 'graphql'
import { tooNested, valueDepth } from './graphql.document.ts'

/** How much one GraphQL operation may ask for (documented in docs/graphql.md). */
export interface QueryLimits {
  /** Deepest field nesting, introspection fields aside. */
  maxDepth: number
  /** Most work units: each field counts once per item of the lists above it, a service call `lookupCost` more. */
  maxCost: number
  /** What a connection's page counts as when `first` is not given. */
  defaultPageSize: number
  /** Deepest nesting of brackets in the text (`{`, `[`, `(`), checked before parsing, and of lists and objects in the variables. */
  maxNesting: number
  /** Most tokens in the text (names, punctuation, values): parsing stops past them. */
  maxTokens: number
  /**
   * Most fields of one selection set answering under the same name, and most fragments
   * spread into one selection set: GraphQL's rule that fields merge compares them pairwise.
   */
  maxRepeats: number
}

/**
 * What a field whose resolver calls a service on its own (one record by id, a page of
 * records, `me`, a mutation, a download URL) costs beyond the field: about what a REST call
 * costs the server (its hooks, a statement, the answer), where a field of a loaded record is
 * a property read. Declared on the field (`extensions: { cost: lookupCost }`,
 * `lookup` in each plugin's part, core/graphql/schema-part.ts) so the walk below needs no list of names. Counted here, before the
 * operation runs, rather than charged as each call is made: the whole operation is then
 * refused before its first lookup, and reserved on the budget at once (graphql.ts).
 * References to records and user names load in batches (core/graphql/schema-part.ts `Loaders`) and count as
 * the plain fields they are.
 */
export const lookupCost = 250

function intArg(value: ValueNode | undefined, variables: Record<string, unknown>): number | undefined {
  if (!value) return undefined
  if (value.kind === Kind.INT) return Number(value.value)
  if (value.kind === Kind.VARIABLE) {
    const v = variables[value.name.value]
    return typeof v === 'number' ? v : undefined
  }
  return undefined
}

/**
 * The list items and object members of an argument's value, in the text or in the variables
 * it names: each is a value the service checks, stores or binds (70,000 states in one list
 * overflowed PostgreSQL's bind parameters). Without recursion; the nesting is bounded already.
 */
function valueElements(value: ValueNode, variables: Record<string, unknown>): number {
  let n = 0
  const nodes: ValueNode[] = [value]
  const values: unknown[] = []
  while (nodes.length) {
    const v = nodes.pop()!
    if (v.kind === Kind.LIST) {
      n += v.values.length
      for (const item of v.values) nodes.push(item)
    } else if (v.kind === Kind.OBJECT) {
      n += v.fields.length
      for (const f of v.fields) nodes.push(f.value)
    } else if (v.kind === Kind.VARIABLE) values.push(variables[v.name.value])
  }
  while (values.length) {
    const v = values.pop()
    if (v === null || typeof v !== 'object') continue
    const children = Array.isArray(v) ? v : Object.values(v)
    n += children.length
    for (const c of children) if (c !== null && typeof c === 'object') values.push(c)
  }
  return n
}

/**
 * How many items each introspection list holds in this schema, on average per parent (types
 * × fields per type = the fields of the schema): `__schema { types { fields { … } } }`
 * costs what it returns. And how often `ofType` is not null: `reach[k]` is the share of type
 * references (of fields, arguments, input fields) wrapped (list, non-null) at least k times,
 * so a chain of `ofType` costs what the references' real wrappings return. `largest`: the
 * most a single type has, for the one type `__type(name:)` picks (an average would let
 * aliases of `__type(name: "Query") { fields { … } }` cost a tenth of what they return).
 */
interface IntrospectionSizes {
  lists: Map<string, number>
  largest: Map<string, number>
  reach: number[]
}
const sizesOf = new WeakMap<GraphQLSchema, IntrospectionSizes>()
function introspectionSizes(schema: GraphQLSchema): IntrospectionSizes {
  let sizes = sizesOf.get(schema)
  if (sizes) return sizes
  const types = Object.values(schema.getTypeMap())
  let fields = 0
  let args = 0
  let inputFields = 0
  let enumValues = 0
  let interfaces = 0
  let possible = 0
  const wrapped: number[] = []
  let refs = 0
  const largest = new Map<string, number>()
  const most = (key: string, n: number) => largest.set(key, Math.max(largest.get(key) ?? 1, n))
  const wrapping = (t: unknown) => {
    refs++
    let n = 0
    for (let w = t as { ofType?: unknown }; w && 'ofType' in w && w.ofType; w = w.ofType as { ofType?: unknown })
      wrapped[n] = (wrapped[n++] ?? 0) + 1
  }
  for (const t of types) {
    if (isObjectType(t) || isInterfaceType(t)) {
      for (const f of Object.values(t.getFields())) {
        fields++
        args += f.args.length
        wrapping(f.type)
        for (const a of f.args) wrapping(a.type)
      }
      interfaces += t.getInterfaces().length
      most('__Type.fields', Object.keys(t.getFields()).length)
      most('__Type.interfaces', t.getInterfaces().length)
      if (isInterfaceType(t)) {
        possible += schema.getPossibleTypes(t).length
        most('__Type.possibleTypes', schema.getPossibleTypes(t).length)
      }
    } else if (isInputObjectType(t)) {
      for (const f of Object.values(t.getFields())) {
        inputFields++
        wrapping(f.type)
      }
      most('__Type.inputFields', Object.keys(t.getFields()).length)
    } else if (isEnumType(t)) {
      enumValues += t.getValues().length
      most('__Type.enumValues', t.getValues().length)
    } else if ('getTypes' in t) {
      possible += t.getTypes().length
      most('__Type.possibleTypes', t.getTypes().length)
    }
  }
  const directives = schema.getDirectives()
  const directiveArgs = directives.reduce((n, d) => n + d.args.length, 0)
  const per = (n: number, of: number) => Math.max(1, n / Math.max(1, of))
  sizes = {
    reach: [1, ...wrapped.map((n) => n / Math.max(1, refs))],
    largest,
    lists: new Map([
      ['__Schema.types', types.length],
      ['__Schema.directives', directives.length],
      ['__Type.fields', per(fields, types.length)],
      ['__Type.inputFields', per(inputFields, types.length)],
      ['__Type.enumValues', per(enumValues, types.length)],
      ['__Type.interfaces', per(interfaces, types.length)],
      ['__Type.possibleTypes', per(possible, types.length)],
      ['__Field.args', per(args, fields)],
      ['__Directive.args', per(directiveArgs, directives.length)]
    ])
  }
  sizesOf.set(schema, sizes)
  return sizes
}

/**
 * The cost of a selection set per time it resolves, as `fixed + perPage × page` where
 * `page` is the page size of the connection it belongs to (its lists `nodes` and `edges`
 * hold a page each): the same for every place a fragment is spread, so each fragment is
 * measured once.
 */
interface SetCost {
  fixed: number
  perPage: number
  depth: number
}

/**
 * Depth and cost of an operation, before it runs, on the operation as it executes:
 * fragments spread in and fields typed by the schema. A field counts 1 each time it
 * resolves, a field that calls a service `lookupCost` more; a list resolves what is under
 * it once per item: a connection's `nodes` and `edges` hold its page (`first`, else the
 * default page size), an introspection list what the schema has (its types, fields, …),
 * another list (activity, attachments, a group) one. So a page of 200 records with 10 fields
 * each costs about 2,000, nested lists multiply, and each alias counts again.
 *
 * Linear in the size of the document: every fragment is measured once (per `ofType` level
 * inside introspection), and measuring stops as soon as the cost is over the limit (the
 * reported cost is then where it stopped).
 */
export function measure(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  fragments: Record<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
  limits: QueryLimits
): { depth: number; cost: number } {
  const sizes = introspectionSizes(schema)
  const memo = new Map<string, SetCost | 'measuring'>()
  const over = (c: SetCost) => c.fixed > limits.maxCost || c.perPage > limits.maxCost
  const at = (c: SetCost, page: number | undefined) => c.fixed + c.perPage * (page ?? 1)

  // `ofType`: how many `ofType` levels above, in a selection of a __Type; past the schema's deepest wrapping it is null.
  // `one`: a selection of the one type `__type(name:)` picks.
  const walk = (
    set: SelectionSetNode,
    parent: GraphQLNamedType | undefined,
    ofType: number,
    out: SetCost,
    one = false
  ): void => {
    for (const s of set.selections) {
      if (over(out)) return
      if (s.kind === Kind.INLINE_FRAGMENT) {
        const on = s.typeCondition ? schema.getType(s.typeCondition.name.value) : parent
        walk(s.selectionSet, on, ofType, out, one)
      } else if (s.kind === Kind.FRAGMENT_SPREAD) {
        const c = fragment(s.name.value, ofType, one)
        out.fixed += c.fixed
        out.perPage += c.perPage
        out.depth = Math.max(out.depth, c.depth)
      } else {
        const name = s.name.value
        const def = fieldOf(schema, parent, name)
        const introspection = name.startsWith('__') || (parent !== undefined && isIntrospectionType(parent))
        const level = introspection ? 0 : 1
        if (!def) {
          // Not in the schema: the specified rules refuse the document; count the field alone.
          out.fixed += 1
          out.depth = Math.max(out.depth, level)
          continue
        }
        let own = 1 + Number((def.extensions as { cost?: number } | undefined)?.cost ?? 0)
        for (const a of s.arguments ?? []) own += valueElements(a.value, variables)
        const listed = isListType(getNullableType(def.type))
        const named = getNamedType(def.type)
        // A connection (a field taking `first`) passes its page to the lists directly under it.
        const takesPage = def.args.some((a) => a.name === 'first')
        const page = takesPage
          ? Math.max(
              1,
              intArg(s.arguments?.find((a) => a.name.value === 'first')?.value, variables) ?? limits.defaultPageSize
            )
          : undefined
        const ofTypeField = parent?.name === '__Type' && name === 'ofType'
        const nextOfType = ofTypeField ? ofType + 1 : 0
        // Under `ofType`: resolved for the share of references wrapped once more, null (nothing under it) for the others.
        const resolves = ofTypeField ? (sizes.reach[nextOfType] ?? 0) / (sizes.reach[ofType] || 1) : 1
        const inner: SetCost = { fixed: 0, perPage: 0, depth: 0 }
        if (s.selectionSet && resolves > 0) walk(s.selectionSet, named, nextOfType, inner, name === '__type')
        const under = resolves * at(inner, page)
        out.depth = Math.max(out.depth, level + inner.depth)
        if (!listed) out.fixed += own + under
        else {
          const key = `${parent?.name}.${name}`
          const items = (one ? sizes.largest.get(key) : undefined) ?? sizes.lists.get(key)
          // A list in a connection holds its page; others count their known size (introspection) or one item.
          if (items !== undefined) out.fixed += items * (own + under)
          else out.perPage += own + under
        }
      }
    }
  }

  const fragment = (name: string, ofType: number, one: boolean): SetCost => {
    const key = `${name}|${ofType}|${one}`
    const known = memo.get(key)
    // A fragment spreading itself: NoFragmentCycles refuses the document; count it once.
    if (known === 'measuring') return { fixed: 0, perPage: 0, depth: 0 }
    if (known) return known
    const def = fragments[name]
    if (!def) return { fixed: 0, perPage: 0, depth: 0 }
    memo.set(key, 'measuring')
    const c: SetCost = { fixed: 0, perPage: 0, depth: 0 }
    walk(def.selectionSet, schema.getType(def.typeCondition.name.value), ofType, c, one)
    memo.set(key, c)
    return c
  }

  const root =
    operation.operation === OperationTypeNode.MUTATION
      ? schema.getMutationType()
      : operation.operation === OperationTypeNode.SUBSCRIPTION
        ? schema.getSubscriptionType()
        : schema.getQueryType()
  const total: SetCost = { fixed: 0, perPage: 0, depth: 0 }
  walk(operation.selectionSet, root ?? undefined, 0, total)
  return { depth: total.depth, cost: Math.ceil(at(total, undefined)) }
}

function fieldOf(
  schema: GraphQLSchema,
  parent: GraphQLNamedType | undefined,
  name: string
): GraphQLField<unknown, unknown> | undefined {
  if (name === '__typename') return TypeNameMetaFieldDef
  if (parent === schema.getQueryType() && name === '__schema') return SchemaMetaFieldDef
  if (parent === schema.getQueryType() && name === '__type') return TypeMetaFieldDef
  return parent && (isObjectType(parent) || isInterfaceType(parent)) ? parent.getFields()[name] : undefined
}

/**
 * The response keys (alias or name) of an operation's top-level fields with its fragments
 * spread in, as they execute: two mutation fields in a fragment are two mutations.
 */
export function rootFields(
  operation: OperationDefinitionNode,
  fragments: Record<string, FragmentDefinitionNode>
): Set<string> {
  const keys = new Set<string>()
  const spread = new Set<string>()
  const visit = (set: SelectionSetNode) => {
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) keys.add(s.alias?.value ?? s.name.value)
      else if (s.kind === Kind.INLINE_FRAGMENT) visit(s.selectionSet)
      else if (!spread.has(s.name.value) && fragments[s.name.value]) {
        spread.add(s.name.value)
        visit(fragments[s.name.value].selectionSet)
      }
    }
  }
  visit(operation.selectionSet)
  return keys
}

/** The fragments of a document by name. */
export function fragmentsOf(context: ValidationContext): Record<string, FragmentDefinitionNode> {
  const fragments: Record<string, FragmentDefinitionNode> = Object.create(null)
  for (const d of context.getDocument().definitions)
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d
  return fragments
}

/**
 * A validation rule refusing the operation that is to run (`operationName`) over the limits,
 * with what to change; `measured` hears its cost when within them (reserved on the request's
 * budget before it runs). The document's other operations do not run and are not measured;
 * where none can be picked (several, unnamed: GraphQL refuses to run it) all are.
 */
export function limitRule(
  limits: QueryLimits,
  variables: () => Record<string, unknown>,
  operationName: string | null | undefined,
  measured?: (cost: number) => void
) {
  return (context: ValidationContext): ASTVisitor => {
    const fragments = fragmentsOf(context)
    const runs = getOperationAST(context.getDocument(), operationName)
    return {
      Document(node) {
        const nesting = valueDepth(variables(), limits.maxNesting)
        if (nesting > limits.maxNesting) context.reportError(tooNested(nesting, limits, 'variables', node))
      },
      OperationDefinition(node) {
        if (runs && node !== runs) return
        const { depth, cost } = measure(context.getSchema(), node, fragments, variables(), limits)
        if (depth > limits.maxDepth) {
          context.reportError(
            new GraphQLError(
              `The operation nests fields ${depth} deep; at most ${limits.maxDepth} levels are allowed. Ask for less at once, or follow references in a second query.`,
              {
                nodes: [node],
                extensions: { code: 'graphql.too_deep', status: 400, depth, maxDepth: limits.maxDepth }
              }
            )
          )
        } else if (cost > limits.maxCost) {
          context.reportError(
            new GraphQLError(
              `The operation could resolve about ${cost} fields (a lookup counts as ${lookupCost}); at most ${limits.maxCost} are allowed. Ask for smaller pages (first), fewer fields per record, fewer aliases or lookups.`,
              {
                nodes: [node],
                extensions: { code: 'graphql.too_costly', status: 400, cost, maxCost: limits.maxCost }
              }
            )
          )
        } else measured?.(cost)
      }
    }
  }
}
