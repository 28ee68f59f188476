import { refName, resolve, type Schema } from './operations.ts'
import { obj, type JsonLike } from './wire.ts'

/**
 * Valid values from JSON Schemas of the OpenAPI document: every required member filled by
 * its type, format, enum or const, so a request starts out as the service would accept it
 * and each hostile mutation is the only thing wrong with it.
 */
export interface SampleContext {
  doc: Schema
  /** The module the request is about: `oneOf`/`anyOf` take its branch (`IncidentPayload`, …). */
  module?: string
  /** Fill optional members too (the full payloads some mutations put under `__proto__`). */
  full?: boolean
  /** A value for a `format: uuid` string: a real id where the schema says what it refers to. */
  uuid(schema: Schema, key: string): JsonLike
}

/** `corrective-action` → `CorrectiveAction`, the prefix of the module's component names. */
export const pascal = (key: string) => key.replace(/(^|-)([a-z])/g, (_m, _d, c: string) => c.toUpperCase())

const formats: Record<string, string> = {
  'date-time': '2026-11-20T08:30:00Z',
  date: '2026-11-20',
  uri: 'https://example.com/fuzz',
  email: 'fuzz@example.com'
}
const stringCandidates = ['fuzz-1', 'text/plain', '0123456789abcdef'.repeat(4), 'acme']

/** The branch of a `oneOf`/`anyOf` for the context's module, else the first that is not `null`. */
export function branch(ctx: SampleContext, s: Schema): Schema | undefined {
  const options: Schema[] = s.oneOf ?? s.anyOf
  if (!options) return undefined
  if (ctx.module && s.discriminator?.mapping?.[ctx.module]) return { $ref: s.discriminator.mapping[ctx.module] }
  const prefix = ctx.module ? pascal(ctx.module) : undefined
  return (
    (prefix && options.find((o) => refName(o)?.startsWith(prefix))) ||
    options.find((o) => resolve(ctx.doc, o)?.type !== 'null') ||
    options[0]
  )
}

function typeOf(s: Schema): string | undefined {
  if (Array.isArray(s.type)) return s.type.find((t: string) => t !== 'null') ?? 'null'
  return s.type ?? (s.properties ? 'object' : s.items ? 'array' : undefined)
}

function stringFor(s: Schema, key: string, ctx: SampleContext): JsonLike {
  if (s.format === 'uuid') return ctx.uuid(s, key)
  let v =
    formats[s.format] ??
    (s.pattern ? stringCandidates.find((c) => new RegExp(s.pattern, 'u').test(c)) : undefined) ??
    'fuzz-1'
  if (s.minLength && v.length < s.minLength) v = v.padEnd(s.minLength, 'x')
  if (s.maxLength && v.length > s.maxLength) v = v.slice(0, s.maxLength)
  return v
}

/** A valid value of schema `node`; `key` is the member it fills (some uuids depend on it). */
export function sample(ctx: SampleContext, node: Schema | undefined, key = '', depth = 0): JsonLike {
  const r = resolve(ctx.doc, node)
  const s = r && typeof r === 'object' ? r : {}
  if (depth > 12) return null
  if ('const' in s) return s.const
  if (Array.isArray(s.enum)) return ctx.module && s.enum.includes(ctx.module) ? ctx.module : s.enum[0]
  const b = branch(ctx, s)
  if (b) return sample(ctx, b, key, depth + 1)
  if (s.allOf) {
    const merged = obj()
    for (const part of s.allOf) Object.assign(merged, sample(ctx, part, key, depth + 1))
    return merged
  }
  switch (typeOf(s)) {
    case 'object': {
      const o = obj()
      for (const [k, p] of Object.entries<Schema>(s.properties ?? {})) {
        // A `false` schema: the member must be absent (e.g. one form of a oneOf leaves the other's members out).
        if ((resolve(ctx.doc, p) as unknown) === false) continue
        if (ctx.full || s.required?.includes(k)) o[k] = sample(ctx, p, k, depth + 1)
      }
      return o
    }
    case 'array': {
      const n = Math.max(s.minItems ?? 0, ctx.full ? 1 : 0)
      return Array.from({ length: n }, (_v, i) => {
        const item = resolve(ctx.doc, s.items) ?? {}
        return Array.isArray(item.enum) ? item.enum[i % item.enum.length] : sample(ctx, item, key, depth + 1)
      })
    }
    case 'string':
      return stringFor(s, key, ctx)
    case 'integer':
    case 'number': {
      const min = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 1)
      const v = s.maximum !== undefined ? Math.min(min, s.maximum) : min
      return typeOf(s) === 'integer' ? Math.ceil(v) : v
    }
    case 'boolean':
      return true
    case 'null':
      return null
    default:
      return obj()
  }
}

export type JsonPath = Array<string | number>

/** What the schema expects at a place (`text`: a string without format or pattern). */
export type Kind = 'text' | 'string' | 'number' | 'enum' | 'object' | 'array' | 'boolean' | 'any'

export interface Place {
  path: JsonPath
  kind: Kind
}

function kindOf(s: Schema): Kind {
  if (Array.isArray(s.enum) || 'const' in s) return 'enum'
  const t = typeOf(s)
  // Free text (no format, no pattern) is what validation lets through to the database.
  if (t === 'string' && !s.format && !s.pattern) return 'text'
  return t === 'integer'
    ? 'number'
    : t === 'string' || t === 'number' || t === 'object' || t === 'array' || t === 'boolean'
      ? t
      : 'any'
}

/**
 * Every place in a value of `node` a mutation may hit: each member the schema names (required
 * or not), the first item of each array, nested to `maxDepth`, the root included.
 */
export function placesOf(ctx: SampleContext, node: Schema | undefined, maxDepth = 4): Place[] {
  const out: Place[] = []
  const walk = (n: Schema | undefined, at: JsonPath) => {
    const r = resolve(ctx.doc, n)
    // No place inside a member that must be absent.
    if ((r as unknown) === false) return
    const s = r && typeof r === 'object' ? r : {}
    const b = branch(ctx, s)
    if (b) return walk(b, at)
    if (s.allOf) return s.allOf.forEach((part: Schema) => walk(part, at))
    out.push({ path: at, kind: kindOf(s) })
    if (at.length >= maxDepth) return
    if (typeOf(s) === 'object') for (const [k, p] of Object.entries<Schema>(s.properties ?? {})) walk(p, [...at, k])
    if (typeOf(s) === 'array' && s.items) walk(s.items, [...at, 0])
  }
  walk(node, [])
  const seen = new Set<string>()
  return out.filter((p) => !seen.has(JSON.stringify(p.path)) && !!seen.add(JSON.stringify(p.path)))
}
