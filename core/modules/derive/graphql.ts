import type { FieldDefinition, FieldType } from '../types.ts'

type Of<T extends FieldType> = Extract<FieldDefinition, { type: T }>

/** What the schema builder (plugins/records/records.graphql-payload.ts) offers a row of the table below: named types it creates once per schema. */
export interface DeriveTypes {
  /** An enum of the field's options (created once, reused by output, input and filter). */
  choiceEnum(f: Of<'singleChoice'> | Of<'multipleChoice'>): string
  /** The object and input types of a group's subfields (created once). */
  group(f: Of<'group'>): { output: string; input: string }
  /** The record type of the referenced module, when the caller sees that module. */
  recordType(moduleKey: string): string | undefined
}

/** One field's GraphQL types: its output, its input on create and update, and what filters on it take. */
export interface GraphQLFieldTypes {
  /** Output type name (nullable: a value may be absent); `List`s as `[T!]`. */
  output: string
  /** How a payload value becomes the output: a record reference and a user are looked up. */
  resolve?: 'record' | 'user'
  /** Input type on create and update (the value as the REST payload carries it; a group is replaced whole). */
  input: string
  /** Scalar or enum a filter operator compares against (a list's: its items'); null when the field cannot be filtered (see fieldToFilter). */
  filter: string | null
}

/** Whether a number's bounds fit GraphQL's Int (32 bits); otherwise it is a Float. */
export const int32 = (f: { minimum?: number; maximum?: number }) =>
  f.minimum !== undefined && f.maximum !== undefined && f.minimum >= -(2 ** 31) && f.maximum < 2 ** 31

/**
 * One row per field type: the GraphQL types of a payload field, beside `fieldToSchema`
 * (validation, OpenAPI) and `fieldToFilter` (list filters). A field type without a row
 * does not compile. Choices are enums (values keep their keys: `property-damage` is
 * `PROPERTY_DAMAGE`), groups nested object types, record references the referenced
 * module's record type, users a `User` with a name.
 */
export const fieldToGraphQL: { [T in FieldType]: (f: Of<T>, types: DeriveTypes) => GraphQLFieldTypes } = {
  text: () => ({ output: 'String', input: 'String', filter: 'String' }),
  longText: () => ({ output: 'String', input: 'String', filter: null }),
  number: () => ({ output: 'Float', input: 'Float', filter: 'Float' }),
  // GraphQL's Int is 32-bit: an integer field without bounds inside that range is a Float (holding whole numbers).
  integer: (f) =>
    int32(f) ? { output: 'Int', input: 'Int', filter: 'Int' } : { output: 'Float', input: 'Float', filter: 'Float' },
  boolean: () => ({ output: 'Boolean', input: 'Boolean', filter: 'Boolean' }),
  date: () => ({ output: 'Date', input: 'Date', filter: 'Date' }),
  datetime: () => ({ output: 'DateTime', input: 'DateTime', filter: 'DateTime' }),
  singleChoice: (f, t) => {
    const e = t.choiceEnum(f)
    return { output: e, input: e, filter: e }
  },
  multipleChoice: (f, t) => {
    const e = t.choiceEnum(f)
    return { output: `[${e}!]`, input: `[${e}!]`, filter: e }
  },
  user: () => ({ output: 'User', resolve: 'user', input: 'ID', filter: 'ID' }),
  recordRef: (f, t) => ({
    output: t.recordType(f.module) ?? 'RecordLink',
    resolve: 'record',
    input: 'ID',
    filter: 'ID'
  }),
  group: (f, t) => {
    const g = t.group(f)
    return { output: `[${g.output}!]`, input: `[${g.input}!]`, filter: null }
  },
  location: () => ({ output: 'Location', input: 'LocationInput', filter: null })
}

export function graphQLTypesOf(f: FieldDefinition, types: DeriveTypes): GraphQLFieldTypes {
  return (fieldToGraphQL[f.type] as (f: FieldDefinition, t: DeriveTypes) => GraphQLFieldTypes)(f, types)
}
