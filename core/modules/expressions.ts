/**
 * The expression language of module definitions (computed fields, defaults, rules; docs/modules.md, "Expressions"):
 * small, pure and bounded. A source is parsed once, when its module loads, by the recursive-descent parser below into
 * a tree that is checked against the module's fields then (an unknown field, a comparison of a date with a number, a
 * function given the wrong arguments are load errors with the column where they are); evaluating a tree
 * (expression-eval.ts) reads only the payload and today's date. No `eval`, no `Function`, no loops: the cost of an
 * evaluation is bounded by the node count, itself capped.
 */

/** The types of values an expression handles. Dates are `YYYY-MM-DD` text, date-times RFC 3339 text. */
export type ExprType = 'number' | 'boolean' | 'text' | 'date' | 'datetime'

/** A value while evaluating; `null` is "no value" (a field without one, a division by zero), which propagates. */
export type Value = number | boolean | string | null

/** The longest source an expression may have, in characters. */
export const maxExpressionLength = 1000
/** The most nodes (literals, fields, operators, calls) an expression may have. */
export const maxExpressionNodes = 200
const maxDepth = 32

export type BinaryOp = 'or' | 'and' | '==' | '!=' | '<' | '<=' | '>' | '>=' | '+' | '-' | '*' | '/'

export type Node =
  | { k: 'num'; v: number; at: number }
  | { k: 'str'; v: string; at: number }
  | { k: 'bool'; v: boolean; at: number }
  | { k: 'field'; name: string; at: number }
  | { k: 'neg' | 'not'; arg: Node; at: number }
  | { k: 'bin'; op: BinaryOp; left: Node; right: Node; at: number }
  | { k: 'call'; fn: string; args: Node[]; at: number }
  | { k: 'pair'; items: Node[]; at: number }

/** A problem in a source, at a column (1-based). */
export class ExpressionError extends Error {
  constructor(
    readonly problem: string,
    readonly column: number
  ) {
    super(`${problem} at column ${column}`)
    this.name = 'ExpressionError'
  }
}

interface Token {
  t: 'num' | 'str' | 'id' | 'op' | 'end'
  v: string
  at: number
}

const operators = ['==', '!=', '<=', '>=', '<', '>', '+', '-', '*', '/', '(', ')', ',', '[', ']']

function tokenize(src: string): Token[] {
  const out: Token[] = []
  let i = 0
  while (i < src.length) {
    const c = src[i]
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++
      continue
    }
    const at = i + 1
    const num = /^\d+(\.\d+)?/.exec(src.slice(i, i + 40))
    if (num) {
      out.push({ t: 'num', v: num[0], at })
      i += num[0].length
      continue
    }
    const id = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i, i + 100))
    if (id) {
      out.push({ t: 'id', v: id[0], at })
      i += id[0].length
      continue
    }
    if (c === "'" || c === '"') {
      let j = i + 1
      let text = ''
      while (j < src.length && src[j] !== c) {
        if (src[j] === '\\' && j + 1 < src.length) j++
        text += src[j++]
      }
      if (j >= src.length) throw new ExpressionError('unterminated text', at)
      out.push({ t: 'str', v: text, at })
      i = j + 1
      continue
    }
    const op = operators.find((o) => src.startsWith(o, i))
    if (!op) throw new ExpressionError(`unexpected character ${JSON.stringify(c)}`, at)
    out.push({ t: 'op', v: op, at })
    i += op.length
  }
  out.push({ t: 'end', v: '', at: src.length + 1 })
  return out
}

const keywords = new Set(['and', 'or', 'not', 'true', 'false'])

/** Parses a source into its tree: `or` < `and` < `not` < comparisons < `+ -` < `* /` < unary `-` < primaries. */
export function parseExpression(src: string): Node {
  if (typeof src !== 'string' || src.trim() === '') throw new ExpressionError('an expression must be non-empty text', 1)
  if (src.length > maxExpressionLength)
    throw new ExpressionError(`is ${src.length} characters long; at most ${maxExpressionLength} are allowed`, 1)
  const tokens = tokenize(src)
  let pos = 0
  let nodes = 0
  let depth = 0
  const peek = () => tokens[pos]
  const isOp = (v: string) => peek().t === 'op' && peek().v === v
  const isWord = (v: string) => peek().t === 'id' && peek().v === v
  const node = <N extends Node>(n: N): N => {
    if (++nodes > maxExpressionNodes)
      throw new ExpressionError(`is too complex: more than ${maxExpressionNodes} operands and operators`, n.at)
    return n
  }
  const expect = (v: string) => {
    if (!isOp(v)) throw new ExpressionError(`expected "${v}" but found ${describe(peek())}`, peek().at)
    pos++
  }
  const nested = <T>(at: number, f: () => T): T => {
    if (++depth > maxDepth) throw new ExpressionError(`nests more than ${maxDepth} levels deep`, at)
    const out = f()
    depth--
    return out
  }

  const binary =
    (ops: string[], next: () => Node, words = false) =>
    (): Node => {
      let left = next()
      for (;;) {
        const tok = peek()
        const matches = words ? tok.t === 'id' && ops.includes(tok.v) : tok.t === 'op' && ops.includes(tok.v)
        if (!matches) return left
        pos++
        left = node({ k: 'bin', op: tok.v as BinaryOp, left, right: next(), at: tok.at })
      }
    }
  const primary = (): Node => {
    const tok = peek()
    if (tok.t === 'num') {
      pos++
      return node({ k: 'num', v: Number(tok.v), at: tok.at })
    }
    if (tok.t === 'str') {
      pos++
      return node({ k: 'str', v: tok.v, at: tok.at })
    }
    if (tok.t === 'op' && tok.v === '(') {
      pos++
      const inner = nested(tok.at, () => or())
      expect(')')
      return inner
    }
    if (tok.t === 'op' && tok.v === '[') {
      pos++
      const items = nested(tok.at, () => list(']'))
      return node({ k: 'pair', items, at: tok.at })
    }
    if (tok.t === 'id') {
      pos++
      if (tok.v === 'true' || tok.v === 'false') return node({ k: 'bool', v: tok.v === 'true', at: tok.at })
      if (keywords.has(tok.v)) throw new ExpressionError(`"${tok.v}" needs an operand before it`, tok.at)
      if (isOp('(')) {
        pos++
        const args = nested(tok.at, () => list(')'))
        return node({ k: 'call', fn: tok.v, args, at: tok.at })
      }
      return node({ k: 'field', name: tok.v, at: tok.at })
    }
    throw new ExpressionError(`expected a value but found ${describe(tok)}`, tok.at)
  }
  const list = (close: string): Node[] => {
    const items: Node[] = []
    if (isOp(close)) {
      pos++
      return items
    }
    for (;;) {
      items.push(or())
      if (isOp(',')) {
        pos++
        continue
      }
      expect(close)
      return items
    }
  }
  const unary = (): Node => {
    const tok = peek()
    if (tok.t === 'op' && tok.v === '-') {
      pos++
      return node({ k: 'neg', arg: nested(tok.at, unary), at: tok.at })
    }
    return primary()
  }
  const product = binary(['*', '/'], unary)
  const sum = binary(['+', '-'], product)
  const comparison = (): Node => {
    const left = sum()
    const tok = peek()
    if (tok.t !== 'op' || !['==', '!=', '<', '<=', '>', '>='].includes(tok.v)) return left
    pos++
    const right = sum()
    if (peek().t === 'op' && ['==', '!=', '<', '<=', '>', '>='].includes(peek().v))
      throw new ExpressionError('comparisons do not chain: join them with "and"', peek().at)
    return node({ k: 'bin', op: tok.v as BinaryOp, left, right, at: tok.at })
  }
  const negation = (): Node => {
    const tok = peek()
    if (isWord('not')) {
      pos++
      return node({ k: 'not', arg: nested(tok.at, negation), at: tok.at })
    }
    return comparison()
  }
  const and = binary(['and'], negation, true)
  const or = binary(['or'], and, true)

  const tree = or()
  if (peek().t !== 'end') throw new ExpressionError(`unexpected ${describe(peek())}`, peek().at)
  return tree
}

function describe(tok: Token): string {
  if (tok.t === 'end') return 'the end'
  if (tok.t === 'str') return `text ${JSON.stringify(tok.v)}`
  return `"${tok.v}"`
}
