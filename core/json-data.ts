import type { FieldProblem } from './errors/index.ts'

/**
 * What every JSON value the service accepts must keep, whatever its schema: request
 * bodies, query strings, bulk rows. PostgreSQL refuses NUL and lone surrogates in text
 * and JSONB; JSON admits numbers no double holds (`1e400` parses as Infinity, which
 * JSON.stringify then writes as null); deep nesting overflows recursive code; and
 * `__proto__` as a key turns a plain merge into a prototype change.
 */
export const jsonLimits = {
  /** Objects and arrays inside one another; no module payload or request body nears it. */
  maxDepth: 32,
  /** Members of one object: a module has tens of fields, a filter a few. */
  maxKeys: 1_000,
  /** Items of one array: a module's largest (a repeating group) holds 500 by default. */
  maxItems: 10_000,
  /** Values in one body or row, all levels: a payload with a full 500-row group holds about 11,000. */
  maxValues: 50_000,
  /** Object members in one body or row, all levels: parsing members with distinct names is what costs most. */
  maxMembers: 25_000,
  /** Problems listed in one answer; the walk stops there. */
  maxProblems: 100
} as const

/** The details of a body past a limit, the same whether the text (json-text.ts) or the parsed value finds it. */
export const limitDetails = {
  depth: `nests objects and arrays deeper than ${jsonLimits.maxDepth} levels`,
  keys: `has more than ${jsonLimits.maxKeys} members; no object of a request may hold more`,
  items: `has more than ${jsonLimits.maxItems} items; no array of a request may hold more`,
  values: `holds more than ${jsonLimits.maxValues} values in all; no request may hold more`,
  members: `holds more than ${jsonLimits.maxMembers} object members in all; no request may hold more`
}

/** Keys that mean something to JavaScript objects, refused wherever a body is merged or read. */
export const reservedKeys: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype'])

/** Why a string cannot be stored as text, or undefined when it can. */
export function textProblem(s: string): string | undefined {
  if (s.includes('\u0000')) return 'contains a NUL character (\\u0000), which text cannot hold'
  // String.prototype.isWellFormed is in Node 20 but not in the ES2022 library types.
  if (!(s as string & { isWellFormed(): boolean }).isWellFormed())
    return 'contains a lone UTF-16 surrogate (e.g. \\ud800), which is not valid Unicode text'
  return undefined
}

/** A key as one segment of a JSON pointer (RFC 6901). */
export const escapePointer = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1')
/** A JSON pointer as the dotted field name problems carry (`/payload/severity` → `payload.severity`). */
export const fieldOf = (pointer: string) => pointer.replace(/^\//, '').replace(/\//g, '.') || '(body)'
/** A key as a problem shows it: the bad characters escaped, so the answer itself stays storable text. */
const shown = (key: string) =>
  textProblem(key)
    ? JSON.stringify(key)
        .slice(1, -1)
        .replace(/[\ud800-\udfff]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`)
    : key

/**
 * Walks a parsed JSON value once and lists what no schema may accept: strings (values
 * and keys) that text cannot hold, non-finite numbers, reserved keys, nesting past
 * `jsonLimits.maxDepth`, and objects, arrays or values in all past what any request
 * needs (refused whole, unread). JSON text from HTTP was checked for the sizes before
 * it was parsed (json-text.ts); this holds for values from any caller. CPU is linear in the value's size with nothing allocated per value
 * (a JSON pointer is built only for a problem); stops after `jsonLimits.maxProblems`.
 * Recursion is bounded by maxDepth.
 */
export function jsonDataProblems(value: unknown, root = ''): FieldProblem[] {
  const out: FieldProblem[] = []
  const path: string[] = []
  const add = (code: string, detail: string, key?: string) => {
    const pointer =
      root + path.map((k) => `/${escapePointer(k)}`).join('') + (key === undefined ? '' : `/${escapePointer(key)}`)
    out.push({ pointer, field: fieldOf(pointer), code, detail })
  }
  let values = 1
  let members = 0
  let stopped = false
  const tooMany = (detail: string) => {
    // Reported once, at the top; the walk stops.
    stopped = true
    out.push({ pointer: root, field: fieldOf(root), code: 'size', detail })
  }
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      const p = textProblem(v)
      if (p) add('text', p)
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v))
        add('number', 'is not a finite number (JSON numbers must fit a double, e.g. at most about 1.8e308)')
    } else if (v !== null && typeof v === 'object') {
      if (path.length >= jsonLimits.maxDepth) return add('depth', limitDetails.depth)
      if (Array.isArray(v)) {
        if (v.length > jsonLimits.maxItems) return add('size', limitDetails.items)
        if ((values += v.length) > jsonLimits.maxValues) return tooMany(limitDetails.values)
        for (let i = 0; i < v.length && !stopped && out.length < jsonLimits.maxProblems; i++) {
          path.push(String(i))
          walk(v[i])
          path.pop()
        }
        return
      }
      const keys = Object.keys(v)
      if (keys.length > jsonLimits.maxKeys) return add('size', limitDetails.keys)
      if ((values += keys.length) > jsonLimits.maxValues) return tooMany(limitDetails.values)
      if ((members += keys.length) > jsonLimits.maxMembers) return tooMany(limitDetails.members)
      for (let i = 0; i < keys.length && !stopped && out.length < jsonLimits.maxProblems; i++) {
        const key = keys[i]
        const bad = textProblem(key)
        if (bad) add('text', `is a key that ${bad}`, shown(key))
        else if (reservedKeys.has(key))
          add('reserved', `is a reserved name (${[...reservedKeys].join(', ')} are never accepted as keys)`, key)
        else {
          path.push(key)
          walk((v as Record<string, unknown>)[key])
          path.pop()
        }
      }
    }
  }
  walk(value)
  return out
}

/** A copy of a JSON object without a prototype: reading an absent key gives undefined, never an inherited value. */
export function dataObject(source: Record<string, unknown> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = Object.create(null)
  for (const k of Object.keys(source)) out[k] = source[k]
  return out
}
