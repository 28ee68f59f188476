import { Type, type Static, type TProperties, type TSchema } from '@feathersjs/typebox'
import { closestName } from '../validation.ts'
import type { FieldType } from './types.ts'

/**
 * The shape of a module definition as a JSON Schema (TypeBox): every object closed
 * (`additionalProperties: false`), each field type a branch of its own. It is what the
 * registry walks for unknown keys at load (`unknownKey`), what `npm run schemas` writes to
 * `packages/module-sdk/module-definition.schema.json` for editors, and a test holds it equal, both ways,
 * to the TypeScript types of `types.ts` that `defineModule` checks at compile time. The rules
 * between members (a transition's states exist, a role is declared…) stay in `validate.ts`.
 */
const closed = { additionalProperties: false } as const
const roleList = Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })
const fieldKey = Type.String({ pattern: '^[a-z][a-zA-Z0-9]*$', description: 'camelCase key of the payload member.' })
/** A module key, role or state: a lower-case slug (`incident`, `corrective-action`). */
export const slugPattern = '^[a-z][a-z0-9-]*$'
const slug = Type.String({ pattern: slugPattern })
const choiceOption = Type.Union([
  Type.String({ minLength: 1 }),
  Type.Object({ value: Type.String({ minLength: 1 }), label: Type.Optional(Type.String()) }, closed)
])

const fieldBase = {
  key: fieldKey,
  label: Type.Optional(Type.String({ description: 'Shown in forms, exports and documents; the key when absent.' })),
  description: Type.Optional(Type.String()),
  required: Type.Optional(Type.Boolean({ description: 'A create must give the field a value.' })),
  access: Type.Optional(
    Type.Object(
      {
        read: roleList,
        write: Type.Optional(roleList)
      },
      { ...closed, description: 'Only these roles read (and write; write defaults to read) the field.' }
    )
  )
}

const bounds = { minimum: Type.Optional(Type.Number()), maximum: Type.Optional(Type.Number()) }
const itemBounds = { minItems: Type.Optional(Type.Integer({ minimum: 0 })), maxItems: Type.Optional(Type.Integer()) }

const field = <T extends FieldType, M extends TProperties>(type: T, members: M) =>
  Type.Object({ ...fieldBase, type: Type.Literal(type), ...members }, closed)

/** How lists find records by a field (docs/modules.md, "Finding records"); the defaults by type are core/modules/derive/filters.ts's. */
const filterable = {
  filterable: Type.Optional(
    Type.Boolean({
      description:
        'Lists may filter on the field (the default for types that filter); true also keeps an index for it (the default for choices, users, references and dates), false refuses its filters.'
    })
  )
}
const sortable = {
  sortable: Type.Optional(
    Type.Boolean({
      description: 'Lists may sort by the field, indexed (default: dates and date-times; top level only).'
    })
  )
}
const searchable = {
  searchable: Type.Optional(
    Type.Boolean({
      description:
        'Text search (q) looks in the field (default: text fields without an access rule; top level only, never with an access rule).'
    })
  )
}

/** A value computed from the record's other fields (docs/modules.md, "Computed fields"); core/modules/field-rules.ts checks it. */
const computed = {
  computed: Type.Optional(
    Type.String({
      description:
        "An expression of the field's type over the record's other fields, computed by the platform on every write; read-only to clients."
    })
  )
}
/** The value a create gives the field when the client sends none. */
const defaultText = 'The value a create gives the field when the client sends none.'
const defaultOf = <T extends TSchema>(value: T) => ({ default: Type.Optional(value) })

/** Each field type's schema: the common members and its own. One row per type, as every derivation table has. */
const fieldsByType = {
  text: field('text', {
    maxLength: Type.Optional(Type.Integer({ minimum: 1 })),
    pattern: Type.Optional(Type.String()),
    ...filterable,
    ...sortable,
    ...searchable,
    ...computed,
    ...defaultOf(Type.String({ description: defaultText }))
  }),
  longText: field('longText', {
    maxLength: Type.Optional(Type.Integer({ minimum: 1 })),
    ...searchable,
    ...defaultOf(Type.String({ description: defaultText }))
  }),
  number: field('number', {
    ...bounds,
    ...filterable,
    ...sortable,
    ...computed,
    ...defaultOf(Type.Number({ description: defaultText }))
  }),
  integer: field('integer', {
    ...bounds,
    ...filterable,
    ...sortable,
    ...computed,
    ...defaultOf(Type.Number({ description: defaultText }))
  }),
  boolean: field('boolean', { ...filterable, ...computed, ...defaultOf(Type.Boolean({ description: defaultText })) }),
  date: field('date', {
    ...filterable,
    ...sortable,
    ...computed,
    ...defaultOf(
      Type.String({ description: `${defaultText} A date 'YYYY-MM-DD', or 'today()': the day of the create (UTC).` })
    )
  }),
  datetime: field('datetime', { ...filterable, ...sortable, ...defaultOf(Type.String({ description: defaultText })) }),
  singleChoice: field('singleChoice', {
    options: Type.Array(choiceOption, { minItems: 1 }),
    ...filterable,
    ...sortable,
    ...computed,
    ...defaultOf(Type.String({ description: defaultText }))
  }),
  multipleChoice: field('multipleChoice', {
    options: Type.Array(choiceOption, { minItems: 1 }),
    ...itemBounds,
    ...filterable,
    ...defaultOf(Type.Array(Type.String(), { description: defaultText }))
  }),
  user: field('user', filterable),
  recordRef: field('recordRef', { module: slug, ...filterable }),
  location: field('location', {})
} satisfies { [T in Exclude<FieldType, 'group'>]: TSchema }

/** A field inside a group: any type but a group (groups do not nest). */
const innerField = Type.Union([
  fieldsByType.text,
  fieldsByType.longText,
  fieldsByType.number,
  fieldsByType.integer,
  fieldsByType.boolean,
  fieldsByType.date,
  fieldsByType.datetime,
  fieldsByType.singleChoice,
  fieldsByType.multipleChoice,
  fieldsByType.user,
  fieldsByType.recordRef,
  fieldsByType.location
])
const groupField = field('group', { fields: Type.Array(innerField, { minItems: 1 }), ...itemBounds })
const fieldSchema = Type.Union([...innerField.anyOf, groupField])

const names = Type.Array(Type.String())

export const moduleDefinitionSchema = Type.Object(
  {
    key: Type.String({
      pattern: slugPattern,
      description: 'Lower-case slug naming the module, e.g. incident.'
    }),
    version: Type.String({ description: 'Semantic version of the definition, e.g. 1.0.0.' }),
    title: Type.String({ minLength: 1 }),
    description: Type.Optional(Type.String()),
    fields: Type.Array(fieldSchema, { minItems: 1 }),
    workflow: Type.Object(
      {
        initial: Type.String({ description: 'The state a new record starts in.' }),
        states: Type.Array(
          Type.Object(
            {
              key: slug,
              label: Type.Optional(Type.String()),
              requires: Type.Optional(names),
              final: Type.Optional(Type.Boolean()),
              locks: Type.Optional(
                Type.Array(Type.String(), {
                  description:
                    "Top-level fields a client may not change in this state (['*']: the whole payload); a transition to a state that does not lock them may."
                })
              )
            },
            closed
          ),
          { minItems: 1 }
        ),
        transitions: Type.Array(
          Type.Object(
            {
              key: slug,
              label: Type.Optional(Type.String()),
              from: Type.Array(Type.String(), { minItems: 1 }),
              to: Type.String(),
              roles: Type.Optional(names),
              requires: Type.Optional(names),
              forbidSelf: Type.Optional(
                Type.Boolean({ description: "The record's creator may not fire it (four-eyes)." })
              ),
              separateFrom: Type.Optional(
                Type.Object(
                  {
                    creator: Type.Optional(Type.Boolean({ description: "Not the record's creator (as forbidSelf)." })),
                    fields: Type.Optional(
                      Type.Array(Type.String(), {
                        description:
                          'Top-level user fields: not a person they name, before or after the transition sets its own fields.'
                      })
                    ),
                    transitions: Type.Optional(
                      Type.Array(Type.String(), {
                        description: 'Transitions: not a person who fired one of them on this record before.'
                      })
                    )
                  },
                  { ...closed, description: 'Separation of duties: whom the actor must differ from.' }
                )
              ),
              auto: Type.Optional(
                Type.Object(
                  { after: Type.String({ description: 'A top-level date or date-time field.' }) },
                  {
                    ...closed,
                    description:
                      'The platform fires the transition by itself once this field of a record in a from state has passed.'
                  }
                )
              )
            },
            closed
          )
        )
      },
      closed
    ),
    permissions: Type.Record(Type.String(), names, {
      description:
        'Role -> actions: read, create, update, delete, export, attachments, transition:<key> or transition:*.'
    }),
    rowAccess: Type.Optional(
      Type.Record(
        Type.String(),
        Type.Array(
          Type.Union([
            Type.Object({ createdBy: Type.Literal('self') }, closed),
            Type.Object({ field: Type.String(), equals: Type.Literal('self') }, closed)
          ])
        ),
        { description: 'Role -> conditions, any of which lets that role see a record.' }
      )
    ),
    numberPattern: Type.String({ description: 'e.g. INC-{YYYY}-{seq:5}; tokens {YYYY} {YY} {MM} {DD} {seq:N}.' }),
    summaryColumns: Type.Optional(Type.Array(Type.String(), { maxItems: 8 })),
    rules: Type.Optional(
      Type.Array(
        Type.Object(
          {
            check: Type.String({ description: 'A boolean expression the record must satisfy; no value passes.' }),
            message: Type.String({ minLength: 1, description: 'Said of each field of `fields` when the check fails.' }),
            fields: Type.Optional(Type.Array(Type.String(), { description: 'Default: the fields the check reads.' })),
            on: Type.Optional(
              Type.Object(
                { states: Type.Optional(names), transitions: Type.Optional(names) },
                {
                  ...closed,
                  description:
                    'Only on writes entering these states or firing these transitions; absent: on creates and on changes of a field the check reads.'
                }
              )
            )
          },
          closed
        ),
        { description: 'Rules between fields, checked on writes (docs/modules.md, "Rules").' }
      )
    ),
    due: Type.Optional(
      Type.Object(
        { field: Type.String(), until: Type.Optional(names) },
        {
          ...closed,
          description:
            "The record's due date: a top-level date or date-time field, and the states in which it no longer counts (default: the final ones)."
        }
      )
    ),
    recurrence: Type.Optional(
      Type.Object(
        {
          every: Type.Union([
            Type.Literal('day'),
            Type.Literal('week'),
            Type.Literal('month'),
            Type.Literal('year'),
            Type.Object({ days: Type.Integer({ minimum: 1, maximum: 3660 }) }, closed)
          ]),
          per: Type.Optional(
            Type.String({
              description:
                'A top-level singleChoice field (a series per option) or recordRef field (a series per referenced record).'
            })
          ),
          payload: Type.Optional(Type.Record(Type.String(), Type.Unknown()))
        },
        { ...closed, description: 'Records the platform creates on a schedule, through the write path.' }
      )
    )
  },
  { ...closed, $id: 'https://qehs-records.example/schemas/module-definition.schema.json', title: 'Module definition' }
)

export type ModuleDefinitionShape = Static<typeof moduleDefinitionSchema>

/** A key the schema does not know, where it sits, and the known key it most likely meant. */
export interface UnknownKey {
  /** Where the key sits, e.g. `fields[3] (field "site")` or `workflow.transitions[1]`. */
  at: string
  key: string
  known: string[]
  meant?: string
}

type Schema = TSchema & {
  anyOf?: Schema[]
  properties?: Record<string, Schema>
  patternProperties?: Record<string, Schema>
  items?: Schema
  additionalProperties?: boolean | Schema
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The branch of a union a value takes: the object branch whose `type` literal it carries. Others are left to the checks. */
function branchOf(schema: Schema, value: unknown): Schema | undefined {
  if (!isRecord(value) || typeof value.type !== 'string') return undefined
  return schema.anyOf?.find((b) => (b.properties?.type as { const?: unknown } | undefined)?.const === value.type)
}

/** How a step into an array element is named: a field names its key beside its index. */
function elementPath(path: string, i: number, element: unknown): string {
  const key = isRecord(element) && typeof element.key === 'string' ? element.key : undefined
  return key !== undefined && /(^|\.)fields$/.test(path) ? `${path}[${i}] (field "${key}")` : `${path}[${i}]`
}

/** The first key, depth first, that a closed object of `schema` does not declare; undefined when there is none. */
export function unknownKey(
  value: unknown,
  schema: Schema = moduleDefinitionSchema,
  at = 'definition'
): UnknownKey | undefined {
  if (schema.anyOf) {
    const branch = branchOf(schema, value)
    return branch ? unknownKey(value, branch, at) : undefined
  }
  if (Array.isArray(value) && schema.items) {
    for (const [i, v] of value.entries()) {
      const found = unknownKey(v, schema.items, elementPath(at, i, v))
      if (found) return found
    }
    return undefined
  }
  if (!isRecord(value)) return undefined
  const inner = (key: string) => (at === 'definition' ? key : `${at}.${key}`)
  if (schema.properties) {
    const known = Object.keys(schema.properties)
    for (const [key, v] of Object.entries(value)) {
      const member = schema.properties[key]
      if (!member) {
        if (schema.additionalProperties !== false) continue
        return { at, key, known, meant: closestName(key, known) }
      }
      const found = unknownKey(v, member, inner(key))
      if (found) return found
    }
    return undefined
  }
  const values = schema.patternProperties ? Object.values(schema.patternProperties)[0] : undefined
  if (values) {
    for (const [key, v] of Object.entries(value)) {
      const found = unknownKey(v, values, inner(key))
      if (found) return found
    }
  }
  return undefined
}
