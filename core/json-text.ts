import type { FieldProblem } from './errors/index.ts'
import { escapePointer, fieldOf, jsonLimits, limitDetails } from './json-data.ts'

const QUOTE = 34
const BACKSLASH = 92
const COMMA = 44
const COLON = 58
const OPEN_OBJECT = 123
const CLOSE_OBJECT = 125
const OPEN_ARRAY = 91
const CLOSE_ARRAY = 93

/** Where a scalar token (number, true, false, null) ends: the next structural character or whitespace. */
function tokenEnd(text: string, i: number): number {
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (c === COMMA || c === CLOSE_ARRAY || c === CLOSE_OBJECT || c === COLON || c <= 32) return i
    i++
  }
  return i
}

/** Where the string starting at the quote `i` ends (the closing quote), or the text's end. */
function stringEnd(text: string, i: number): number {
  for (i++; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === BACKSLASH) i++
    else if (c === QUOTE) return i
  }
  return i
}

/**
 * Checks the shape of JSON text before it is parsed: nesting depth, members of each
 * object, items of each array, and values and object members in all (`jsonLimits`). JSON.parse of a 1 MiB
 * body with 90,000 keys costs ~70 ms of CPU and its garbage; this one pass over the
 * characters costs ~5 ms and refuses such a body before anything is allocated. Text
 * that is not JSON is left to JSON.parse to describe. Returns the first problem, with
 * the JSON pointer of the container at fault.
 */
export function jsonTextProblem(text: string, root = ''): FieldProblem | undefined {
  // One entry per open container: whether it is an array, how many members it has, and where it sits: an
  // index (>= 0) or a key, kept as -(start + 1) of its quoted text and decoded only for a problem's pointer.
  const isArray: boolean[] = []
  const counts: number[] = []
  const at: number[] = []
  let values = 0
  let members = 0
  let expectKey = false
  let pendingKey = 0
  const segment = (k: number) => {
    if (k >= 0) return String(k)
    const start = -k - 1
    const quoted = text.slice(start, stringEnd(text, start) + 1)
    let key: string
    try {
      key = String(JSON.parse(quoted))
    } catch {
      key = quoted.slice(1, -1) // not valid JSON; the parser would refuse it anyway
    }
    return escapePointer(key)
  }
  const problem = (code: string, detail: string): FieldProblem => {
    const pointer =
      root +
      at
        .slice(1)
        .map((k) => `/${segment(k)}`)
        .join('')
    return { pointer, field: fieldOf(pointer), code, detail }
  }
  /** A value starts here: counts it against its array and the whole. */
  const valueStarts = (): FieldProblem | undefined => {
    if (++values > jsonLimits.maxValues) {
      at.length = 1
      return problem('size', limitDetails.values)
    }
    const top = counts.length - 1
    if (top >= 0 && isArray[top]) {
      pendingKey = counts[top]
      if (++counts[top] > jsonLimits.maxItems) return problem('size', limitDetails.items)
    }
    return undefined
  }
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c <= 32 || c === COLON) continue
    if (c === QUOTE) {
      const end = stringEnd(text, i)
      if (expectKey) {
        expectKey = false
        const top = counts.length - 1
        if (++counts[top] > jsonLimits.maxKeys) return problem('size', limitDetails.keys)
        if (++members > jsonLimits.maxMembers) {
          at.length = 1
          return problem('size', limitDetails.members)
        }
        pendingKey = -(i + 1)
      } else {
        const p = valueStarts()
        if (p) return p
      }
      i = end
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      const p = valueStarts()
      if (p) return p
      at.push(pendingKey)
      if (at.length > jsonLimits.maxDepth) return problem('depth', limitDetails.depth)
      isArray.push(c === OPEN_ARRAY)
      counts.push(0)
      expectKey = c === OPEN_OBJECT
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      isArray.pop()
      counts.pop()
      at.pop()
      expectKey = false
    } else if (c === COMMA) {
      expectKey = counts.length > 0 && !isArray[isArray.length - 1]
    } else {
      const p = valueStarts()
      if (p) return p
      i = tokenEnd(text, i) - 1
    }
  }
  return undefined
}
