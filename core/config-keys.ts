import type { TSchema } from '@feathersjs/typebox'

/**
 * The settings of the configuration schema, each with the environment variable that sets it:
 * one list, derived from the schema itself (core/config.ts), that start-up reads the
 * environment with and the operator reference (docs/operations.md, `npm run docs:config`)
 * is generated from. A setting's variable is `RECORDS_` and its path in upper snake case
 * (`limits.requestsPerMinute` → `RECORDS_LIMITS_REQUESTS_PER_MINUTE`) unless the schema
 * names another with `env` (the conventional `DATABASE_URL`, `PORT`, `REDIS_URL`…).
 */
export interface ConfigKey {
  /** Dotted path, e.g. `limits.requestsPerMinute`. */
  key: string
  path: string[]
  env: string
  /** The schema's `description` of the setting. */
  description?: string
  schema: TSchema
}

/** `limits.requestsPerMinute` → `RECORDS_LIMITS_REQUESTS_PER_MINUTE`. */
export function derivedEnvName(path: readonly string[]): string {
  return ['RECORDS', ...path.map((p) => p.replace(/([a-z0-9])([A-Z])/g, '$1_$2'))].join('_').toUpperCase()
}

/** An object of named settings is walked into; anything else (a value, a list, a map such as `tenants`) is one setting. */
function isSection(s: TSchema): boolean {
  return s.type === 'object' && s.properties !== undefined && s.patternProperties === undefined && s.env === undefined
}

/** Every setting (leaf) of `schema`, in declaration order. */
export function configKeys(schema: TSchema, prefix: string[] = []): ConfigKey[] {
  if (isSection(schema))
    return Object.entries(schema.properties as Record<string, TSchema>).flatMap(([k, s]) =>
      configKeys(s, [...prefix, k])
    )
  return [
    {
      key: prefix.join('.'),
      path: prefix,
      env: schema.env ?? derivedEnvName(prefix),
      description: schema.description,
      schema
    }
  ]
}

/** The JSON types a setting's schema accepts (`anyOf` of literals and null included). */
function typesOf(s: TSchema): Set<string> {
  if (Array.isArray(s.anyOf)) return new Set((s.anyOf as TSchema[]).flatMap((m) => [...typesOf(m)]))
  if (typeof s.type === 'string') return new Set([s.type])
  if (s.const !== undefined) return new Set([s.const === null ? 'null' : typeof s.const])
  return new Set()
}

function scalar(text: string, s: TSchema, where: string): unknown {
  const types = typesOf(s)
  if (types.has('integer') || types.has('number')) {
    const n = text.trim() === '' ? NaN : Number(text)
    if (Number.isFinite(n)) return n
    if (!types.has('string')) throw new Error(`Invalid configuration: ${where} must be a number, not "${text}"`)
  }
  if (types.has('boolean')) {
    if (text === 'true' || text === 'false') return text === 'true'
    if (!types.has('string')) throw new Error(`Invalid configuration: ${where} must be true or false, not "${text}"`)
  }
  return text
}

/**
 * A setting's value from its variable's text: numbers and booleans as written, a list as JSON (`["a","b"]`) or comma-separated
 * (`a,b`), a map or object as JSON. The result is validated with the whole configuration.
 */
export function parseEnvValue(text: string, key: ConfigKey): unknown {
  const where = `${key.env} (${key.key})`
  const types = typesOf(key.schema)
  if (types.has('array') || types.has('object')) {
    const trimmed = text.trim()
    if (trimmed.startsWith('[') || trimmed.startsWith('{') || (!types.has('array') && !types.has('string'))) {
      try {
        return JSON.parse(trimmed)
      } catch {
        throw new Error(`Invalid configuration: ${where} must be JSON: ${trimmed.slice(0, 80)}`)
      }
    }
    if (types.has('array')) {
      const items = (key.schema.items ?? {}) as TSchema
      return trimmed === '' ? [] : trimmed.split(',').map((part) => scalar(part.trim(), items, where))
    }
  }
  return scalar(text, key.schema, where)
}

/**
 * `config` with every setting its environment variable sets replaced by the variable's
 * value (a map such as `tenants` replaced whole, not merged). An empty variable counts as
 * unset, as node-config had it.
 */
export function withEnvSettings<T extends object>(config: T, schema: TSchema, env: NodeJS.ProcessEnv): T {
  type Node = Record<string, unknown>
  const out = structuredClone(config) as Node
  for (const key of configKeys(schema)) {
    const text = env[key.env]
    if (text === undefined || text === '') continue
    let at = out
    for (const p of key.path.slice(0, -1)) {
      const next = at[p] !== null && typeof at[p] === 'object' ? (at[p] as Node) : {}
      at = at[p] = next
    }
    at[key.path[key.path.length - 1]] = parseEnvValue(text, key)
  }
  return out as T
}
