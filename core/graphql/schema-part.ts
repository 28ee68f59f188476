import DataLoader from 'dataloader'
import {
  Kind,
  type FieldNode,
  type GraphQLFieldResolver,
  type GraphQLResolveInfo,
  type SelectionSetNode
} from 'graphql'
import type { ObjectTypeComposerFieldConfigMapDefinition, SchemaComposer } from 'graphql-compose'
import type { Principal } from '../auth/principal.ts'
import type { App, Platform } from '../declarations.ts'
import type { RegisteredModule } from '../modules/registry.ts'

/**
 * The contract between the GraphQL endpoint (plugins/graphql) and the plugins that bring
 * their types to it (`Plugin.graphql`, core/plugin.ts): what a part is handed while one
 * caller's schema is built, and what its resolvers are handed while a request runs. Here
 * in core so that a plugin contributes without importing the graphql plugin.
 */

/** What every resolver is handed: who calls, and the request's batch loaders. */
export interface GraphQLContext {
  app: App
  principal: Principal
  traceId: string
  /** The HTTP request's Idempotency-Key: applies to an operation with exactly one mutation field. */
  idempotencyKey?: string
  loaders: Loaders
  /** The cost of the operation to run, once it passed the limits (plugins/graphql/graphql.limits.ts): reserved on the budget before it runs. */
  cost?: number
}

/**
 * A field's resolver, as graphql-js types one. Its args are graphql's own default for `TArgs`: values
 * graphql-js coerced against the field's declared arguments before the call. Its source is what the
 * parent field resolved to, a different shape per type (a record, a payload, a user reference), and
 * each resolver names it in its first parameter; `unknown` there would refuse those parameters (a
 * function type is contravariant in its parameters) and the parts' untyped ones.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the source differs per parent type, named by each resolver (see above)
export type Resolver = GraphQLFieldResolver<any, GraphQLContext>

/** Root fields a part adds to `Query` or `Mutation`. */
export type RootFields = ObjectTypeComposerFieldConfigMapDefinition<unknown, GraphQLContext>

/** The params of a service call made for a GraphQL request (`extra`: the service's own params): the same hooks and rules as REST, with `provider: 'graphql'`. */
export function callParams<E extends object = object>(
  ctx: Pick<GraphQLContext, 'principal'>,
  extra?: E
): E & { provider: 'graphql'; principal: Principal } {
  return { ...(extra as E), provider: 'graphql', principal: ctx.principal }
}

/**
 * Per-request batches, so a page of records with their references costs a constant number
 * of statements: every user id asked for while a level of the query resolves becomes one
 * name lookup, and a part keeps its own batches here by key (the records part: references
 * to one module become one records `find` by ids).
 */
export class Loaders {
  private readonly batches = new Map<string, DataLoader<unknown, unknown>>()
  readonly userNames: DataLoader<string, string | null>

  constructor(readonly ctx: Omit<GraphQLContext, 'loaders'>) {
    const { app, principal } = ctx
    this.userNames = new DataLoader(async (ids) => {
      const names = await app.get('platform').users.names(principal.tenantId, ids)
      return ids.map((id) => names.get(id) ?? null)
    })
  }

  /** The request's batch under `key`, made by `make` the first time it is asked for. */
  batch<K, V>(key: string, make: () => DataLoader<K, V>): DataLoader<K, V> {
    let loader = this.batches.get(key)
    if (!loader) this.batches.set(key, (loader = make()))
    // One key, one `make`: the loader under a key is the one made with that caller's types.
    return loader as DataLoader<K, V>
  }
}

/** The GraphQL names the endpoint derives (plugins/graphql/graphql.names.ts), so every part names alike. */
export interface GraphQLNaming {
  /** `corrective-action` → `CorrectiveAction`. */
  pascal(key: string): string
  /** Enum value names for option values, in order, each unique. */
  enumNames(values: readonly string[]): string[]
  /** The root fields of each module (`incident`, `incidents`), clear of the other root fields. */
  moduleFieldNames(moduleKeys: readonly string[]): Map<string, { one: string; many: string }>
}

/**
 * What a part is handed while one caller's schema is built (once per tenant, module
 * versions and hidden fields; never per request). The composer already holds the common
 * vocabulary: the scalars `Date`, `DateTime` and `JSON`, `Actor`, `SignedRequest` and
 * `PageInfo`. Parts run in plugin order; a type another part also extends is taken with
 * `sc.getOrCreateOTC(name)`.
 */
export interface GraphQLSchemaBuild {
  sc: SchemaComposer<GraphQLContext>
  platform: Platform
  principal: Principal
  /** The modules this caller sees, by key. */
  modules: readonly RegisteredModule[]
  /**
   * Fields for `Query` and `Mutation`, this part's own: a name another part adds too is refused when the
   * schema is built. Module root fields step aside for the names in plugins/graphql/graphql.names.ts
   * (`moduleFieldNames`); a part with a new root field a module key could spell adds it there. Mutation
   * fields stay nullable: one that fails is null beside those that committed.
   */
  query: RootFields
  mutation: RootFields
  /** Spread onto a field whose resolver calls a service on its own: the cost walk counts it as a lookup. */
  lookup: { extensions: { cost: number } }
  names: GraphQLNaming
}

/**
 * A plugin's part of the GraphQL schema (`Plugin.graphql`): its types, queries and
 * mutations. Every resolver calls the plugin's Feathers service with `callParams(ctx)`,
 * so the hooks and rules of REST apply unchanged.
 */
export type GraphQLPart = (build: GraphQLSchemaBuild) => void

/** The fields selected under `nodes`, with fragments spread in, by name. */
export function childFields(info: GraphQLResolveInfo, nodes: readonly FieldNode[]): Map<string, FieldNode[]> {
  const out = new Map<string, FieldNode[]>()
  const visit = (set: SelectionSetNode | undefined, seen: Set<string>) => {
    for (const s of set?.selections ?? []) {
      if (s.kind === Kind.FIELD) out.set(s.name.value, [...(out.get(s.name.value) ?? []), s])
      else if (s.kind === Kind.INLINE_FRAGMENT) visit(s.selectionSet, seen)
      else if (!seen.has(s.name.value)) {
        seen.add(s.name.value)
        visit(info.fragments[s.name.value]?.selectionSet, seen)
      }
    }
  }
  for (const n of nodes) visit(n.selectionSet, new Set())
  return out
}

/** GraphQL input objects carry explicit nulls for omitted optional fields only when sent; REST bodies have no nulls there. */
export function withoutNulls<T extends Record<string, unknown>>(input: T): T {
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== null && v !== undefined)) as T
}
