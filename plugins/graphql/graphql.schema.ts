import {
  GraphQLError,
  GraphQLScalarType,
  Kind,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type ValueNode
} from 'graphql'
import {
  SchemaComposer,
  type ObjectTypeComposerFieldConfigMapDefinition,
  type InputTypeComposerFieldConfigMapDefinition
} from 'graphql-compose'
import { hiddenFields, seesModule } from '../../core/auth/access.ts'
import type { Principal } from '../../core/auth/principal.ts'
import type { Platform } from '../../core/declarations.ts'
import { fieldToFilter, type Operator } from '../../core/modules/derive/filters.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { FieldDefinition } from '../../core/modules/types.ts'
import { charge } from '../../core/limits/budget.ts'
import { isFormat } from '../../core/validation.ts'
import { attachmentsPath } from '../attachments/attachments.shared.ts'
import { exportFormats, exportsPath } from '../exports/exports.shared.ts'
import { mePath } from '../me/me.shared.ts'
import { modulesPath } from '../modules/modules.shared.ts'
import { recordsPath, type RecordOut } from '../records/records.shared.ts'
import { callParams, type GraphQLContext } from './graphql.context.ts'
import { graphQLTypesOf, type DeriveTypes } from './graphql.derive.ts'
import { lookupCost } from './graphql.limits.ts'
import { enumNames, moduleFieldNames, pascal } from './graphql.names.ts'
import { connectionSelection, recordIncludes } from './graphql.selection.ts'

type Resolver = (source: any, args: any, ctx: GraphQLContext, info: GraphQLResolveInfo) => unknown

/** Marks a field whose resolver calls a service on its own: it costs a lookup (graphql.limits.ts). */
const lookup = { extensions: { cost: lookupCost } }

/** Who sees which schema: the tenant, and per module the caller sees its version and the fields hidden from it. */
export function schemaKey(platform: Platform, principal: Principal): { key: string; modules: RegisteredModule[] } {
  const tenant = platform.tenants.get(principal.tenantId)
  const modules = [...(tenant?.modules.values() ?? [])]
    .filter((m) => seesModule(principal, m))
    .sort((a, b) => a.definition.key.localeCompare(b.definition.key))
  const key = JSON.stringify([
    principal.tenantId,
    modules.map((m) => [m.versionKey, [...hiddenFields(principal, m)].sort()])
  ])
  return { key, modules }
}

/** `Incident` → `an Incident`, `Corrective action` → `a Corrective action`. */
const article = (title: string) => `${/^[aeiou]/i.test(title) ? 'an' : 'a'} ${title}`

function scalar(name: string, description: string, check: (v: unknown) => boolean, expected: string) {
  const parse = (v: unknown) => {
    if (!check(v)) throw new GraphQLError(`${name} must be ${expected} (got ${JSON.stringify(v)})`)
    return v
  }
  return new GraphQLScalarType({
    name,
    description,
    serialize: (v) => v,
    parseValue: parse,
    parseLiteral: (ast: ValueNode) => parse(ast.kind === Kind.STRING ? ast.value : undefined)
  })
}

const dateScalar = scalar(
  'Date',
  'A calendar date, YYYY-MM-DD (RFC 3339 full-date).',
  (v) => typeof v === 'string' && isFormat('date', v),
  'a date, YYYY-MM-DD'
)
const dateTimeScalar = scalar(
  'DateTime',
  'An instant, ISO 8601 with a timezone (RFC 3339 date-time).',
  (v) => typeof v === 'string' && isFormat('date-time', v),
  'an ISO 8601 date-time with a timezone'
)

function literalValue(ast: ValueNode, variables?: Record<string, unknown> | null): unknown {
  switch (ast.kind) {
    case Kind.STRING:
    case Kind.ENUM:
      return ast.value
    case Kind.BOOLEAN:
      return ast.value
    case Kind.INT:
    case Kind.FLOAT:
      return Number(ast.value)
    case Kind.NULL:
      return null
    case Kind.LIST:
      return ast.values.map((v) => literalValue(v, variables))
    case Kind.OBJECT:
      return Object.fromEntries(ast.fields.map((f) => [f.name.value, literalValue(f.value, variables)]))
    case Kind.VARIABLE:
      return variables?.[ast.name.value]
  }
}

const jsonScalar = new GraphQLScalarType({
  name: 'JSON',
  description: 'Any JSON value, as the REST API carries it.',
  serialize: (v) => v,
  parseValue: (v) => v,
  parseLiteral: literalValue
})

/** The operator input of a filter on values of `type` (one per type and operator set). */
const operatorDocs: Record<Operator, string> = {
  eq: 'Equal to',
  ne: 'Not equal to',
  in: 'One of',
  gt: 'Greater than',
  gte: 'At least',
  lt: 'Less than',
  lte: 'At most'
}

/** A payload filter as the records service takes it (`payload[field][op]=value`): values as strings, an `in` list as a list (its values may hold commas). */
function filterToQuery(
  filter: Record<string, Record<string, unknown> | null> | undefined
): Record<string, Record<string, string | string[]>> | undefined {
  if (!filter) return undefined
  const out: Record<string, Record<string, string | string[]>> = {}
  for (const [field, ops] of Object.entries(filter)) {
    if (!ops) continue
    for (const [op, value] of Object.entries(ops)) {
      if (value === null || value === undefined) continue
      ;(out[field] ??= {})[op] = Array.isArray(value) ? value.map(String) : String(value)
    }
  }
  return Object.keys(out).length ? out : undefined
}

const expected = (version: number | null | undefined) =>
  version === null || version === undefined ? undefined : `"${version}"`

/**
 * The GraphQL schema of what one caller sees of its tenant: a record type per module it
 * sees, with typed payload fields (graphql.derive.ts) less the fields hidden from it; a
 * query for one record and a paged list per module with typed filters; the module
 * catalogue, `me`, exports; mutations to create, update, transition and delete records,
 * start an export and ask for an attachment upload URL. Every resolver calls the same
 * services as REST (`provider: 'graphql'`), so their hooks and rules apply unchanged.
 */
export function buildSchema(platform: Platform, principal: Principal, modules: RegisteredModule[]): GraphQLSchema {
  const sc = new SchemaComposer<GraphQLContext>()
  const { defaultLimit, maxLimit } = platform.config.pagination
  sc.add(dateScalar)
  sc.add(dateTimeScalar)
  sc.add(jsonScalar)

  sc.createObjectTC({
    name: 'ActorToken',
    description: 'The token a change came through.',
    fields: {
      type: { type: 'String!', description: 'api-key, personal or service-account' },
      id: 'String!',
      name: 'String!'
    }
  })
  sc.createObjectTC({
    name: 'ActorPerson',
    description: 'The person a service account or API key acts for: its creator, or the person behind its creator.',
    fields: { userId: 'ID!', name: 'String!' }
  })
  sc.createObjectTC({
    name: 'Actor',
    description: 'Who made a change: an API key, a user, a service account or the system.',
    fields: {
      type: 'String!',
      id: 'String!',
      name: 'String!',
      token: {
        type: 'ActorToken',
        description: 'The token the change came through (null for a session or the system)'
      },
      onBehalfOf: {
        type: 'ActorPerson',
        description: 'The person behind a service account or API key, if one is recorded'
      }
    }
  })
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
  sc.createObjectTC({
    name: 'SignedRequest',
    description: 'A short-lived signed URL and the headers to send with it exactly as given.',
    fields: { method: 'String!', url: 'String!', headers: 'JSON!', expiresAt: 'DateTime!' }
  })
  sc.createObjectTC({
    name: 'Attachment',
    fields: {
      id: 'ID!',
      fileName: 'String!',
      contentType: 'String!',
      size: 'Float!',
      sha256: 'String',
      uploadedBy: 'Actor!',
      uploadedAt: 'DateTime!',
      download: {
        type: 'SignedRequest!',
        description: 'A short-lived download URL (one `GET /api/v1/attachments/{id}` each: counted like it).',
        ...lookup,
        resolve: (async (a: { id: string }, _args, ctx) =>
          (await ctx.app.service(attachmentsPath).get(a.id, callParams(ctx))).download) as Resolver
      }
    }
  })
  sc.createObjectTC({
    name: 'AvailableTransition',
    fields: { key: 'String!', label: 'String!', to: 'String!', missingFields: '[String!]!' }
  })
  sc.createObjectTC({
    name: 'PageInfo',
    description: 'Pages go forward only: `endCursor` is the `after` of the next page.',
    fields: { hasNextPage: 'Boolean!', hasPreviousPage: 'Boolean!', startCursor: 'String', endCursor: 'String' }
  })

  // A record loaded without what the selection asks (a mutation's result is complete; a reference batch asks for what it needs) fetches it once.
  // Activity and attachments grow with the record, so the cost walk cannot know their length (it counts one item):
  // each entry is charged on the request's budget as it is handed out, before the fields under it resolve.
  const complete =
    (field: 'activity' | 'attachments' | 'availableTransitions'): Resolver =>
    async (r: RecordOut, _a, ctx) => {
      const list =
        r[field] ??
        (await ctx.loaders.record(r.moduleKey, ['activity', 'attachments', 'transitions']).load(r.id))?.[field] ??
        []
      charge(list.length, `graphql ${field}`)
      return list
    }
  const envelope: ObjectTypeComposerFieldConfigMapDefinition<RecordOut, GraphQLContext> = {
    id: 'ID!',
    moduleKey: 'String!',
    moduleVersion: 'String!',
    number: { type: 'String!', description: 'From the module pattern, e.g. INC-2026-00042' },
    state: { type: 'String!', description: 'Current workflow state' },
    version: {
      type: 'Int!',
      description:
        'Increments on every change; pass it as `expectedVersion` to change the record only if nobody else has'
    },
    externalRef: 'String',
    createdAt: 'DateTime!',
    updatedAt: 'DateTime!',
    createdBy: 'Actor!',
    updatedBy: 'Actor!',
    deletedAt: 'DateTime',
    deletedBy: 'Actor',
    activity: { type: '[ActivityEntry!]!', resolve: complete('activity') },
    attachments: { type: '[Attachment!]!', resolve: complete('attachments') },
    availableTransitions: {
      type: '[AvailableTransition!]!',
      description: "Transitions the caller's roles may fire now, with the fields each still needs",
      resolve: complete('availableTransitions')
    }
  }
  const recordInterface = sc.createInterfaceTC({
    name: 'Record',
    description: 'A record of any module.',
    fields: envelope
  })

  const typeOfModule = new Map(modules.map((m) => [m.definition.key, pascal(m.definition.key)]))
  const filterTypes = new Set<string>()
  const filterType = (scalarName: string, operators: readonly Operator[]) => {
    const name = `${scalarName}Filter`
    if (!filterTypes.has(name)) {
      filterTypes.add(name)
      sc.createInputTC({
        name,
        description: `Conditions on a ${scalarName} field; all given must hold.`,
        fields: Object.fromEntries(
          operators.map((op) => [
            op,
            { type: op === 'in' ? `[${scalarName}!]` : scalarName, description: operatorDocs[op] }
          ])
        )
      })
    }
    return name
  }

  const rootFields = moduleFieldNames(modules.map((m) => m.definition.key))
  const queryFields: ObjectTypeComposerFieldConfigMapDefinition<unknown, GraphQLContext> = {}
  const mutationFields: ObjectTypeComposerFieldConfigMapDefinition<unknown, GraphQLContext> = {}

  for (const m of modules) {
    const d = m.definition
    const T = typeOfModule.get(d.key)!
    const hidden = hiddenFields(principal, m)
    const visible = d.fields.filter((f) => !hidden.has(f.key))

    const types: DeriveTypes = {
      choiceEnum: (f) =>
        enumOf(
          `${T}${pascal(f.key)}`,
          f.options.map((o) => (typeof o === 'string' ? { value: o } : o)),
          f.label ?? f.key
        ),
      group: (f) => groupOf(`${T}${pascal(f.key)}Item`, f),
      recordType: (key) => typeOfModule.get(key)
    }
    const enumOf = (name: string, options: Array<{ value: string; label?: string }>, what: string) => {
      if (!sc.has(name)) {
        const names = enumNames(options.map((o) => o.value))
        sc.createEnumTC({
          name,
          description: `Values of ${what}.`,
          values: Object.fromEntries(options.map((o, i) => [names[i], { value: o.value, description: o.label }]))
        })
      }
      return name
    }
    const groupOf = (name: string, g: Extract<FieldDefinition, { type: 'group' }>) => {
      if (!sc.has(name)) {
        const nested: DeriveTypes = {
          ...types,
          choiceEnum: (f) =>
            enumOf(
              `${name}${pascal(f.key)}`,
              f.options.map((o) => (typeof o === 'string' ? { value: o } : o)),
              f.label ?? f.key
            ),
          group: (f) => groupOf(`${name}${pascal(f.key)}`, f)
        }
        sc.createObjectTC({
          name,
          description: `An item of ${g.label ?? g.key}.`,
          fields: payloadFields(g.fields, nested)
        })
        sc.createInputTC({
          name: `${name}Input`,
          description: `An item of ${g.label ?? g.key}.`,
          fields: inputFields(g.fields, nested, 'create')
        })
      }
      return { output: name, input: `${name}Input` }
    }
    const payloadFields = (fields: readonly FieldDefinition[], t: DeriveTypes) => {
      const out: ObjectTypeComposerFieldConfigMapDefinition<Record<string, unknown>, GraphQLContext> = {}
      for (const f of fields) {
        const g = graphQLTypesOf(f, t)
        const description = [f.label, f.description].filter(Boolean).join(': ') || undefined
        let resolve: Resolver | undefined
        if (g.resolve === 'user') resolve = (p) => (typeof p[f.key] === 'string' ? { id: p[f.key] } : null)
        if (g.resolve === 'record' && f.type === 'recordRef') {
          const target = typeOfModule.has(f.module) ? f.module : undefined
          resolve = (p, _a, ctx, info) => {
            const id = p[f.key]
            if (typeof id !== 'string') return null
            return target ? ctx.loaders.record(target, recordIncludes(info, info.fieldNodes)).load(id) : { id }
          }
          // The raw id stays readable (a reference the caller may not see resolves to null).
          if (!fields.some((o) => o.key === `${f.key}Id`))
            out[`${f.key}Id`] = {
              type: 'ID',
              description: `The id in ${f.key}, whether or not the caller may see that record`,
              resolve: (p: Record<string, unknown>) => p[f.key] ?? null
            }
        }
        out[f.key] = { type: g.output, description, ...(resolve ? { resolve } : {}) }
      }
      return out
    }
    const inputFields = (fields: readonly FieldDefinition[], t: DeriveTypes, mode: 'create' | 'patch') => {
      const out: InputTypeComposerFieldConfigMapDefinition = {}
      for (const f of fields) {
        const g = graphQLTypesOf(f, t)
        out[f.key] = {
          type: mode === 'create' && f.required ? `${g.input}!` : g.input,
          description: [f.label, f.description].filter(Boolean).join(': ') || undefined
        }
      }
      return out
    }

    const payloadType = sc.createObjectTC({
      name: `${T}Payload`,
      description: `The fields of ${article(d.title)} record this caller may read.`,
      fields: payloadFields(visible, types)
    })
    if (!visible.length)
      payloadType.addFields({
        _empty: { type: 'Boolean', description: 'This caller may read no field of the module.', resolve: () => null }
      })
    const inputVisible = visible.length ? visible : []
    sc.createInputTC({
      name: `${T}PayloadInput`,
      description: `A new ${d.title}'s payload.`,
      fields: inputVisible.length ? inputFields(inputVisible, types, 'create') : { _empty: 'Boolean' }
    })
    sc.createInputTC({
      name: `${T}PayloadPatch`,
      description: `Changes to ${article(d.title)}'s payload (merge semantics: fields given replace, null removes, a group is replaced whole).`,
      fields: inputVisible.length ? inputFields(inputVisible, types, 'patch') : { _empty: 'Boolean' }
    })
    enumOf(
      `${T}State`,
      d.workflow.states.map((s) => ({ value: s.key, label: s.label })),
      `${d.title} workflow states`
    )
    enumOf(
      `${T}Transition`,
      d.workflow.transitions.map((s) => ({ value: s.key, label: s.label })),
      `${d.title} workflow transitions`
    )

    const filterable = visible.filter((f) => fieldToFilter[f.type] && graphQLTypesOf(f, types).filter)
    if (filterable.length) {
      sc.createInputTC({
        name: `${T}Filter`,
        description: `Conditions on ${d.title} payload fields, as REST's payload[field][op]=value; all must hold.`,
        fields: Object.fromEntries(
          filterable.map((f) => [f.key, filterType(graphQLTypesOf(f, types).filter!, fieldToFilter[f.type]!.operators)])
        )
      })
    }

    const recordType = sc.createObjectTC({
      name: T,
      description: d.description ? `${d.title}: ${d.description}` : d.title,
      interfaces: [recordInterface],
      fields: { ...envelope, payload: { type: `${T}Payload!`, resolve: (r: RecordOut) => r.payload } }
    })
    recordInterface.addTypeResolver(recordType, (r: RecordOut) => r.moduleKey === d.key)
    sc.createObjectTC({
      name: `${T}Edge`,
      fields: {
        cursor: { type: 'String!', description: 'The `after` of the page that starts after this record' },
        node: `${T}!`
      }
    })
    sc.createObjectTC({
      name: `${T}Connection`,
      fields: { edges: `[${T}Edge!]!`, nodes: `[${T}!]!`, pageInfo: 'PageInfo!' }
    })

    const { one, many } = rootFields.get(d.key)!
    const only = { moduleKey: d.key }
    queryFields[one] = {
      type: T,
      description: `One ${d.title} by id (the same as GET /api/v1/records/{id}).`,
      ...lookup,
      args: { id: 'ID!' },
      resolve: ((_s, { id }, ctx) => ctx.app.service(recordsPath).get(id, callParams(ctx, only))) as Resolver
    }
    queryFields[many] = {
      type: `${T}Connection!`,
      description: `${d.title} records, oldest first (or by last change with updatedSince), a page at a time (the same as GET /api/v1/records?moduleKey=${d.key}).`,
      ...lookup,
      args: {
        first: { type: 'Int', description: `Page size, 1-${maxLimit} (default ${defaultLimit})` },
        after: { type: 'String', description: "The previous page's pageInfo.endCursor" },
        state: `[${T}State!]`,
        ...(filterable.length ? { filter: `${T}Filter` } : {}),
        updatedSince: {
          type: 'DateTime',
          description: 'Only records changed at or after this instant, oldest change first'
        },
        includeDeleted: { type: 'Boolean', description: 'Also soft-deleted records (with deletedAt)' },
        externalRef: 'String',
        number: 'String'
      },
      resolve: (async (_s, args, ctx, info) => {
        const { include, cursors } = connectionSelection(info)
        const query = {
          moduleKey: d.key,
          ...(args.first !== undefined && args.first !== null ? { limit: args.first } : {}),
          ...(args.after ? { cursor: args.after } : {}),
          ...(args.state?.length ? { state: args.state.join(',') } : {}),
          ...(args.filter ? { payload: filterToQuery(args.filter) } : {}),
          ...(args.updatedSince ? { updatedSince: args.updatedSince } : {}),
          ...(args.includeDeleted ? { includeDeleted: true } : {}),
          ...(args.externalRef !== undefined && args.externalRef !== null ? { externalRef: args.externalRef } : {}),
          ...(args.number !== undefined && args.number !== null ? { number: args.number } : {})
        }
        if (query.payload === undefined) delete query.payload
        const page = await ctx.app
          .service(recordsPath)
          .find({ ...callParams(ctx), query, include, itemCursors: cursors })
        return {
          nodes: page.items,
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
    mutationFields[`create${T}`] = {
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
    mutationFields[`update${T}`] = {
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
    mutationFields[`transition${T}`] = {
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

  queryFields.record = {
    type: 'Record',
    description: 'One record of any module by id (GET /api/v1/records/{id}).',
    ...lookup,
    args: { id: 'ID!' },
    resolve: ((_s, { id }, ctx) => ctx.app.service(recordsPath).get(id, callParams(ctx))) as Resolver
  }
  sc.createObjectTC({
    name: 'ModuleSummary',
    fields: {
      key: 'String!',
      version: 'String!',
      title: 'String!',
      description: 'String',
      numberPattern: 'String!',
      states: '[String!]!'
    }
  })
  sc.createObjectTC({
    name: 'ModuleSchema',
    fields: {
      key: 'String!',
      version: 'String!',
      title: 'String!',
      description: 'String',
      numberPattern: 'String!',
      states: '[String!]!',
      fields: { type: 'JSON!', description: 'Field definitions, with `filterable`' },
      schema: { type: 'JSON!', description: 'JSON Schema of the payload' },
      workflow: 'JSON!',
      permissions: 'JSON!',
      rowAccess: 'JSON!',
      summaryColumns: '[String!]!'
    }
  })
  queryFields.modules = {
    type: '[ModuleSummary!]!',
    ...lookup,
    description: 'The modules this caller sees (GET /api/v1/modules).',
    resolve: (async (_s, _a, ctx) => (await ctx.app.service(modulesPath).find(callParams(ctx))).items) as Resolver
  }
  queryFields.module = {
    type: 'ModuleSchema!',
    ...lookup,
    description: "One module's schema (GET /api/v1/modules/{key}).",
    args: { key: 'String!' },
    resolve: ((_s, { key }, ctx) => ctx.app.service(modulesPath).get(key, callParams(ctx))) as Resolver
  }
  sc.createObjectTC({
    name: 'Me',
    fields: {
      tenantId: 'String!',
      tenantName: 'String!',
      credential: sc.createObjectTC({ name: 'Credential', fields: { id: 'String!', type: 'String!' } }),
      actor: 'Actor!',
      userId: 'ID',
      roles: { type: 'JSON!', description: 'Role names, or "all" for a tenant API key' },
      scopes: {
        type: 'JSON!',
        description: 'Scope names, or "all" for a token without scopes (limited by its roles alone)'
      },
      modules: { type: 'JSON!', description: 'Module key → the actions the roles grant' },
      rateLimit: sc.createObjectTC({ name: 'RateLimit', fields: { requestsPerMinute: 'Int!' } })
    }
  })
  queryFields.me = {
    type: 'Me!',
    ...lookup,
    description: 'Who the caller is and what it may do (GET /api/v1/me).',
    resolve: ((_s, _a, ctx) => ctx.app.service(mePath).find(callParams(ctx))) as Resolver
  }

  sc.createEnumTC({
    name: 'ExportFormat',
    values: Object.fromEntries(exportFormats.map((f) => [f.toUpperCase(), { value: f }]))
  })
  sc.createEnumTC({
    name: 'ExportValues',
    values: {
      KEYS: { value: 'keys', description: 'States and choices by key' },
      LABELS: { value: 'labels', description: 'By label, users by name' }
    }
  })
  sc.createObjectTC({
    name: 'Export',
    fields: {
      id: 'ID!',
      moduleKey: 'String!',
      format: 'ExportFormat!',
      status: { type: 'String!', description: 'queued, running, succeeded or failed' },
      filters: 'JSON',
      columns: '[String!]',
      values: 'ExportValues!',
      progress: sc.createObjectTC({ name: 'ExportProgress', fields: { rowsDone: 'Int!', rowsTotal: 'Int' } }),
      queuePosition: 'Int',
      attempts: 'Int!',
      createdAt: 'DateTime!',
      startedAt: 'DateTime',
      finishedAt: 'DateTime',
      expiresAt: 'DateTime',
      file: sc.createObjectTC({
        name: 'ExportFile',
        fields: { name: 'String!', contentType: 'String!', size: 'Float!' }
      }),
      download: 'SignedRequest',
      problem: 'JSON'
    }
  })
  sc.createInputTC({
    name: 'ExportInput',
    fields: {
      moduleKey: 'String!',
      format: 'ExportFormat!',
      filters: {
        type: 'JSON',
        description: 'As in POST /api/v1/exports: state, updatedSince, externalRef, includeDeleted, payload'
      },
      columns: '[String!]',
      csvBom: 'Boolean',
      values: 'ExportValues'
    }
  })
  queryFields.export = {
    type: 'Export',
    ...lookup,
    description: 'An export job and, once it succeeded, its download URL (GET /api/v1/exports/{id}).',
    args: { id: 'ID!' },
    resolve: ((_s, { id }, ctx) => ctx.app.service(exportsPath).get(id, callParams(ctx))) as Resolver
  }
  mutationFields.startExport = {
    type: 'Export',
    ...lookup,
    description: 'Starts an export job (POST /api/v1/exports); poll `export(id)` for its download.',
    args: { input: 'ExportInput!' },
    resolve: ((_s, { input }, ctx) =>
      ctx.app
        .service(exportsPath)
        .create(withoutNulls(input), callParams(ctx, { idempotencyKey: ctx.idempotencyKey }))) as Resolver
  }
  sc.createObjectTC({ name: 'HttpCall', fields: { method: 'String!', url: 'String!' } })
  sc.createObjectTC({
    name: 'AttachmentUpload',
    description: 'A pending attachment: PUT the file to `upload`, then call `complete`.',
    fields: {
      id: 'ID!',
      recordId: 'ID!',
      state: 'String!',
      fileName: 'String!',
      contentType: 'String!',
      size: 'Float!',
      sha256: 'String',
      createdAt: 'DateTime!',
      upload: 'SignedRequest!',
      complete: 'HttpCall!'
    }
  })
  sc.createInputTC({
    name: 'AttachmentUploadInput',
    fields: { recordId: 'ID!', fileName: 'String!', contentType: 'String!', size: 'Float!', sha256: 'String' }
  })
  mutationFields.requestAttachmentUpload = {
    type: 'AttachmentUpload',
    ...lookup,
    description: 'Declares a file of a record and returns its signed upload URL (POST /api/v1/attachments).',
    args: { input: 'AttachmentUploadInput!' },
    resolve: ((_s, { input }, ctx) =>
      ctx.app
        .service(attachmentsPath)
        .create(withoutNulls(input), callParams(ctx, { idempotencyKey: ctx.idempotencyKey }))) as Resolver
  }
  mutationFields.deleteRecord = {
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

  sc.Query.addFields(queryFields)
  // Mutation fields are nullable: mutations run one after another, and one that fails is null with its error while
  // those that committed before and after keep their results (a non-null one would null all of `data`).
  sc.Mutation.addFields(mutationFields)
  return sc.buildSchema({ keepUnusedTypes: true })
}

/** GraphQL input objects carry explicit nulls for omitted optional fields only when sent; REST bodies have no nulls there. */
function withoutNulls<T extends Record<string, unknown>>(input: T): T {
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== null && v !== undefined)) as T
}
