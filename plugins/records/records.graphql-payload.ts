import type {
  InputTypeComposerFieldConfigMapDefinition,
  ObjectTypeComposerFieldConfigMapDefinition
} from 'graphql-compose'
import type { GraphQLContext, GraphQLSchemaBuild, Resolver } from '../../core/graphql/schema-part.ts'
import {
  fieldFinding,
  fieldToFilter,
  filterableMembers,
  isListOperator,
  operatorDocs,
  type Operator
} from '../../core/modules/derive/filters.ts'
import { graphQLTypesOf, type DeriveTypes } from '../../core/modules/derive/graphql.ts'
import { lockNote } from '../../core/modules/duties.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { FieldDefinition } from '../../core/modules/types.ts'
import { recordLoader, recordIncludes } from './records.graphql-selection.ts'

/** `Incident` → `an Incident`, `Corrective action` → `a Corrective action`. */
export const article = (title: string) => `${/^[aeiou]/i.test(title) ? 'an' : 'a'} ${title}`

/** The payload filter input of a scalar, made once per schema: one member per operator of its field type. */
function filterType(sc: GraphQLSchemaBuild['sc'], scalarName: string, operators: readonly Operator[]) {
  const name = `${scalarName}Filter`
  if (!sc.has(name)) {
    sc.createInputTC({
      name,
      description: `Conditions on a ${scalarName} field; all given must hold.`,
      fields: Object.fromEntries(
        operators.map((op) => [
          op,
          { type: isListOperator(op) ? `[${scalarName}!]` : scalarName, description: operatorDocs[op] }
        ])
      )
    })
  }
  return name
}

/**
 * A field's filter input: its type's operators on its scalar, or for a group, one such input per filterable member in
 * `<T><Group>ItemFilter` (REST's `payload[group.member]`: one item must meet all the conditions given). `nestedTypes`
 * names the member types as the group's item type did.
 */
function filterOf(
  sc: GraphQLSchemaBuild['sc'],
  f: FieldDefinition,
  t: DeriveTypes,
  nestedTypes: (item: string) => DeriveTypes
): string | undefined {
  const scalar = fieldFinding(f).filterable ? graphQLTypesOf(f, t).filter : null
  if (scalar) return filterType(sc, scalar, fieldToFilter[f.type]!.operators)
  if (f.type !== 'group' || !filterableMembers(f).length) return undefined
  const item = t.group(f).output
  const name = `${item}Filter`
  if (sc.has(name)) return name
  const nested = nestedTypes(item)
  const fields = filterableMembers(f).flatMap((m) => {
    const type = filterOf(sc, m, nested, nestedTypes)
    return type ? [[m.key, { type, description: m.label }] as const] : []
  })
  if (!fields.length) return undefined
  sc.createInputTC({
    name,
    description: `Conditions on the items of ${f.label ?? f.key}: a record matches when one item meets all of them.`,
    fields: Object.fromEntries(fields)
  })
  return name
}

/** A resolver that answers null for a stored value the field's GraphQL type cannot carry; undefined where any will do. */
function tolerantValue(f: FieldDefinition): Resolver | undefined {
  const fits: (v: unknown) => boolean =
    f.type === 'number'
      ? (v) => typeof v === 'number'
      : f.type === 'integer'
        ? (v) => Number.isInteger(v)
        : f.type === 'boolean'
          ? (v) => typeof v === 'boolean'
          : f.type === 'group'
            ? (v) => Array.isArray(v) && v.every((x) => typeof x === 'object' && x !== null && !Array.isArray(x))
            : f.type === 'location'
              ? (v) => typeof v === 'object' && v !== null && !Array.isArray(v)
              : (v) => typeof v !== 'object'
  return (p) => {
    const v = (p as Record<string, unknown>)[f.key]
    return v === undefined || v === null || !fits(v) ? null : v
  }
}

/**
 * One module's payload types as this caller sees them (`visible`: its fields less those
 * hidden from it): `<T>Payload` with typed fields (core/modules/derive/graphql.ts), its
 * create and patch inputs, the state and transition enums and, when a field can be
 * filtered, `<T>Filter`. Returns whether it has a filter.
 */
export function payloadTypes(
  build: GraphQLSchemaBuild,
  m: RegisteredModule,
  T: string,
  visible: readonly FieldDefinition[],
  typeOfModule: ReadonlyMap<string, string>
): { filterable: boolean } {
  const { sc, names } = build
  const d = m.definition
  // Records a migration could not move exist only for modules that declare migrations: only their fields pay for the
  // resolvers that keep such a record's stray values from failing it.
  const tolerant = m.migrations.length > 0
  const enumOf = (name: string, options: Array<{ value: string; label?: string }>, what: string) => {
    if (!sc.has(name)) {
      const values = names.enumNames(options.map((o) => o.value))
      sc.createEnumTC({
        name,
        description: `Values of ${what}.`,
        values: Object.fromEntries(options.map((o, i) => [values[i], { value: o.value, description: o.label }]))
      })
    }
    return name
  }
  const types: DeriveTypes = {
    choiceEnum: (f) =>
      enumOf(
        `${T}${names.pascal(f.key)}`,
        f.options.map((o) => (typeof o === 'string' ? { value: o } : o)),
        f.label ?? f.key
      ),
    group: (f) => groupOf(`${T}${names.pascal(f.key)}Item`, f),
    recordType: (key) => typeOfModule.get(key)
  }
  // The types of a group's members, named after its item type `name`.
  const nestedTypes = (name: string): DeriveTypes => ({
    ...types,
    choiceEnum: (f) =>
      enumOf(
        `${name}${names.pascal(f.key)}`,
        f.options.map((o) => (typeof o === 'string' ? { value: o } : o)),
        f.label ?? f.key
      ),
    group: (f) => groupOf(`${name}${names.pascal(f.key)}`, f)
  })
  const groupOf = (name: string, g: Extract<FieldDefinition, { type: 'group' }>) => {
    if (!sc.has(name)) {
      const nested = nestedTypes(name)
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
      const formula = (f as { computed?: string }).computed
      const description =
        [
          [f.label, f.description].filter(Boolean).join(': '),
          formula && `Computed by the platform: ${formula} (read-only).`
        ]
          .filter(Boolean)
          .join(' ') || undefined
      let resolve: Resolver | undefined
      if (g.resolve === 'user') resolve = (p) => (typeof p[f.key] === 'string' ? { id: p[f.key] } : null)
      // A stored value the module's options no longer have (a record its migration could not move) is left out: an
      // enum cannot carry it, and one such value must not fail the whole record (REST shows it as stored).
      if (tolerant && (f.type === 'singleChoice' || f.type === 'multipleChoice')) {
        const known = new Set(f.options.map((o) => (typeof o === 'string' ? o : o.value)))
        resolve = (p) => {
          const v = p[f.key]
          if (Array.isArray(v)) return v.filter((x) => known.has(x as string))
          return typeof v === 'string' && known.has(v) ? v : null
        }
      }
      if (g.resolve === 'record' && f.type === 'recordRef') {
        const target = typeOfModule.has(f.module) ? f.module : undefined
        resolve = (p, _a, ctx, info) => {
          const id = p[f.key]
          if (typeof id !== 'string') return null
          return target ? recordLoader(ctx, target, recordIncludes(info, info.fieldNodes)).load(id) : { id }
        }
        // The raw id stays readable (a reference the caller may not see resolves to null).
        if (!fields.some((o) => o.key === `${f.key}Id`))
          out[`${f.key}Id`] = {
            type: 'ID',
            description: `The id in ${f.key}, whether or not the caller may see that record`,
            resolve: (p: Record<string, unknown>) => p[f.key] ?? null
          }
      }
      // Likewise a stored value of another type (a field retyped by a release whose migration could not move the
      // record): null, not an error for the whole record.
      if (tolerant) resolve ??= tolerantValue(f)
      out[f.key] = { type: g.output, description, ...(resolve ? { resolve } : {}) }
    }
    return out
  }
  const inputFields = (fields: readonly FieldDefinition[], t: DeriveTypes, mode: 'create' | 'patch') => {
    const out: InputTypeComposerFieldConfigMapDefinition = {}
    for (const f of fields) {
      const g = graphQLTypesOf(f, t)
      // A patch's field says in which states it is locked (core/modules/duties.ts), as the OpenAPI document does.
      const locked = mode === 'patch' ? lockNote(d, f.key) : undefined
      out[f.key] = {
        type: mode === 'create' && f.required ? `${g.input}!` : g.input,
        description:
          [[f.label, f.description].filter(Boolean).join(': '), locked].filter(Boolean).join('. ') || undefined
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
  // Computed fields are the platform's to write (core/modules/field-rules.ts): outputs only, never inputs.
  const writable = visible.filter((f) => !m.fieldRules.computedKeys.has(f.key))
  sc.createInputTC({
    name: `${T}PayloadInput`,
    description: `A new ${d.title}'s payload.`,
    fields: writable.length ? inputFields(writable, types, 'create') : { _empty: 'Boolean' }
  })
  sc.createInputTC({
    name: `${T}PayloadPatch`,
    description: `Changes to ${article(d.title)}'s payload (merge semantics: fields given replace, null removes, a group is replaced whole).`,
    fields: writable.length ? inputFields(writable, types, 'patch') : { _empty: 'Boolean' }
  })
  enumOf(
    `${T}State`,
    d.workflow.states.map((s) => ({ value: s.key, label: s.label })),
    `${d.title} workflow states`
  )
  // A module without transitions (its records keep one state) has no transition enum: GraphQL refuses an empty one,
  // and the whole tenant's schema with it. Nor does it get a transition mutation (records.graphql.ts).
  if (d.workflow.transitions.length)
    enumOf(
      `${T}Transition`,
      d.workflow.transitions.map((s) => ({ value: s.key, label: s.label })),
      `${d.title} workflow transitions`
    )

  const filters = visible.flatMap((f) => {
    const type = filterOf(sc, f, types, nestedTypes)
    return type ? [[f.key, type] as const] : []
  })
  if (filters.length) {
    sc.createInputTC({
      name: `${T}Filter`,
      description: `Conditions on ${d.title} payload fields, as REST's payload[field][op]=value (a group's members: payload[group.member]); all must hold.`,
      fields: Object.fromEntries(filters)
    })
  }
  return { filterable: filters.length > 0 }
}
