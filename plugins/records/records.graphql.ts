import type { ObjectTypeComposerFieldConfigMapDefinition } from 'graphql-compose'
import { hiddenFields } from '../../core/auth/access.ts'
import {
  callParams,
  type GraphQLContext,
  type GraphQLSchemaBuild,
  type Resolver
} from '../../core/graphql/schema-part.ts'
import { charge } from '../../core/limits/budget.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import { systemFields, type SystemField, type SystemFieldKind } from '../../core/modules/system-fields.ts'
import { article, payloadTypes } from './records.graphql-payload.ts'
import { connectionSelection, recordLoader } from './records.graphql-selection.ts'
import { dateFilterProperties, dueFilterProperties, findProperties, type RecordOut } from './records.schema.ts'
import { recordsPath } from './records.shared.ts'

/** One row per system field kind (core/modules/system-fields.ts): its GraphQL type, when present on every record. */
const systemFieldToGraphQL: { [K in SystemFieldKind]: string } = {
  uuid: 'ID',
  string: 'String',
  integer: 'Int',
  datetime: 'DateTime',
  actor: 'Actor'
}

/** The system fields of every record type, derived from the one list. */
function systemFieldsGraphQL(): ObjectTypeComposerFieldConfigMapDefinition<RecordOut, GraphQLContext> {
  return Object.fromEntries(
    systemFields.map((f: SystemField) => {
      const type = `${systemFieldToGraphQL[f.kind]}${f.optional ? '' : '!'}`
      const description = f.graphqlDescription ?? f.description
      return [f.key, description ? { type, description } : type]
    })
  )
}

const expected = (version: number | null | undefined) =>
  version === null || version === undefined ? undefined : `"${version}"`

/**
 * A payload filter as the records service takes it (`payload[field][op]=value`): values as strings, a list operator's
 * list as a list (its values may hold commas), a group's member conditions under `group.member`.
 */
function filterToQuery(
  filter: Record<string, Record<string, unknown> | null> | undefined
): Record<string, Record<string, string | string[]>> | undefined {
  if (!filter) return undefined
  const out: Record<string, Record<string, string | string[]>> = {}
  const put = (path: string, ops: Record<string, unknown> | null) => {
    for (const [op, value] of Object.entries(ops ?? {})) {
      if (value === null || value === undefined) continue
      // An operator's value is a scalar or a list; an object is a group member's own conditions.
      if (typeof value === 'object' && !Array.isArray(value)) put(`${path}.${op}`, value as Record<string, unknown>)
      else (out[path] ??= {})[op] = Array.isArray(value) ? value.map(String) : String(value)
    }
  }
  for (const [field, ops] of Object.entries(filter)) put(field, ops)
  return Object.keys(out).length ? out : undefined
}

/** What a record holds besides its own fields: who changed it, its activity, its files, where it may go next. */
function recordTypes({ sc }: GraphQLSchemaBuild) {
  sc.createObjectTC({
    name: 'User',
    description: 'A user of the tenant named in a payload field.',
    fields: {
      id: 'ID!',
      name: {
        type: 'String',
        description: 'Display name, else user name; null when the user is gone.',
        resolve: ((u: { id: string }, _a, ctx) => ctx.loaders.userNames.load(u.id)) as Resolver
      }
    }
  })
  sc.createObjectTC({
    name: 'RecordLink',
    description: 'A reference to a record of a module this caller does not see: its id only.',
    fields: { id: 'ID!' }
  })
  sc.createObjectTC({
    name: 'Location',
    fields: { latitude: 'Float!', longitude: 'Float!', label: 'String', accuracyMeters: 'Float' }
  })
  sc.createInputTC({
    name: 'LocationInput',
    fields: { latitude: 'Float!', longitude: 'Float!', label: 'String', accuracyMeters: 'Float' }
  })
  sc.createObjectTC({ name: 'FieldChange', fields: { field: 'String!', from: 'JSON', to: 'JSON' } })
  sc.createObjectTC({ name: 'TransitionStep', fields: { key: 'String!', from: 'String!', to: 'String!' } })
  sc.createObjectTC({
    name: 'ActivityEntry',
    description: "One change of a record, oldest first; `id` is the entry's position in the record's activity.",
    fields: {
      id: 'Int!',
      at: 'DateTime!',
      actor: 'Actor!',
      action: 'String!',
      changes: '[FieldChange!]!',
      transition: 'TransitionStep',
      comment: 'String'
    }
  })
  // The attachments plugin adds how to download one (`download`).
  sc.getOrCreateOTC('Attachment').addFields({
    id: 'ID!',
    fileName: 'String!',
    contentType: 'String!',
    size: 'Float!',
    sha256: 'String',
    uploadedBy: 'Actor!',
    uploadedAt: 'DateTime!'
  })
  sc.createObjectTC({
    name: 'TransitionRefusal',
    description:
      "What firing a transition would answer for the module's separation of duties (REST's availableTransitions[].refusal)",
    fields: { code: 'String!', detail: 'String!' }
  })
  sc.createObjectTC({
    name: 'AvailableTransition',
    fields: {
      key: 'String!',
      label: 'String!',
      to: 'String!',
      missingFields: '[String!]!',
      refusal: {
        type: 'TransitionRefusal',
        description: 'Set when the separation of duties holds the caller apart from it on the record as it stands'
      }
    }
  })
  sc.createObjectTC({
    name: 'RecordCount',
    description: "A count of records: exact up to 10,000; above, the planner's estimate (exact: false).",
    fields: { value: 'Int!', exact: 'Boolean!' }
  })
  sc.createObjectTC({
    name: 'MigrationRefusal',
    description:
      "Why a record stored under an older version of its module is not moved to the loaded one: the version it is stored under and what that version refuses (docs/modules.md, Upgrade). Its fields are shown as far as the module's migration took them; values their types cannot carry read as null.",
    fields: { fromVersion: 'String!', reason: 'String!' }
  })
}

// A record loaded without what the selection asks (a mutation's result is complete; a reference batch asks for what it needs) fetches it once.
// Activity and attachments grow with the record, so the cost walk cannot know their length (it counts one item):
// each entry is charged on the request's budget as it is handed out, before the fields under it resolve.
const complete =
  (field: 'activity' | 'attachments' | 'availableTransitions'): Resolver =>
  async (r: RecordOut, _a, ctx) => {
    const list =
      r[field] ??
      (await recordLoader(ctx, r.moduleKey, ['activity', 'attachments', 'transitions']).load(r.id))?.[field] ??
      []
    charge(list.length, `graphql ${field}`)
    return list
  }

const envelope: ObjectTypeComposerFieldConfigMapDefinition<RecordOut, GraphQLContext> = {
  ...systemFieldsGraphQL(),
  activity: { type: '[ActivityEntry!]!', resolve: complete('activity') },
  attachments: { type: '[Attachment!]!', resolve: complete('attachments') },
  migrationRefused: {
    type: 'MigrationRefusal',
    description:
      "Set only on a record the loaded module version refuses as the module's migration leaves it (REST's migrationRefused)",
    resolve: (r: RecordOut) => r.migrationRefused ?? null
  },
  availableTransitions: {
    type: '[AvailableTransition!]!',
    description: "Transitions the caller's roles may fire now, with the fields each still needs",
    resolve: complete('availableTransitions')
  }
}

/**
 * The records part of the GraphQL schema (`Plugin.graphql`): the `Record` interface; per
 * module the caller sees, a record type with typed payload fields (less those hidden from
 * it), one record by id and a paged list with typed filters; mutations to create, update,
 * transition and delete records. Every resolver calls the records service as REST does.
 */
export function recordsGraphQL(build: GraphQLSchemaBuild) {
  const { sc, modules, principal, query, mutation, lookup } = build
  recordTypes(build)
  const recordInterface = sc.createInterfaceTC({
    name: 'Record',
    description: 'A record of any module.',
    fields: envelope
  })
  const typeOfModule = new Map(modules.map((m) => [m.definition.key, build.names.pascal(m.definition.key)]))
  const rootFields = build.names.moduleFieldNames(modules.map((m) => m.definition.key))
  for (const m of modules) {
    const T = typeOfModule.get(m.definition.key)!
    const hidden = hiddenFields(principal, m)
    const visible = m.definition.fields.filter((f) => !hidden.has(f.key))
    const { filterable } = payloadTypes(build, m, T, visible, typeOfModule)
    const recordType = sc.createObjectTC({
      name: T,
      description: m.definition.description ? `${m.definition.title}: ${m.definition.description}` : m.definition.title,
      interfaces: [recordInterface],
      fields: { ...envelope, payload: { type: `${T}Payload!`, resolve: (r: RecordOut) => r.payload } }
    })
    recordInterface.addTypeResolver(recordType, (r: RecordOut) => r.moduleKey === m.definition.key)
    sc.createObjectTC({
      name: `${T}Edge`,
      fields: {
        cursor: { type: 'String!', description: 'The `after` of the page that starts after this record' },
        node: `${T}!`
      }
    })
    sc.createObjectTC({
      name: `${T}Connection`,
      fields: {
        edges: `[${T}Edge!]!`,
        nodes: `[${T}!]!`,
        pageInfo: 'PageInfo!',
        count: {
          type: 'RecordCount!',
          description:
            "How many records the arguments select, as the caller may see them (the whole list, whatever `after`); counted only when selected (REST's count=true)",
          // A statement of its own (it reads up to 10,001 rows): charged as a lookup in the operation's cost.
          ...lookup
        }
      }
    })
    moduleRootFields(build, m, T, rootFields.get(m.definition.key)!, filterable)
  }

  query.record = {
    type: 'Record',
    description: 'One record of any module by id (GET /api/v1/records/{id}).',
    ...lookup,
    args: { id: 'ID!' },
    resolve: ((_s, { id }, ctx) => ctx.app.service(recordsPath).get(id, callParams(ctx))) as Resolver
  }
  mutation.deleteRecord = {
    type: 'Record',
    ...lookup,
    description: 'Soft-deletes a record (DELETE /api/v1/records/{id}); it stays in the audit log.',
    args: {
      id: 'ID!',
      expectedVersion: {
        type: 'Int',
        description: "Delete only if the record is still at this version (REST's If-Match)"
      }
    },
    resolve: ((_s, args, ctx) =>
      ctx.app
        .service(recordsPath)
        .remove(
          args.id,
          callParams(ctx, { ifMatch: expected(args.expectedVersion), idempotencyKey: ctx.idempotencyKey })
        )) as Resolver
  }
}

/** One module's queries (`incident`, `incidents`) and mutations (`createIncident`, `updateIncident`, `transitionIncident`). */
function moduleRootFields(
  { platform, query, mutation, lookup }: GraphQLSchemaBuild,
  m: RegisteredModule,
  T: string,
  { one, many }: { one: string; many: string },
  filterable: boolean
) {
  const d = m.definition
  const { defaultLimit, maxLimit } = platform.config.pagination
  const only = { moduleKey: d.key }
  query[one] = {
    type: T,
    description: `One ${d.title} by id (the same as GET /api/v1/records/{id}).`,
    ...lookup,
    args: { id: 'ID!' },
    resolve: ((_s, { id }, ctx) => ctx.app.service(recordsPath).get(id, callParams(ctx, only))) as Resolver
  }
  query[many] = {
    type: `${T}Connection!`,
    description: `${d.title} records, oldest first (or by last change with updatedSince, or in the order of sort), a page at a time (the same as GET /api/v1/records?moduleKey=${d.key}).`,
    ...lookup,
    args: {
      first: { type: 'Int', description: `Page size, 1-${maxLimit} (default ${defaultLimit})` },
      after: { type: 'String', description: "The previous page's pageInfo.endCursor" },
      state: `[${T}State!]`,
      ...(filterable ? { filter: `${T}Filter` } : {}),
      ...Object.fromEntries(
        Object.entries(dateFilterProperties).map(([name, schema]) => [
          name,
          { type: 'DateTime', description: schema.description }
        ])
      ),
      ...Object.fromEntries(
        Object.entries(findProperties).map(([name, schema]) => [
          name,
          { type: 'String', description: schema.description }
        ])
      ),
      ...(d.due
        ? Object.fromEntries(
            Object.entries(dueFilterProperties).map(([name, schema]) => [
              name,
              { type: 'Boolean', description: schema.description }
            ])
          )
        : {}),
      includeDeleted: { type: 'Boolean', description: 'Also soft-deleted records (with deletedAt)' },
      externalRef: 'String',
      number: 'String'
    },
    resolve: (async (_s, args, ctx, info) => {
      const { include, cursors, count } = connectionSelection(info)
      const q = {
        moduleKey: d.key,
        ...(args.first !== undefined && args.first !== null ? { limit: args.first } : {}),
        ...(args.after ? { cursor: args.after } : {}),
        ...(args.state?.length ? { state: args.state.join(',') } : {}),
        ...(args.filter ? { payload: filterToQuery(args.filter) } : {}),
        ...Object.fromEntries(
          [
            ...Object.keys(dateFilterProperties),
            ...Object.keys(dueFilterProperties),
            ...Object.keys(findProperties)
          ].flatMap((name) => (args[name] !== undefined && args[name] !== null ? [[name, args[name]]] : []))
        ),
        ...(args.includeDeleted ? { includeDeleted: true } : {}),
        ...(args.externalRef !== undefined && args.externalRef !== null ? { externalRef: args.externalRef } : {}),
        ...(args.number !== undefined && args.number !== null ? { number: args.number } : {}),
        ...(count ? { count: true } : {})
      }
      if (q.payload === undefined) delete q.payload
      const page = await ctx.app
        .service(recordsPath)
        .find({ ...callParams(ctx), query: q, include, itemCursors: cursors })
      return {
        nodes: page.items,
        count: page.count,
        edges: page.items.map((node, i) => ({ node, cursor: page.cursors?.[i] ?? '' })),
        pageInfo: {
          hasNextPage: page.nextCursor !== null,
          hasPreviousPage: false,
          startCursor: null,
          endCursor: page.nextCursor
        }
      }
    }) as Resolver
  }
  const version = {
    type: 'Int',
    description: "Change only if the record is still at this version (REST's If-Match); else a 412 error"
  }
  mutation[`create${T}`] = {
    type: T,
    ...lookup,
    description: `Creates ${article(d.title)} in its initial state (POST /api/v1/records).`,
    args: { payload: `${T}PayloadInput!`, externalRef: 'String' },
    resolve: ((_s, args, ctx) =>
      ctx.app.service(recordsPath).create(
        {
          moduleKey: d.key,
          payload: args.payload,
          ...(args.externalRef !== undefined && args.externalRef !== null ? { externalRef: args.externalRef } : {})
        },
        callParams(ctx, { idempotencyKey: ctx.idempotencyKey })
      )) as Resolver
  }
  mutation[`update${T}`] = {
    type: T,
    ...lookup,
    description: `Changes ${article(d.title)}'s payload (PATCH /api/v1/records/{id}); states change through transition${T}.`,
    args: { id: 'ID!', payload: `${T}PayloadPatch!`, expectedVersion: version },
    resolve: ((_s, args, ctx) =>
      ctx.app
        .service(recordsPath)
        .patch(
          args.id,
          { payload: args.payload },
          callParams(ctx, { ...only, ifMatch: expected(args.expectedVersion), idempotencyKey: ctx.idempotencyKey })
        )) as Resolver
  }
  if (d.workflow.transitions.length)
    mutation[`transition${T}`] = {
      type: T,
      ...lookup,
      description: `Fires a workflow transition of ${article(d.title)} (POST /api/v1/records/{id}:transition).`,
      args: {
        id: 'ID!',
        transition: `${T}Transition!`,
        comment: 'String',
        payload: `${T}PayloadPatch`,
        expectedVersion: version
      },
      resolve: ((_s, args, ctx) =>
        ctx.app.service(recordsPath).transition(
          {
            transition: args.transition,
            ...(args.comment !== undefined && args.comment !== null ? { comment: args.comment } : {}),
            ...(args.payload ? { payload: args.payload } : {})
          },
          callParams(ctx, {
            ...only,
            id: args.id,
            ifMatch: expected(args.expectedVersion),
            idempotencyKey: ctx.idempotencyKey
          })
        )) as Resolver
    }
}
