import { GraphQLError, Kind, type ASTVisitor, type FragmentDefinitionNode, type OperationDefinitionNode, type SelectionSetNode, type ValidationContext, type ValueNode } from 'graphql'

/** How much one GraphQL operation may ask for (documented in docs/graphql.md). */
export interface QueryLimits {
  /** Deepest field nesting, introspection fields aside. */
  maxDepth: number
  /** Most fields resolved: each field counts once per item of the lists above it. */
  maxCost: number
  /** What a list field counts as when `first` is not given. */
  defaultPageSize: number
}

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
 * Depth and cost of an operation, before it runs. A field's cost is 1 times the page sizes
 * of the connections above it (their `first`, else the default page size), so a list of
 * 200 records with 10 fields each costs about 2,000, and nesting lists multiplies.
 */
export function measure(
  operation: OperationDefinitionNode,
  fragments: Record<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
  limits: QueryLimits
): { depth: number; cost: number } {
  let depth = 0
  let cost = 0
  const walk = (set: SelectionSetNode | undefined, level: number, multiplier: number, seen: ReadonlySet<string>) => {
    for (const s of set?.selections ?? []) {
      if (s.kind === Kind.FIELD) {
        if (s.name.value.startsWith('__')) continue
        depth = Math.max(depth, level)
        cost += multiplier
        const first = s.arguments?.find((a) => a.name.value === 'first')
        // A connection (it takes `first`, or its selection has nodes or edges) returns a page of what is under it.
        const pages = first !== undefined || !!s.selectionSet?.selections.some((c) => c.kind === Kind.FIELD && (c.name.value === 'nodes' || c.name.value === 'edges'))
        const size = pages ? Math.max(1, intArg(first?.value, variables) ?? limits.defaultPageSize) : 1
        // Stop counting once over: the answer is already "too costly".
        if (cost <= limits.maxCost && depth <= limits.maxDepth) walk(s.selectionSet, level + 1, multiplier * size, seen)
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        walk(s.selectionSet, level, multiplier, seen)
      } else if (!seen.has(s.name.value)) {
        walk(fragments[s.name.value]?.selectionSet, level, multiplier, new Set([...seen, s.name.value]))
      }
    }
  }
  walk(operation.selectionSet, 1, 1, new Set())
  return { depth, cost }
}

/** A validation rule refusing operations over the limits, with what to change. */
export function limitRule(limits: QueryLimits, variables: () => Record<string, unknown>) {
  return (context: ValidationContext): ASTVisitor => {
    const fragments: Record<string, FragmentDefinitionNode> = {}
    for (const d of context.getDocument().definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d
    return {
      OperationDefinition(node) {
        const { depth, cost } = measure(node, fragments, variables(), limits)
        if (depth > limits.maxDepth) {
          context.reportError(
            new GraphQLError(`The operation nests fields ${depth} deep; at most ${limits.maxDepth} levels are allowed. Ask for less at once, or follow references in a second query.`, {
              nodes: [node],
              extensions: { code: 'graphql.too_deep', status: 400, depth, maxDepth: limits.maxDepth }
            })
          )
        } else if (cost > limits.maxCost) {
          context.reportError(
            new GraphQLError(`The operation could resolve about ${cost} fields; at most ${limits.maxCost} are allowed. Ask for smaller pages (first) or fewer fields per record.`, {
              nodes: [node],
              extensions: { code: 'graphql.too_costly', status: 400, cost, maxCost: limits.maxCost }
            })
          )
        }
      }
    }
  }
}
