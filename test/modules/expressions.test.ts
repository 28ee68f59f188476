import t from '../helpers/tap.ts'
import { checkExpression, type ExprEnv, type ExprField } from '../../core/modules/expression-check.ts'
import { evaluate } from '../../core/modules/expression-eval.ts'
import { maxExpressionLength, maxExpressionNodes, parseExpression } from '../../core/modules/expressions.ts'

/** The expression language of module definitions: parsed and checked once, evaluated over a payload (docs/modules.md). */
const fields = new Map<string, ExprField>([
  ['likelihood', { type: 'number' }],
  ['severity', { type: 'number' }],
  ['occurredOn', { type: 'date' }],
  ['closedOn', { type: 'date' }],
  ['startsAt', { type: 'datetime' }],
  ['endsAt', { type: 'datetime' }],
  ['title', { type: 'text' }],
  ['level', { type: 'text', options: ['low', 'high'] }],
  ['urgent', { type: 'boolean' }]
])
const env: ExprEnv = { fields, today: true, unusable: new Map([['tags', 'is a multipleChoice field']]) }
const run = (src: string, payload: Record<string, unknown> = {}, today = '2026-06-15') =>
  evaluate(checkExpression(src, env), { payload, fields, today })
const errorOf = (src: string, e: ExprEnv = env) => {
  try {
    checkExpression(src, e)
  } catch (err) {
    return (err as Error).message
  }
  return 'no error'
}

t.test('arithmetic follows precedence, and a division by zero has no value', async (t) => {
  t.equal(run('1 + 2 * 3'), 7)
  t.equal(run('(1 + 2) * 3'), 9)
  t.equal(run('10 - 4 - 3'), 3, 'left to right')
  t.equal(run('-2 * -3'), 6)
  t.equal(run('likelihood / severity', { likelihood: 3, severity: 0 }), null)
  t.equal(run('likelihood * severity', { likelihood: 1e308, severity: 10 }), null, 'an overflow is no value')
  t.equal(run('round(10 / 3, 2)'), 3.33)
  t.equal(run('round(2.5)'), 3)
  t.equal(run('abs(0 - 4)'), 4)
  t.equal(run('min(3, 1, 2) + max(3, 1, 2)'), 4)
})

t.test('a missing value propagates; and/or/has decide where they can', async (t) => {
  t.equal(run('likelihood * severity', { likelihood: 2 }), null)
  t.equal(run('likelihood > 2', {}), null)
  t.equal(run('likelihood > 2 and false', {}), false, 'false and no value is false')
  t.equal(run('likelihood > 2 or true', {}), true, 'true or no value is true')
  t.equal(run('likelihood > 2 or false', {}), null)
  t.equal(run('not (likelihood > 2)', {}), null)
  t.equal(run('has(likelihood)', {}), false)
  t.equal(run('has(likelihood)', { likelihood: 0 }), true)
  t.equal(run('has(title)', { title: '' }), false, 'empty text is no value')
  t.equal(run('likelihood + 1', { likelihood: '3' }), null, 'a stored value of another type is no value')
  t.equal(run('if(urgent, 1, 2)', {}), null)
})

t.test('band() gives the value of the first band the number falls in, none above the last', async (t) => {
  const band = "band(likelihood * severity, [4, 'low'], [9, 'medium'], [25, 'high'])"
  t.equal(run(band, { likelihood: 1, severity: 1 }), 'low')
  t.equal(run(band, { likelihood: 2, severity: 2 }), 'low', 'a limit is included')
  t.equal(run(band, { likelihood: 3, severity: 3 }), 'medium')
  t.equal(run(band, { likelihood: 5, severity: 5 }), 'high')
  t.equal(run(band, { likelihood: 6, severity: 5 }), null)
  t.same([...checkExpression(band, env).texts!], ['low', 'medium', 'high'], 'the labels it can yield are known')
  t.equal(run('band(likelihood, [-1, 0], [1, 10])', { likelihood: -3 }), 0, 'negative limits')
})

t.test('dates compare, count days and add days; today() is the date given', async (t) => {
  const p = { occurredOn: '2026-01-31', closedOn: '2026-03-01' }
  t.equal(run('closedOn >= occurredOn', p), true)
  t.equal(run('daysBetween(occurredOn, closedOn)', p), 29)
  t.equal(run('addDays(occurredOn, 29) == closedOn', p), true)
  t.equal(run('addDays(occurredOn, -31)', p), '2025-12-31')
  t.equal(run('closedOn > today()', p, '2026-02-28'), true)
  t.equal(run('closedOn > today()', p, '2026-03-01'), false)
  t.equal(run("occurredOn < date('2026-02-01')", p), true)
  t.equal(run('daysBetween(occurredOn, today())', p, '2026-02-01'), 1)
  // Date-times compare as instants, whatever their offsets.
  t.equal(run('endsAt > startsAt', { startsAt: '2026-01-01T10:00:00+02:00', endsAt: '2026-01-01T09:00:00Z' }), true)
  t.equal(run('daysBetween(startsAt, endsAt)', { startsAt: '2026-01-01T23:00:00Z', endsAt: '2026-01-02T01:00:00Z' }), 1)
})

t.test('text and booleans compare for equality; if() picks a branch', async (t) => {
  t.equal(run("level == 'high'", { level: 'high' }), true)
  t.equal(run("title != 'x'", { title: 'y' }), true)
  t.equal(run("if(urgent, 'high', 'low')", { urgent: true }), 'high')
  t.equal(run('urgent == false', { urgent: false }), true)
  // Texts longer than a date (user and record ids, names) compare as texts, not as instants.
  const id = '6d1f3c52-3b7e-4c55-9d1e-0c5b8a1f2e11'
  t.equal(run('title == level', { title: id, level: id }), true, 'one id equals itself')
  t.equal(run('title != level', { title: id, level: id }), false)
  t.equal(run("title == 'Leeds distribution centre'", { title: 'Leeds distribution centre' }), true)
  // Date-times as the schema accepts them (a lower-case t, a space) still compare as instants.
  t.equal(run('endsAt > startsAt', { startsAt: '2026-01-01t10:00:00+02:00', endsAt: '2026-01-01 09:00:00Z' }), true)
})

t.test('a type error is refused at check time, naming the column', async (t) => {
  t.equal(errorOf('occurredOn > 3'), '">" compares date with number at column 12')
  t.equal(errorOf('occurredOn > startsAt'), '">" compares date with datetime at column 12')
  t.equal(errorOf("title + 'x'"), '"+" takes number, not text at column 1')
  t.equal(errorOf("title < 'x'"), '"<" does not order text: only == and != compare it at column 7')
  t.equal(errorOf('likelihood and true'), '"and" takes boolean, not number at column 1')
  t.equal(errorOf("if(urgent, 1, 'x')"), 'if() yields number or text: both branches must be of one type at column 1')
  t.equal(
    errorOf("band(likelihood, [4, 'a'], [2, 'b'])"),
    'band limits must rise from one pair to the next at column 29'
  )
  t.equal(
    errorOf("band(likelihood, [4, 'a'], [9, 1])"),
    'band() values must be of one type: text, then number at column 32'
  )
  t.equal(errorOf("level == 'medium'"), '"medium" is not one of the values compared with: low, high at column 10')
  t.equal(errorOf("date('2026-02-30')"), "date() takes a date written out as 'YYYY-MM-DD' at column 6")
  t.equal(errorOf('round(1, 2, 3)'), 'round() takes 1 to 2 arguments, not 3 at column 1')
  t.equal(errorOf('[1, 2]'), 'a [limit, value] pair is only an argument of band() at column 1')
})

t.test('an unknown or unreadable field, or an unknown function, is named', async (t) => {
  t.equal(errorOf('likelyhood * 2'), 'unknown field "likelyhood" (did you mean "likelihood"?) at column 1')
  t.equal(errorOf('has(tags)'), 'field "tags" is a multipleChoice field at column 5')
  t.match(errorOf('sqrt(4)'), /^unknown function "sqrt"; functions: if, band/)
  t.equal(
    errorOf('today()', { fields }),
    'today() cannot be used here: a computed value is stored, and would be stale the next day at column 1'
  )
})

t.test('syntax errors name the column', async (t) => {
  t.equal(errorOf('1 +'), 'expected a value but found the end at column 4')
  t.equal(errorOf('(1 + 2'), 'expected ")" but found the end at column 7')
  t.equal(errorOf('1 2'), 'unexpected "2" at column 3')
  t.equal(errorOf("'open"), 'unterminated text at column 1')
  t.equal(errorOf('1 # 2'), 'unexpected character "#" at column 3')
  t.equal(errorOf('1 < 2 < 3'), 'comparisons do not chain: join them with "and" at column 7')
  t.equal(errorOf('and'), '"and" needs an operand before it at column 1')
  t.equal(errorOf('   '), 'an expression must be non-empty text at column 1')
})

t.test('an expression is bounded: its length, its node count and its nesting', async (t) => {
  t.throws(() => parseExpression('1'.padEnd(maxExpressionLength + 1, ' ')), {
    message: `is ${maxExpressionLength + 1} characters long; at most ${maxExpressionLength} are allowed at column 1`
  })
  const many = Array.from({ length: maxExpressionNodes }, () => '1').join(' + ')
  t.ok(many.length <= maxExpressionLength)
  t.match(errorOf(many), /^is too complex: more than 200 operands and operators at column/)
  t.match(errorOf(`${'('.repeat(40)}1${')'.repeat(40)}`), /^nests more than 32 levels deep at column 33$/)
  t.match(errorOf(`${'-'.repeat(40)}1`), /^nests more than 32 levels deep/)
})

t.test('evaluation is pure: the same payload and day give the same value, the payload untouched', async (t) => {
  const e = checkExpression('addDays(occurredOn, likelihood) > today()', env)
  const payload = Object.freeze({ occurredOn: '2026-01-01', likelihood: 10 })
  const a = evaluate(e, { payload, fields, today: '2026-01-05' })
  t.equal(a, true)
  t.equal(evaluate(e, { payload, fields, today: '2026-01-05' }), a)
  t.same(
    checkExpression('closedOn >= occurredOn and likelihood > 1', env).reads,
    new Set(['closedOn', 'occurredOn', 'likelihood'])
  )
})
