import fc from 'fast-check'
import t from '../helpers/tap.ts'
import { jsonDataProblems, jsonLimits } from '../../core/json-data.ts'
import { jsonTextProblem } from '../../core/json-text.ts'

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)

t.test('JSON within every limit passes the text check, whatever its strings hold', async (t) => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 8 }), (v) => {
      t.equal(jsonTextProblem(JSON.stringify(v)), undefined)
      t.equal(jsonTextProblem(JSON.stringify(v, null, 2)), undefined, 'whitespace between tokens changes nothing')
    }),
    { seed: 1, numRuns: 300 }
  )
  const tricky = {
    'a,b': ['"]}', '\\', '\\"', '[{', ','.repeat(20_000)],
    'x/y~z': { '': null },
    n: [-1.5e10, 0, true, false]
  }
  t.equal(
    jsonTextProblem(JSON.stringify(tricky)),
    undefined,
    'brackets, commas and quotes inside strings are not structure'
  )
})

t.test('the text check and the parsed-value check agree on each limit, at the limit and one past it', async (t) => {
  const cases: Array<[string, string, string | undefined]> = [
    ['an array of 10,000 items', JSON.stringify({ a: Array(jsonLimits.maxItems).fill(0) }), undefined],
    ['an array of 10,001 items', JSON.stringify({ a: Array(jsonLimits.maxItems + 1).fill(0) }), '/a'],
    [
      'an object of 1,000 members',
      JSON.stringify({ o: Object.fromEntries(Array.from({ length: jsonLimits.maxKeys }, (_, i) => [`k${i}`, i])) }),
      undefined
    ],
    [
      'an object of 1,001 members',
      JSON.stringify({ o: Object.fromEntries(Array.from({ length: jsonLimits.maxKeys + 1 }, (_, i) => [`k${i}`, i])) }),
      '/o'
    ],
    ['nesting 32 deep', nested(jsonLimits.maxDepth), undefined],
    ['nesting 33 deep', nested(jsonLimits.maxDepth + 1), `${'/0'.repeat(jsonLimits.maxDepth)}`],
    // The outer array, its 5 arrays and their items: 1 + 5 + 49,994.
    ['50,000 values in all', JSON.stringify([9999, 9999, 9999, 9999, 9998].map((n) => Array(n).fill(1))), undefined],
    ['50,001 values in all', JSON.stringify([9999, 9999, 9999, 9999, 9999].map((n) => Array(n).fill(1))), ''],
    [
      '25,000 members in all',
      JSON.stringify(
        Array.from({ length: 25 }, (_, j) =>
          Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${j}_${i}`, 0]))
        )
      ),
      undefined
    ],
    [
      '25,001 members in all',
      JSON.stringify([
        ...Array.from({ length: 25 }, (_, j) =>
          Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${j}_${i}`, 0]))
        ),
        { last: 0 }
      ]),
      ''
    ]
  ]
  for (const [label, text, pointer] of cases) {
    const fromText = jsonTextProblem(text)
    const fromValue = jsonDataProblems(JSON.parse(text))
    if (pointer === undefined) {
      t.equal(fromText, undefined, `${label}: the text passes`)
      t.same(fromValue, [], `${label}: the value passes`)
    } else {
      t.equal(fromText?.pointer, pointer, `${label}: the text is refused at ${pointer || '(body)'}`)
      t.same(
        fromValue.map((p) => [p.pointer, p.code, p.detail]),
        [[fromText!.pointer, fromText!.code, fromText!.detail]],
        `${label}: the value check says the same`
      )
    }
  }
})

t.test('a key holding a slash or tilde is escaped in the pointer', async (t) => {
  const text = JSON.stringify({ 'a/b': { '~c': Array(jsonLimits.maxItems + 1).fill(0) } })
  t.equal(jsonTextProblem(text, '/payload')?.pointer, '/payload/a~1b/~0c')
  t.equal(jsonTextProblem(text)?.field, 'a~1b.~0c')
})

t.test('text that is not JSON is left to the parser', async (t) => {
  for (const text of ['{"a":', '[1,2', '"open', '}{', '{"k" 1}', ''])
    t.equal(jsonTextProblem(text), undefined, JSON.stringify(text))
  // Past a limit under a key that is not valid JSON text: still a problem, never a throw.
  t.equal(jsonTextProblem(`{"bad\\x":${JSON.stringify(Array(jsonLimits.maxItems + 1).fill(0))}}`)?.pointer, '/bad\\x')
})

t.test('the text check of a 1 MiB body takes a few milliseconds of CPU, far below parsing it', async (t) => {
  const text = JSON.stringify({ payload: Object.fromEntries(Array.from({ length: 90_000 }, (_, i) => [`k${i}`, 0])) })
  const cpu = process.cpuUsage()
  for (let i = 0; i < 10; i++) jsonTextProblem(text)
  const used = process.cpuUsage(cpu)
  t.ok((used.user + used.system) / 1000 / 10 < 50, `${((used.user + used.system) / 10_000).toFixed(1)} ms per check`)
})
