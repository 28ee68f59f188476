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
  /** `instant`: a comparison of date-times, as instants (the type check sets it: their texts may differ in offset). */
  | { k: 'bin'; op: BinaryOp; left: Node; right: Node; at: number; instant?: true }
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
  return new Parser(tokenize(src)).parse()
}

const comparisons = ['==', '!=', '<', '<=', '>', '>=']

/** One parse: a method per precedence level, counting nodes and nesting as it goes. */
class Parser {
  private pos = 0
  private nodes = 0
  private depth = 0
  constructor(private readonly tokens: Token[]) {}

  parse(): Node {
    const tree = this.or()
    if (this.peek().t !== 'end') throw new ExpressionError(`unexpected ${describe(this.peek())}`, this.peek().at)
    return tree
  }

  private peek = () => this.tokens[this.pos]
  private isOp = (v: string) => this.peek().t === 'op' && this.peek().v === v
  private take = () => this.tokens[this.pos++]

  private node<N extends Node>(n: N): N {
    if (++this.nodes > maxExpressionNodes)
      throw new ExpressionError(`is too complex: more than ${maxExpressionNodes} operands and operators`, n.at)
    return n
  }

  private expect(v: string) {
    if (!this.isOp(v)) throw new ExpressionError(`expected "${v}" but found ${describe(this.peek())}`, this.peek().at)
    this.pos++
  }

  private nested<T>(at: number, f: () => T): T {
    if (++this.depth > maxDepth) throw new ExpressionError(`nests more than ${maxDepth} levels deep`, at)
    const out = f()
    this.depth--
    return out
  }

  /** Left-associative operators `ops` (words such as `and`, or symbols) over operands parsed by `next`. */
  private binary(ops: string[], next: () => Node, kind: Token['t']): Node {
    let left = next()
    for (;;) {
      const tok = this.peek()
      if (tok.t !== kind || !ops.includes(tok.v)) return left
      this.pos++
      left = this.node({ k: 'bin', op: tok.v as BinaryOp, left, right: next(), at: tok.at })
    }
  }

  private or = (): Node => this.binary(['or'], this.and, 'id')
  private and = (): Node => this.binary(['and'], this.negation, 'id')
  private negation = (): Node => {
    const tok = this.peek()
    if (tok.t !== 'id' || tok.v !== 'not') return this.comparison()
    this.pos++
    return this.node({ k: 'not', arg: this.nested(tok.at, this.negation), at: tok.at })
  }
  private comparison = (): Node => {
    const left = this.sum()
    const tok = this.peek()
    if (tok.t !== 'op' || !comparisons.includes(tok.v)) return left
    this.pos++
    const right = this.sum()
    if (this.peek().t === 'op' && comparisons.includes(this.peek().v))
      throw new ExpressionError('comparisons do not chain: join them with "and"', this.peek().at)
    return this.node({ k: 'bin', op: tok.v as BinaryOp, left, right, at: tok.at })
  }
  private sum = (): Node => this.binary(['+', '-'], this.product, 'op')
  private product = (): Node => this.binary(['*', '/'], this.unary, 'op')
  private unary = (): Node => {
    const tok = this.peek()
    if (tok.t !== 'op' || tok.v !== '-') return this.primary()
    this.pos++
    return this.node({ k: 'neg', arg: this.nested(tok.at, this.unary), at: tok.at })
  }

  private primary(): Node {
    const tok = this.take()
    if (tok.t === 'num') return this.node({ k: 'num', v: Number(tok.v), at: tok.at })
    if (tok.t === 'str') return this.node({ k: 'str', v: tok.v, at: tok.at })
    if (tok.t === 'op' && tok.v === '(') {
      const inner = this.nested(tok.at, this.or)
      this.expect(')')
      return inner
    }
    if (tok.t === 'op' && tok.v === '[')
      return this.node({ k: 'pair', items: this.nested(tok.at, () => this.list(']')), at: tok.at })
    if (tok.t === 'id') {
      if (tok.v === 'true' || tok.v === 'false') return this.node({ k: 'bool', v: tok.v === 'true', at: tok.at })
      if (keywords.has(tok.v)) throw new ExpressionError(`"${tok.v}" needs an operand before it`, tok.at)
      if (!this.isOp('(')) return this.node({ k: 'field', name: tok.v, at: tok.at })
      this.pos++
      return this.node({ k: 'call', fn: tok.v, args: this.nested(tok.at, () => this.list(')')), at: tok.at })
    }
    throw new ExpressionError(`expected a value but found ${describe(tok)}`, tok.at)
  }

  /** Comma-separated expressions up to `close` (arguments, a pair). */
  private list(close: string): Node[] {
    const items: Node[] = []
    if (this.isOp(close)) {
      this.pos++
      return items
    }
    for (;;) {
      items.push(this.or())
      if (!this.isOp(',')) break
      this.pos++
    }
    this.expect(close)
    return items
  }
}

function describe(tok: Token): string {
  if (tok.t === 'end') return 'the end'
  if (tok.t === 'str') return `text ${JSON.stringify(tok.v)}`
  return `"${tok.v}"`
}
