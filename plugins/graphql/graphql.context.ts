import DataLoader from 'dataloader'
import type { Principal } from '../../core/auth/principal.ts'
import type { App } from '../../core/declarations.ts'
import { isUuid } from '../../core/validation.ts'
import { recordsPath, type RecordInclude, type RecordOut } from '../records/records.shared.ts'

/** What every resolver is handed: who calls, and the request's batch loaders. */
export interface GraphQLContext {
  app: App
  principal: Principal
  traceId: string
  /** The HTTP request's Idempotency-Key: applies to an operation with exactly one mutation field. */
  idempotencyKey?: string
  loaders: Loaders
  /** The cost of the operation to run, once it passed the limits (graphql.limits.ts): reserved on the budget before it runs. */
  cost?: number
}

/** The params of a service call made for a GraphQL request (`extra`: the service's own params): the same hooks and rules as REST, with `provider: 'graphql'`. */
export function callParams<E extends object = object>(
  ctx: Pick<GraphQLContext, 'principal'>,
  extra?: E
): E & { provider: 'graphql'; principal: Principal } {
  return { ...(extra as E), provider: 'graphql', principal: ctx.principal }
}

/**
 * Per-request batches, so a page of records with their references costs a constant number
 * of statements: every reference to one module asked for while a level of the query
 * resolves becomes one records `find` by ids (through the service, with its rules), and
 * every user id one name lookup.
 */
export class Loaders {
  private readonly records = new Map<string, DataLoader<string, RecordOut | null>>()
  readonly userNames: DataLoader<string, string | null>

  constructor(
    private readonly ctx: Omit<GraphQLContext, 'loaders'>,
    private readonly maxLimit: number
  ) {
    const { app, principal } = ctx
    this.userNames = new DataLoader(async (ids) => {
      const names = await app.get('platform').users.names(principal.tenantId, ids)
      return ids.map((id) => names.get(id) ?? null)
    })
  }

  /** Records of one module by id (null: none the caller may see), with what the query selects of them. */
  record(moduleKey: string, include: readonly RecordInclude[]): DataLoader<string, RecordOut | null> {
    const key = `${moduleKey}|${[...include].sort().join(',')}`
    let loader = this.records.get(key)
    if (!loader) {
      loader = new DataLoader(async (ids) => {
        const wanted = [...new Set(ids.filter((id) => isUuid(id)).map((id) => id.toLowerCase()))]
        const found = new Map<string, RecordOut>()
        for (let i = 0; i < wanted.length; i += this.maxLimit) {
          const chunk = wanted.slice(i, i + this.maxLimit)
          const page = await this.ctx.app
            .service(recordsPath)
            .find({ ...callParams(this.ctx), query: { moduleKey, id: chunk.join(','), limit: chunk.length }, include })
          for (const r of page.items) found.set(r.id, r)
        }
        return ids.map((id) => found.get(id.toLowerCase()) ?? null)
      })
      this.records.set(key, loader)
    }
    return loader
  }
}
