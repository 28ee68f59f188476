import { GraphQLError, Kind, parse, type ASTNode, type DocumentNode, type SelectionSetNode } from 'graphql'
import type { QueryLimits } from './graphql.limits.ts'

/*
 * Bounds on a GraphQL document's text and shape, checked before GraphQL's own parser and
 * validation run: both recurse or compare in ways an adversarial 1 MB text makes slow or
 * overflows (docs/graphql.md, "Depth and cost").
 */

/** How deep lists and objects nest in a variables value, counted without recursion; stops past `max`. */
export function valueDepth(value: unknown, max: number): number {
  let deepest = 0
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length) {
    const [v, d] = stack.pop()!
    if (v === null || typeof v !== 'object') continue
    deepest = Math.max(deepest, d + 1)
    if (deepest > max) return deepest
    for (const child of Array.isArray(v) ? v : Object.values(v))
      if (child !== null && typeof child === 'object') stack.push([child, d + 1])
  }
  return deepest
}

/** The refusal of a document or variables nested past `maxNesting`. */
export function tooNested(nesting: number, limits: QueryLimits, where: string, node?: ASTNode): GraphQLError {
  return new GraphQLError(
    `The ${where} nest${where === 'variables' ? '' : 's'} more than ${limits.maxNesting} levels of lists, objects or selections (${nesting} at least). Send flatter values.`,
    {
      ...(node ? { nodes: [node] } : {}),
      extensions: { code: 'graphql.too_deep', status: 400, maxNesting: limits.maxNesting }
    }
  )
}

/**
 * The document text parsed within the limits: its bracket nesting is counted first, without
 * recursion (GraphQL's parser recurses once per level, and thousands of `[` or `{` overflow
 * its stack), then it is parsed with at most `maxTokens` tokens. Both refusals are document
 * errors (`graphql.too_deep`, `graphql.too_large`), as a syntax error is.
 */
export function parseWithin(source: string, limits: QueryLimits): DocumentNode {
  let depth = 0
  let deepest = 0
  // A lower bound of the tokens, counted on the way: names, numbers, strings and the punctuators
  // that are tokens alone. Past maxTokens the document is refused here, without GraphQL's
  // parser building the first 15,000 tokens of a 1 MB text only to refuse it (40-70 ms of CPU).
  let tokens = 0
  let inWord = false
  for (let i = 0; i < source.length; i++) {
    const c = source.charCodeAt(i)
    const word =
      (c >= 0x41 && c <= 0x5a) ||
      (c >= 0x61 && c <= 0x7a) ||
      (c >= 0x30 && c <= 0x39) ||
      c === 0x5f ||
      c === 0x2d ||
      c === 0x2e
    if (word) {
      if (!inWord && c !== 0x2e && ++tokens > limits.maxTokens) throw tooManyTokens(limits)
      inWord = true
      continue
    }
    inWord = false
    if (c === 0x23 /* # */) {
      while (i < source.length && source.charCodeAt(i) !== 0x0a && source.charCodeAt(i) !== 0x0d) i++
    } else if (c === 0x22 /* " */) {
      if (++tokens > limits.maxTokens) throw tooManyTokens(limits)
      if (source.startsWith('"""', i)) {
        const end = source.indexOf('"""', i + 3)
        // Escaped \""" inside a block string: step over it.
        let e = end
        while (e > 0 && source.charCodeAt(e - 1) === 0x5c) e = source.indexOf('"""', e + 3)
        i = e < 0 ? source.length : e + 2
      } else {
        for (i++; i < source.length; i++) {
          const d = source.charCodeAt(i)
          if (d === 0x5c) i++
          else if (d === 0x22 || d === 0x0a || d === 0x0d) break
        }
      }
    } else if (c === 0x7b || c === 0x5b || c === 0x28) {
      if (++depth > deepest) deepest = depth
      if (deepest > limits.maxNesting) throw tooNested(deepest, limits, 'document')
      if (++tokens > limits.maxTokens) throw tooManyTokens(limits)
    } else if (c === 0x7d || c === 0x5d || c === 0x29) {
      depth--
      if (++tokens > limits.maxTokens) throw tooManyTokens(limits)
    } else if (
      c === 0x3a /* : */ ||
      c === 0x21 /* ! */ ||
      c === 0x24 /* $ */ ||
      c === 0x40 /* @ */ ||
      c === 0x3d /* = */ ||
      c === 0x7c /* | */ ||
      c === 0x26 /* & */
    ) {
      if (++tokens > limits.maxTokens) throw tooManyTokens(limits)
    }
  }
  try {
    return parse(source, { maxTokens: limits.maxTokens })
  } catch (err) {
    if (err instanceof GraphQLError && /more th[ae][nt] \d+ tokens/.test(err.message)) throw tooManyTokens(limits)
    throw err
  }
}

function tooManyTokens(limits: QueryLimits): GraphQLError {
  return new GraphQLError(
    `The document has more than ${limits.maxTokens} tokens (names, punctuation, values). Ask for less at once, or pass long values as variables.`,
    {
      extensions: { code: 'graphql.too_large', status: 400, maxTokens: limits.maxTokens }
    }
  )
}

/**
 * Checked on a parsed document before GraphQL's own validation, whose rule that fields with
 * the same answer name can merge (OverlappingFieldsCanBeMerged) compares every pair of them
 * in a selection set, and every pair of fragments spread into one: 2,000 times `a: me { … }`
 * (12 KB) took seconds. Counted without recursion, linear in the document.
 */
export function repeatProblems(document: DocumentNode, limits: QueryLimits): GraphQLError[] {
  const stack: SelectionSetNode[] = []
  for (const d of document.definitions)
    if (d.kind === Kind.OPERATION_DEFINITION || d.kind === Kind.FRAGMENT_DEFINITION) stack.push(d.selectionSet)
  while (stack.length) {
    const set = stack.pop()!
    // The fields and spreads of a selection set, with those of its inline fragments: GraphQL merges them as one.
    const keys = new Map<string, number>()
    const spreads = new Set<string>()
    const level = [set]
    while (level.length) {
      for (const s of level.pop()!.selections) {
        if (s.kind === Kind.FIELD) {
          const key = s.alias?.value ?? s.name.value
          const n = (keys.get(key) ?? 0) + 1
          keys.set(key, n)
          if (n > limits.maxRepeats) return [tooRepeated(`${n} fields answer as "${key}"`, limits, s)]
          if (s.selectionSet) stack.push(s.selectionSet)
        } else if (s.kind === Kind.INLINE_FRAGMENT) level.push(s.selectionSet)
        else {
          spreads.add(s.name.value)
          if (spreads.size > limits.maxRepeats) return [tooRepeated(`${spreads.size} fragments are spread`, limits, s)]
        }
      }
    }
  }
  return []
}

function tooRepeated(what: string, limits: QueryLimits, node: ASTNode): GraphQLError {
  return new GraphQLError(
    `In one selection ${what}; at most ${limits.maxRepeats} are allowed. Give each field its own alias, or ask for less at once.`,
    {
      nodes: [node],
      extensions: { code: 'graphql.too_large', status: 400, maxRepeats: limits.maxRepeats }
    }
  )
}
