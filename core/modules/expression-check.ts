import { closestName, isFormat } from '../validation.ts'
import { ExpressionError, parseExpression, type ExprType, type Node } from './expressions.ts'

/**
 * The load-time check of an expression (core/modules/expressions.ts parses it) against a module's fields: every name a
 * field the expression may read, every operator and function given operands of the types it takes. What it returns is
 * what the evaluator runs and what the rules around it read (its type, the fields it reads, whether it reads the day).
 */

/** What an expression knows of a field it reads. */
export interface ExprField {
  type: ExprType
  /** A choice's values: the only texts the field can hold. */
  options?: readonly string[]
}

/** The fields an expression may read, by key; `unusable` names fields that exist but cannot be read, with why. */
export interface ExprEnv {
  fields: ReadonlyMap<string, ExprField>
  unusable?: ReadonlyMap<string, string>
  /** Whether `today()` may be used (not in computed fields: a stored value would go stale the next day). */
  today?: boolean
}

/** A checked expression, ready to evaluate. */
export interface CheckedExpression {
  source: string
  tree: Node
  type: ExprType
  /** The texts it can yield, when it yields text from a known set (literals, band labels, choices); undefined: any. */
  texts?: ReadonlySet<string>
  /** The fields it reads. */
  reads: ReadonlySet<string>
  /** Whether it reads `today()` (its value may change from one day to the next). */
  readsToday: boolean
}

interface Typed {
  type: ExprType
  texts?: Set<string>
}

const fail = (problem: string, at: number): never => {
  throw new ExpressionError(problem, at)
}

/** Parses and checks `source`; throws ExpressionError naming the column. */
export function checkExpression(source: string, env: ExprEnv): CheckedExpression {
  const tree = parseExpression(source)
  const seen = { reads: new Set<string>(), today: false }
  const typed = typeOf(tree, env, seen)
  return { source, tree, type: typed.type, texts: typed.texts, reads: seen.reads, readsToday: seen.today }
}

const union = (a?: Set<string>, b?: Set<string>) => (a && b ? new Set([...a, ...b]) : undefined)

function typeOf(n: Node, env: ExprEnv, seen: { reads: Set<string>; today: boolean }): Typed {
  const of = (x: Node) => typeOf(x, env, seen)
  switch (n.k) {
    case 'num':
      return { type: 'number' }
    case 'bool':
      return { type: 'boolean' }
    case 'str':
      return { type: 'text', texts: new Set([n.v]) }
    case 'field': {
      const f = env.fields.get(n.name)
      if (!f) {
        const why = env.unusable?.get(n.name)
        if (why) return fail(`field "${n.name}" ${why}`, n.at)
        const meant = closestName(n.name, [...env.fields.keys()])
        return fail(`unknown field "${n.name}"${meant ? ` (did you mean "${meant}"?)` : ''}`, n.at)
      }
      seen.reads.add(n.name)
      return { type: f.type, texts: f.options ? new Set(f.options) : undefined }
    }
    case 'neg':
      expectType(of(n.arg), ['number'], '"-"', n.arg.at)
      return { type: 'number' }
    case 'not':
      expectType(of(n.arg), ['boolean'], '"not"', n.arg.at)
      return { type: 'boolean' }
    case 'pair':
      return fail('a [limit, value] pair is only an argument of band()', n.at)
    case 'bin':
      return binaryType(n, of)
    case 'call':
      if (n.fn === 'today') seen.today = true
      return callType(n, env, of)
  }
}

function expectType(t: Typed, allowed: ExprType[], what: string, at: number) {
  if (!allowed.includes(t.type)) fail(`${what} takes ${allowed.join(' or ')}, not ${t.type}`, at)
}

function binaryType(n: Extract<Node, { k: 'bin' }>, of: (x: Node) => Typed): Typed {
  const [l, r] = [of(n.left), of(n.right)]
  switch (n.op) {
    case 'and':
    case 'or':
      expectType(l, ['boolean'], `"${n.op}"`, n.left.at)
      expectType(r, ['boolean'], `"${n.op}"`, n.right.at)
      return { type: 'boolean' }
    case '+':
    case '-':
    case '*':
    case '/':
      expectType(l, ['number'], `"${n.op}"`, n.left.at)
      expectType(r, ['number'], `"${n.op}"`, n.right.at)
      return { type: 'number' }
    default: {
      if (l.type !== r.type) fail(`"${n.op}" compares ${l.type} with ${r.type}`, n.at)
      if (l.type === 'datetime') n.instant = true
      const ordered = n.op !== '==' && n.op !== '!='
      if (ordered && (l.type === 'text' || l.type === 'boolean'))
        fail(`"${n.op}" does not order ${l.type}: only == and != compare it`, n.at)
      // A text compared with a literal the field can never hold is a typo.
      for (const [a, b] of [
        [l, n.right],
        [r, n.left]
      ] as const)
        if (a.texts && b.k === 'str' && a.type === 'text' && !a.texts.has(b.v))
          fail(`${JSON.stringify(b.v)} is not one of the values compared with: ${[...a.texts].join(', ')}`, b.at)
      return { type: 'boolean' }
    }
  }
}

const arity = (n: Extract<Node, { k: 'call' }>, min: number, max = min) => {
  if (n.args.length < min || n.args.length > max)
    fail(
      `${n.fn}() takes ${min === max ? min : max === Infinity ? `${min} or more` : `${min} to ${max}`} argument${max === 1 ? '' : 's'}, not ${n.args.length}`,
      n.at
    )
}

/** The functions: what each takes and yields. docs/modules.md lists them. */
function callType(n: Extract<Node, { k: 'call' }>, env: ExprEnv, of: (x: Node) => Typed): Typed {
  switch (n.fn) {
    case 'if': {
      arity(n, 3)
      expectType(of(n.args[0]), ['boolean'], 'the condition of if()', n.args[0].at)
      const [a, b] = [of(n.args[1]), of(n.args[2])]
      if (a.type !== b.type) fail(`if() yields ${a.type} or ${b.type}: both branches must be of one type`, n.at)
      return { type: a.type, texts: union(a.texts, b.texts) }
    }
    case 'band': {
      arity(n, 2, 50)
      expectType(of(n.args[0]), ['number'], 'the value of band()', n.args[0].at)
      let result: Typed | undefined
      let last = -Infinity
      for (const p of n.args.slice(1)) {
        if (p.k !== 'pair' || p.items.length !== 2)
          return fail('band() takes [upTo, value] pairs after its value', p.at)
        const [limit, value] = p.items
        const bound = limit.k === 'neg' && limit.arg.k === 'num' ? -limit.arg.v : limit.k === 'num' ? limit.v : NaN
        if (Number.isNaN(bound)) fail('a band limit must be a number written out', limit.at)
        if (bound <= last) fail('band limits must rise from one pair to the next', limit.at)
        last = bound
        const v = of(value)
        if (result && v.type !== result.type)
          fail(`band() values must be of one type: ${result.type}, then ${v.type}`, value.at)
        result = result ? { type: v.type, texts: union(result.texts, v.texts) } : v
      }
      return result!
    }
    case 'min':
    case 'max': {
      arity(n, 2, 20)
      const types = n.args.map(of)
      expectType(types[0], ['number', 'date'], `${n.fn}()`, n.args[0].at)
      types.forEach(
        (t, i) => t.type !== types[0].type && fail(`${n.fn}() mixes ${types[0].type} and ${t.type}`, n.args[i].at)
      )
      return { type: types[0].type }
    }
    case 'round': {
      arity(n, 1, 2)
      expectType(of(n.args[0]), ['number'], 'round()', n.args[0].at)
      const d = n.args[1]
      if (d && (d.k !== 'num' || !Number.isInteger(d.v) || d.v > 10))
        fail('the decimals of round() must be a whole number from 0 to 10, written out', d.at)
      return { type: 'number' }
    }
    case 'abs':
      arity(n, 1)
      expectType(of(n.args[0]), ['number'], 'abs()', n.args[0].at)
      return { type: 'number' }
    case 'has':
      arity(n, 1)
      of(n.args[0])
      return { type: 'boolean' }
    case 'today':
      arity(n, 0)
      if (!env.today)
        fail('today() cannot be used here: a computed value is stored, and would be stale the next day', n.at)
      return { type: 'date' }
    case 'date': {
      arity(n, 1)
      const a = n.args[0]
      if (a.k !== 'str' || !isFormat('date', a.v)) fail("date() takes a date written out as 'YYYY-MM-DD'", a.at)
      return { type: 'date' }
    }
    case 'daysBetween': {
      arity(n, 2)
      const [a, b] = [of(n.args[0]), of(n.args[1])]
      expectType(a, ['date', 'datetime'], 'daysBetween()', n.args[0].at)
      expectType(b, ['date', 'datetime'], 'daysBetween()', n.args[1].at)
      return { type: 'number' }
    }
    case 'addDays':
      arity(n, 2)
      expectType(of(n.args[0]), ['date'], 'the first argument of addDays()', n.args[0].at)
      expectType(of(n.args[1]), ['number'], 'the second argument of addDays()', n.args[1].at)
      return { type: 'date' }
    default: {
      const meant = closestName(n.fn, functionNames)
      return fail(
        `unknown function "${n.fn}"${meant ? ` (did you mean "${meant}"?)` : ''}; functions: ${functionNames.join(', ')}`,
        n.at
      )
    }
  }
}

/** Every function an expression may call. */
export const functionNames = [
  'if',
  'band',
  'min',
  'max',
  'round',
  'abs',
  'has',
  'today',
  'date',
  'daysBetween',
  'addDays'
]
