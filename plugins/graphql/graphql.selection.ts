import type { FieldNode, GraphQLResolveInfo, SelectionSetNode } from 'graphql'
import type { RecordInclude } from '../records/records.shared.ts'

/** The fields selected under `nodes`, with fragments spread in, by name. */
export function childFields(info: GraphQLResolveInfo, nodes: readonly FieldNode[]): Map<string, FieldNode[]> {
  const out = new Map<string, FieldNode[]>()
  const visit = (set: SelectionSetNode | undefined, seen: Set<string>) => {
    for (const s of set?.selections ?? []) {
      if (s.kind === 'Field') out.set(s.name.value, [...(out.get(s.name.value) ?? []), s])
      else if (s.kind === 'InlineFragment') visit(s.selectionSet, seen)
      else if (!seen.has(s.name.value)) {
        seen.add(s.name.value)
        visit(info.fragments[s.name.value]?.selectionSet, seen)
      }
    }
  }
  for (const n of nodes) visit(n.selectionSet, new Set())
  return out
}

const includeOf: Record<string, RecordInclude> = {
  activity: 'activity',
  attachments: 'attachments',
  availableTransitions: 'transitions'
}

/** What records selected by `nodes` need besides their columns, so the list or batch that loads them fetches it in the same statement. */
export function recordIncludes(info: GraphQLResolveInfo, nodes: readonly FieldNode[]): RecordInclude[] {
  const fields = childFields(info, nodes)
  return Object.keys(includeOf)
    .filter((name) => fields.has(name))
    .map((name) => includeOf[name])
}

/** For a connection field: the includes of its `nodes` and `edges { node }`, and whether edge cursors are selected. */
export function connectionSelection(info: GraphQLResolveInfo): { include: RecordInclude[]; cursors: boolean } {
  const top = childFields(info, info.fieldNodes)
  const edges = top.get('edges') ?? []
  const edgeFields = childFields(info, edges)
  const records = [...(top.get('nodes') ?? []), ...(edgeFields.get('node') ?? [])]
  return { include: recordIncludes(info, records), cursors: edgeFields.has('cursor') }
}
