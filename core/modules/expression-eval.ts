import type { CheckedExpression, ExprField } from './expression-check.ts'
import type { Node, Value } from './expressions.ts'

/**
 * Evaluates a checked expression (core/modules/expression-check.ts) over a record's payload. Pure: it reads the payload
 * and `today`, nothing else. "No value" (`null`) propagates: an operand without one makes arithmetic, comparisons and
 * functions yield none; `and` is false when either side is false, `or` true when either side is true; `has(x)` tells
 * whether `x` has one. A division by zero, or a number too large to hold, is no value.
 */

export interface EvalContext {
  payload: Readonly<Record<string, unknown>>
  /** The fields the expression reads, as typed at load (a stored value of another type reads as no value). */
  fields: ReadonlyMap<string, ExprField>
  /** Today's date (UTC), `YYYY-MM-DD`, from the platform's clock. */
  today: string
}

const dayMs = 86_400_000

/** The UTC day number of a date or date-time. */
const dayOf = (v: string) => Math.floor(Date.parse(v.length === 10 ? `${v}T00:00:00Z` : v) / dayMs)
const dateOfDay = (d: number) => new Date(d * dayMs).toISOString().slice(0, 10)
const finite = (n: number): number | null => (Number.isFinite(n) ? n : null)

/** Reads a payload value as the field's type; anything else (absent, another type) is no value. */
function fieldValue(ctx: EvalContext, name: string): Value {
  const v = Object.hasOwn(ctx.payload, name) ? ctx.payload[name] : undefined
  switch (ctx.fields.get(name)?.type) {
    case 'number':
      return typeof v === 'number' && Number.isFinite(v) ? v : null
    case 'boolean':
      return typeof v === 'boolean' ? v : null
    case 'date':
      return typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v) ? v : null
    case 'datetime':
      return typeof v === 'string' && !Number.isNaN(Date.parse(v)) ? v : null
    case 'text':
      return typeof v === 'string' && v !== '' ? v : null
    default:
      return null
  }
}

/** The value of `expr` for a payload. */
export function evaluate(expr: CheckedExpression, ctx: EvalContext): Value {
  return ev(expr.tree, ctx)
}

/** A date-time as fields hold it (validated ISO 8601 with a time); no other value reads as one. */
const dateTimeShape = /^\d{4}-\d{2}-\d{2}[Tt\s]\d{2}:\d{2}/

function compare(op: string, a: Value, b: Value): boolean {
  // Date-times compare as instants (offsets differ in text); dates, numbers and texts as they are. Told by their shape,
  // not their length: two texts longer than a date (user ids, record ids, names) parsed as instants were NaN, unequal
  // to anything, so `reviewer != assessor` held for one person. The checker gives both sides one type.
  const [x, y] =
    typeof a === 'string' && typeof b === 'string' && dateTimeShape.test(a) && dateTimeShape.test(b)
      ? [Date.parse(a), Date.parse(b)]
      : [a, b]
  switch (op) {
    case '==':
      return x === y
    case '!=':
      return x !== y
    case '<':
      return x! < y!
    case '<=':
      return x! <= y!
    case '>':
      return x! > y!
    default:
      return x! >= y!
  }
}

function ev(n: Node, ctx: EvalContext): Value {
  switch (n.k) {
    case 'num':
    case 'str':
    case 'bool':
      return n.v
    case 'field':
      return fieldValue(ctx, n.name)
    case 'neg': {
      const v = ev(n.arg, ctx) as number | null
      return v === null ? null : -v
    }
    case 'not': {
      const v = ev(n.arg, ctx)
      return v === null ? null : !v
    }
    case 'pair':
      return null
    case 'bin': {
      if (n.op === 'and' || n.op === 'or') {
        const l = ev(n.left, ctx)
        const decisive = n.op === 'or'
        if (l === decisive) return decisive
        const r = ev(n.right, ctx)
        if (r === decisive) return decisive
        return l === null || r === null ? null : !decisive
      }
      const [l, r] = [ev(n.left, ctx), ev(n.right, ctx)]
      if (l === null || r === null) return null
      switch (n.op) {
        case '+':
          return finite((l as number) + (r as number))
        case '-':
          return finite((l as number) - (r as number))
        case '*':
          return finite((l as number) * (r as number))
        case '/':
          return r === 0 ? null : finite((l as number) / (r as number))
        default:
          return compare(n.op, l, r)
      }
    }
    case 'call':
      return call(n, ctx)
  }
}

function call(n: Extract<Node, { k: 'call' }>, ctx: EvalContext): Value {
  const arg = (i: number) => ev(n.args[i], ctx)
  switch (n.fn) {
    case 'if': {
      const c = arg(0)
      return c === null ? null : c ? arg(1) : arg(2)
    }
    case 'band': {
      const x = arg(0) as number | null
      if (x === null) return null
      for (const p of n.args.slice(1) as Array<Extract<Node, { k: 'pair' }>>)
        if (x <= (ev(p.items[0], ctx) as number)) return ev(p.items[1], ctx)
      return null
    }
    case 'min':
    case 'max': {
      const values = n.args.map((a) => ev(a, ctx))
      if (values.some((v) => v === null)) return null
      return values.reduce((a, b) => ((n.fn === 'min' ? b! < a! : b! > a!) ? b : a))
    }
    case 'round': {
      const x = arg(0) as number | null
      if (x === null) return null
      const f = 10 ** (n.args[1] ? (arg(1) as number) : 0)
      return finite(Math.round(x * f) / f)
    }
    case 'abs': {
      const x = arg(0) as number | null
      return x === null ? null : Math.abs(x)
    }
    case 'has':
      return arg(0) !== null
    case 'today':
      return ctx.today
    case 'date':
      return arg(0)
    case 'daysBetween': {
      const [a, b] = [arg(0) as string | null, arg(1) as string | null]
      return a === null || b === null ? null : dayOf(b) - dayOf(a)
    }
    case 'addDays': {
      const [d, k] = [arg(0) as string | null, arg(1) as number | null]
      if (d === null || k === null) return null
      const day = dayOf(d) + Math.round(k)
      // Outside the years a date field holds (0001-9999), no value.
      return day < -719162 || day > 2932896 ? null : dateOfDay(day)
    }
    default:
      return null
  }
}
