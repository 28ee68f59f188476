import { Type, type TSchema, type TObject } from '@feathersjs/typebox'
import type { FieldDefinition, FieldType, ModuleDefinition } from '../types.ts'

type Of<T extends FieldType> = Extract<FieldDefinition, { type: T }>
/** A choice field's option values. */
export const optionValues = (f: { options: ReadonlyArray<string | { value: string }> }) =>
  f.options.map((o) => (typeof o === 'string' ? o : o.value))
/**
 * What every field's schema says besides its type: title and description, and (core/modules/field-rules.ts) a computed
 * field as `readOnly` (sent back, refused when sent), a default as `default` (a date's `today()` in words). Validation
 * ignores both: the payload validated holds the computed values and the defaults.
 */
const meta = (f: FieldDefinition) => {
  const { computed, default: value } = f as { computed?: string; default?: unknown }
  const notes = [
    f.description,
    computed !== undefined &&
      `Computed by the platform: \`${computed}\`; read-only (a write that sends it is refused).`,
    value === 'today()' && f.type === 'date' && 'Default: the day of the create (UTC).'
  ].filter(Boolean)
  return {
    title: f.label ?? f.key,
    ...(notes.length ? { description: notes.join(' ') } : {}),
    ...(computed !== undefined ? { readOnly: true } : {}),
    ...(value !== undefined && !(value === 'today()' && f.type === 'date') ? { default: value } : {})
  }
}

/** One row per field type: the TypeBox (JSON Schema) of a payload value. */
export const fieldToSchema: { [T in FieldType]: (f: Of<T>) => TSchema } = {
  text: (f) => Type.String({ ...meta(f), maxLength: f.maxLength ?? 500, ...(f.pattern ? { pattern: f.pattern } : {}) }),
  longText: (f) => Type.String({ ...meta(f), maxLength: f.maxLength ?? 20000 }),
  number: (f) =>
    Type.Number({
      ...meta(f),
      ...(f.minimum !== undefined ? { minimum: f.minimum } : {}),
      ...(f.maximum !== undefined ? { maximum: f.maximum } : {})
    }),
  integer: (f) =>
    Type.Integer({
      ...meta(f),
      ...(f.minimum !== undefined ? { minimum: f.minimum } : {}),
      ...(f.maximum !== undefined ? { maximum: f.maximum } : {})
    }),
  boolean: (f) => Type.Boolean(meta(f)),
  date: (f) => Type.String({ ...meta(f), format: 'date' }),
  datetime: (f) => Type.String({ ...meta(f), format: 'date-time' }),
  singleChoice: (f) => Type.String({ ...meta(f), enum: optionValues(f) }),
  multipleChoice: (f) =>
    Type.Array(Type.String({ enum: optionValues(f) }), {
      ...meta(f),
      uniqueItems: true,
      ...(f.minItems !== undefined ? { minItems: f.minItems } : {}),
      maxItems: f.maxItems ?? optionValues(f).length
    }),
  user: (f) => Type.String({ ...meta(f), format: 'uuid', 'x-ref': 'user' }),
  recordRef: (f) => Type.String({ ...meta(f), format: 'uuid', 'x-ref': `record:${f.module}` }),
  group: (f) =>
    Type.Array(objectOf(f.fields), {
      ...meta(f),
      ...(f.minItems !== undefined ? { minItems: f.minItems } : {}),
      maxItems: f.maxItems ?? 500
    }),
  location: (f) =>
    Type.Object(
      {
        latitude: Type.Number({ minimum: -90, maximum: 90 }),
        longitude: Type.Number({ minimum: -180, maximum: 180 }),
        label: Type.Optional(Type.String({ maxLength: 200 })),
        accuracyMeters: Type.Optional(Type.Number({ minimum: 0 }))
      },
      { ...meta(f), additionalProperties: false }
    )
}

function fieldSchema(f: FieldDefinition): TSchema {
  return (fieldToSchema[f.type] as (f: FieldDefinition) => TSchema)(f)
}

function objectOf(fields: FieldDefinition[]): TObject {
  const props: Record<string, TSchema> = {}
  for (const f of fields) props[f.key] = f.required ? fieldSchema(f) : Type.Optional(fieldSchema(f))
  return Type.Object(props, { additionalProperties: false })
}

/** The JSON Schema of a module's record payload. */
export function payloadSchema(def: ModuleDefinition): TObject {
  return Type.Object(objectOf(def.fields).properties, {
    title: `${def.title} payload`,
    additionalProperties: false
  })
}
