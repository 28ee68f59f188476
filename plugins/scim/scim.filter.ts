import { textProblem } from '../../core/json-data.ts'
import { scimError } from './scim.errors.ts'

/**
 * SCIM filter expressions and attribute paths (RFC 7644 §3.4.2.2, §3.5.2), parsed into a
 * tree: `eq ne co sw ew gt ge lt le pr`, `and`, `or`, `not (…)`, parentheses, value paths
 * (`emails[type eq "work" and value co "@x"]`, also followed by a sub-attribute:
 * `emails[type eq "work"].value eq "a@x"`) and attribute paths with a schema URN prefix.
 *
 * Written here rather than taken from scimmy: scimmy 1.3.5's Filter rewrites `not (a or b)`
 * into `(not a) or (not b)` and `not (a and b)` into `not a and not b`, fails on nested
 * parentheses (`a or (b and (c or d))`), refuses escaped quotes in strings and accepts a
 * comparison without a value (`userName eq`); its matching is case-sensitive. Lists are
 * filtered in SQL (scim.sql.ts) from this tree.
 *
 * Lenient where identity providers and Microsoft's test collection are: operators and
 * keywords in any case, and a comparison value that is no JSON value (`familyName eq
 * Employee`, a bare date) read as a string.
 */

export type CompareOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le'
export type Value = string | number | boolean | null

/** `urn…:User:name.givenName` → schema `urn…:User`, attr `name`, sub `givenName` (names as written). */
export interface AttrPath {
  schema?: string
  attr: string
  sub?: string
}

export type Filter =
  | { op: 'and' | 'or'; left: Filter; right: Filter }
  | { op: 'not'; expr: Filter }
  | { op: 'pr'; path: AttrPath }
  | { op: CompareOp; path: AttrPath; value: Value }
  /** Elements of a multi-valued attribute matching `filter` (and then `then`, on the same element). */
  | { op: 'has'; path: AttrPath; filter: Filter; then?: Filter }

const compareOps = new Set(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le'])
const maxDepth = 32
const maxLength = 8_192

interface Token {
  kind: 'word' | 'string' | '(' | ')' | '[' | ']'
  text: string
  at: number
}

function tokenize(text: string): Token[] {
  const out: Token[] = []
  let i = 0
  while (i < text.length) {
    const c = text[i]
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++
    } else if (c === '(' || c === ')' || c === '[' || c === ']') {
      out.push({ kind: c, text: c, at: i })
      i++
    } else if (c === '"') {
      let j = i + 1
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1
      if (j >= text.length) throw invalid(`the string starting at character ${i + 1} is not closed`)
      let value: string
      try {
        value = JSON.parse(text.slice(i, j + 1))
      } catch {
        throw invalid(`the string starting at character ${i + 1} is not a valid JSON string`)
      }
      // Escapes may spell what the database cannot hold (`"\u0000"`, a lone surrogate): refused here, at the edge.
      const bad = textProblem(value)
      if (bad) throw invalid(`the string starting at character ${i + 1} ${bad}`)
      out.push({ kind: 'string', text: value, at: i })
      i = j + 1
    } else {
      let j = i
      while (j < text.length && !' \t\n\r()[]"'.includes(text[j])) j++
      out.push({ kind: 'word', text: text.slice(i, j), at: i })
      i = j
    }
  }
  return out
}

const invalid = (detail: string) => scimError(400, 'invalidFilter', `The filter is not valid: ${detail}.`)

/** An attribute path: `attr`, `attr.sub`, `urn:…:attr[.sub]`. */
export function parseAttrPath(text: string, what = 'attribute path'): AttrPath {
  const colon = text.lastIndexOf(':')
  const schema = colon > 0 ? text.slice(0, colon) : undefined
  const rest = colon > 0 ? text.slice(colon + 1) : text
  const [attr, sub, more] = rest.split('.')
  const name = /^\$?[A-Za-z][\w-]*$/
  if (
    !attr ||
    !name.test(attr) ||
    (sub !== undefined && !name.test(sub)) ||
    more !== undefined ||
    (schema !== undefined && !/^urn:[\w.:-]+$/i.test(schema))
  ) {
    throw invalid(`"${text}" is not an ${what}`)
  }
  return { ...(schema ? { schema } : {}), attr, ...(sub ? { sub } : {}) }
}

class Parser {
  private i = 0
  private depth = 0
  constructor(private readonly tokens: Token[]) {}

  private peek() {
    return this.tokens[this.i]
  }

  private next(): Token {
    const t = this.tokens[this.i++]
    if (!t) throw invalid('it ends too early')
    return t
  }

  private keyword(word: string) {
    const t = this.peek()
    return t?.kind === 'word' && t.text.toLowerCase() === word
  }

  parse(): Filter {
    const f = this.or()
    const t = this.peek()
    if (t) throw invalid(`unexpected "${t.text}" at character ${t.at + 1}`)
    return f
  }

  private nest<T>(fn: () => T): T {
    if (++this.depth > maxDepth) throw invalid(`it nests deeper than ${maxDepth} levels`)
    try {
      return fn()
    } finally {
      this.depth--
    }
  }

  private or(): Filter {
    let left = this.and()
    while (this.keyword('or')) {
      this.i++
      left = { op: 'or', left, right: this.and() }
    }
    return left
  }

  private and(): Filter {
    let left = this.unary()
    while (this.keyword('and')) {
      this.i++
      left = { op: 'and', left, right: this.unary() }
    }
    return left
  }

  private unary(): Filter {
    if (this.keyword('not')) {
      this.i++
      const t = this.peek()
      if (t?.kind !== '(') throw invalid('"not" must be followed by a parenthesised expression')
      return { op: 'not', expr: this.unary() }
    }
    const t = this.next()
    if (t.kind === '(') {
      const inner = this.nest(() => this.or())
      if (this.next().kind !== ')') throw invalid(`a ")" is missing for the "(" at character ${t.at + 1}`)
      return inner
    }
    if (t.kind !== 'word') throw invalid(`unexpected "${t.text}" at character ${t.at + 1}`)
    const path = parseAttrPath(t.text)
    if (this.peek()?.kind === '[') {
      if (path.sub) throw invalid(`"${t.text}[" filters a sub-attribute`)
      const open = this.next()
      const filter = this.nest(() => this.or())
      if (this.next().kind !== ']') throw invalid(`a "]" is missing for the "[" at character ${open.at + 1}`)
      // `emails[type eq "work"].value eq "x"`: the sub-attribute comes as a word starting with "."
      const after = this.peek()
      if (after?.kind === 'word' && after.text.startsWith('.')) {
        this.i++
        const sub = parseAttrPath(after.text.slice(1))
        if (sub.sub || sub.schema) throw invalid(`"${after.text}" is not a sub-attribute`)
        return { op: 'has', path, filter, then: this.comparison({ attr: sub.attr }) }
      }
      return { op: 'has', path, filter }
    }
    return this.comparison(path)
  }

  private comparison(path: AttrPath): Filter {
    const opToken = this.next()
    const op = opToken.text.toLowerCase()
    if (opToken.kind === 'word' && op === 'pr') return { op: 'pr', path }
    if (opToken.kind !== 'word' || !compareOps.has(op))
      throw invalid(
        `"${opToken.text}" at character ${opToken.at + 1} is no operator (eq, ne, co, sw, ew, gt, ge, lt, le, pr)`
      )
    const v = this.peek()
    if (!v || (v.kind !== 'word' && v.kind !== 'string'))
      throw invalid(`"${op}" at character ${opToken.at + 1} has no value to compare with`)
    this.i++
    return { op: op as CompareOp, path, value: v.kind === 'string' ? v.text : literal(v.text) }
  }
}

/** A comparison value written without quotes: true, false, null, a JSON number, else (leniently) the text. */
function literal(text: string): Value {
  const lower = text.toLowerCase()
  if (lower === 'true') return true
  if (lower === 'false') return false
  if (lower === 'null') return null
  if (/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(text)) {
    const n = Number(text)
    if (Number.isFinite(n)) return n
  }
  return text
}

/** Comparisons a filter makes on each element it is evaluated on: what one element costs. */
export function comparisons(f: Filter): number {
  switch (f.op) {
    case 'and':
    case 'or':
      return comparisons(f.left) + comparisons(f.right)
    case 'not':
      return comparisons(f.expr)
    case 'has':
      return 1 + comparisons(f.filter) + (f.then ? comparisons(f.then) : 0)
    default:
      return 1
  }
}

/** Parses a `filter` query parameter (or the filter inside a PATCH path's brackets). */
export function parseFilter(text: unknown): Filter {
  if (typeof text !== 'string' || !text.trim()) throw invalid('give it as one non-empty string')
  if (text.length > maxLength) throw invalid(`it is longer than ${maxLength} characters`)
  return new Parser(tokenize(text)).parse()
}

/** A PATCH path (RFC 7644 §3.5.2): `attrPath`, or `attr[filter]` optionally followed by `.sub`. */
export interface PatchPath {
  path: AttrPath
  filter?: Filter
}

export function parsePatchPath(text: string): PatchPath {
  if (text.length > maxLength) throw scimError(400, 'invalidPath', `The path is longer than ${maxLength} characters.`)
  const open = text.indexOf('[')
  try {
    if (open < 0) return { path: parseAttrPath(text.trim(), 'attribute path') }
    const close = text.lastIndexOf(']')
    if (close < open) throw invalid(`"${text}" opens a "[" it does not close`)
    const base = parseAttrPath(text.slice(0, open).trim())
    if (base.sub) throw invalid(`"${text}" filters a sub-attribute`)
    const tail = text.slice(close + 1).trim()
    if (tail && !tail.startsWith('.')) throw invalid(`"${tail}" cannot follow "]"`)
    const sub = tail ? parseAttrPath(tail.slice(1)) : undefined
    if (sub && (sub.sub || sub.schema)) throw invalid(`"${tail}" is not a sub-attribute`)
    return { path: { ...base, ...(sub ? { sub: sub.attr } : {}) }, filter: parseFilter(text.slice(open + 1, close)) }
  } catch (err) {
    // The same grammar, but a PATCH path that does not parse is scimType invalidPath.
    if ((err as { extra?: { scimType?: string } }).extra?.scimType === 'invalidFilter')
      throw scimError(
        400,
        'invalidPath',
        `The path "${text}" is not valid: ${(err as Error).message.replace(/^The filter is not valid: /, '')}`
      )
    throw err
  }
}
