import type { TSchema } from '@feathersjs/typebox'
import type {
  InputTypeComposerFieldConfigMapDefinition,
  ObjectTypeComposerFieldConfigMapDefinition,
  SchemaComposer
} from 'graphql-compose'
import type { GraphQLContext } from './schema-part.ts'
import { int32 } from '../modules/derive/graphql.ts'

/** How an output schema's properties become GraphQL fields (see `outputFields`), by property path (`progress.rowsTotal`). */
export interface OutputNaming {
  /** The GraphQL type of these properties, in place of the derived one: an enum, `JSON`, or a type the schema has. */
  types?: Record<string, string>
  /** The name of the object type made for these object properties. */
  objects?: Record<string, string>
  /** Properties GraphQL leaves out (REST's `links`). */
  omit?: readonly string[]
}

type Schema = TSchema & {
  anyOf?: Schema[]
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  format?: string
  minimum?: number
  maximum?: number
  description?: string
}

/** The type of a value of `s`, without its nullability; `null` when GraphQL cannot say more than JSON. */
function typeOf(sc: SchemaComposer<GraphQLContext>, s: Schema, path: string, naming: OutputNaming): string {
  const named = naming.types?.[path]
  if (named) return named
  const variants = (s.anyOf ?? [s]).filter((v) => v.type !== 'null')
  if (variants.length !== 1) return variants.every((v) => v.type === 'string') ? 'String' : 'JSON'
  const v = variants[0]
  switch (v.type) {
    case 'string':
      return v.format === 'uuid'
        ? 'ID'
        : v.format === 'date-time'
          ? 'DateTime'
          : v.format === 'date'
            ? 'Date'
            : 'String'
    // GraphQL's Int is 32-bit: an integer without bounds inside that range is a Float, as for payload fields.
    case 'integer':
      return int32(v) ? 'Int' : 'Float'
    case 'number':
      return 'Float'
    case 'boolean':
      return 'Boolean'
    case 'array':
      return `[${typeOf(sc, v.items!, `${path}[]`, naming)}!]`
    case 'object': {
      const name = naming.objects?.[path]
      if (!name || !v.properties) return 'JSON'
      if (!sc.has(name)) sc.createObjectTC({ name, fields: outputFields(sc, v, naming, `${path}.`) })
      return name
    }
    default:
      return 'JSON'
  }
}

/**
 * The GraphQL fields of a TypeBox output schema (an object), so a plugin's GraphQL type is
 * its REST output's: a property that may be absent or null is nullable; uuids are `ID`,
 * date-times `DateTime`, bounded integers `Int`; nested objects become the types `naming`
 * names (else `JSON`); descriptions carry over.
 */
export function outputFields(
  sc: SchemaComposer<GraphQLContext>,
  schema: TSchema,
  naming: OutputNaming = {},
  prefix = ''
): ObjectTypeComposerFieldConfigMapDefinition<unknown, GraphQLContext> {
  const s = schema as Schema
  const required = new Set(s.required ?? [])
  const out: ObjectTypeComposerFieldConfigMapDefinition<unknown, GraphQLContext> = {}
  for (const [key, p] of Object.entries(s.properties ?? {})) {
    const path = `${prefix}${key}`
    if (naming.omit?.includes(path)) continue
    const nullable = !required.has(key) || (p.anyOf?.some((v) => v.type === 'null') ?? false)
    const type = `${typeOf(sc, p, path, naming)}${nullable ? '' : '!'}`
    out[key] = p.description ? { type, description: p.description } : type
  }
  return out
}

/**
 * The GraphQL input fields of a TypeBox request body schema (an object): what the body may
 * leave out is nullable; scalars as in `outputFields`; nested objects are `JSON` unless
 * `naming.types` names an input type (the service validates them as REST does).
 */
export function inputFields(
  sc: SchemaComposer<GraphQLContext>,
  schema: TSchema,
  naming: Omit<OutputNaming, 'objects'> = {}
): InputTypeComposerFieldConfigMapDefinition {
  const { types, omit } = naming
  const fields = outputFields(sc, schema, { types, omit })
  return fields as InputTypeComposerFieldConfigMapDefinition
}
