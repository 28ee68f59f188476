import DataLoader from 'dataloader'
import type { FieldNode, GraphQLResolveInfo } from 'graphql'
import { callParams, childFields, type GraphQLContext } from '../../core/graphql/schema-part.ts'
import { isUuid } from '../../core/validation.ts'
import type { RecordInclude } from './records.class.ts'
import type { RecordOut } from './records.schema.ts'
import { recordsPath } from './records.shared.ts'

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
export function connectionSelection(info: GraphQLResolveInfo): {
  include: RecordInclude[]
  cursors: boolean
  count: boolean
} {
  const top = childFields(info, info.fieldNodes)
  const edges = top.get('edges') ?? []
  const edgeFields = childFields(info, edges)
  const records = [...(top.get('nodes') ?? []), ...(edgeFields.get('node') ?? [])]
  return { include: recordIncludes(info, records), cursors: edgeFields.has('cursor'), count: top.has('count') }
}

/**
 * Records of one module by id (null: none the caller may see), with what the query selects
 * of them, in the request's batches: every reference to one module asked for while a level
 * of the query resolves becomes one records `find` by ids (through the service, with its rules).
 */
export function recordLoader(
  ctx: GraphQLContext,
  moduleKey: string,
  include: readonly RecordInclude[]
): DataLoader<string, RecordOut | null> {
  return ctx.loaders.batch(`records|${moduleKey}|${[...include].sort().join(',')}`, () => {
    const maxLimit = ctx.app.get('platform').config.pagination.maxLimit
    return new DataLoader<string, RecordOut | null>(async (ids) => {
      const wanted = [...new Set(ids.filter((id) => isUuid(id)).map((id) => id.toLowerCase()))]
      const found = new Map<string, RecordOut>()
      for (let i = 0; i < wanted.length; i += maxLimit) {
        const chunk = wanted.slice(i, i + maxLimit)
        const page = await ctx.app
          .service(recordsPath)
          .find({ ...callParams(ctx), query: { moduleKey, id: chunk.join(','), limit: chunk.length }, include })
        for (const r of page.items) found.set(r.id, r)
      }
      return ids.map((id) => found.get(id.toLowerCase()) ?? null)
    })
  })
}
