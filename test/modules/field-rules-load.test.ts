import t from '../helpers/tap.ts'
import { checkRelease } from '../../core/modules/diff.ts'
import { ModuleRegistry } from '../../core/modules/registry.ts'
import { maxExpressionLength } from '../../core/modules/expressions.ts'

/**
 * Computed fields, defaults and rules are checked when a module loads (core/modules/field-rules.ts): a bad expression
 * stops the package with a message naming the field (or rule), the problem and its column; nothing is left to fail
 * on a write.
 */
const fields = [
  { key: 'title', type: 'text', required: true },
  { key: 'likelihood', type: 'integer', minimum: 1, maximum: 5 },
  { key: 'severity', type: 'integer', minimum: 1, maximum: 5 },
  { key: 'occurredOn', type: 'date' },
  { key: 'tags', type: 'multipleChoice', options: ['a', 'b'] }
]
const definition = (extra: { fields?: unknown[]; rules?: unknown[] } = {}) => ({
  key: 'assess',
  version: '1.0.0',
  title: 'Assessment',
  numberPattern: 'AS-{seq:4}',
  fields: [...fields, ...(extra.fields ?? [])],
  workflow: {
    initial: 'open',
    states: [{ key: 'open' }, { key: 'closed' }],
    transitions: [{ key: 'close', from: ['open'], to: 'closed' }]
  },
  permissions: { editor: ['read', 'create', 'update', 'transition:close'] },
  ...(extra.rules ? { rules: extra.rules } : {})
})
const load = (extra: Parameters<typeof definition>[0]) => () =>
  new ModuleRegistry().register(definition(extra), '@fixture/assess', '/nowhere')

t.test('a module with computed fields, defaults and rules loads; its rules are compiled once', async (t) => {
  const m = new ModuleRegistry().register(
    definition({
      fields: [
        { key: 'score', type: 'number', computed: 'likelihood * severity' },
        {
          key: 'band',
          type: 'singleChoice',
          options: ['low', 'high'],
          computed: "band(score, [9, 'low'], [25, 'high'])"
        },
        { key: 'flagged', type: 'boolean', computed: 'score > 12' },
        { key: 'reviewOn', type: 'date', default: 'today()' },
        { key: 'kind', type: 'singleChoice', options: ['x', 'y'], default: 'x' }
      ],
      rules: [{ check: 'reviewOn >= occurredOn', message: 'after the occurrence' }]
    }),
    '@fixture/assess',
    '/nowhere'
  )
  t.same([...m.fieldRules.computedKeys], ['score', 'band', 'flagged'])
  t.same(m.fieldRules.rules[0].fields, ['reviewOn', 'occurredOn'], "a rule's fields default to those it reads")
})

const refusals: Array<[string, Parameters<typeof definition>[0], RegExp]> = [
  [
    'an unknown field in an expression',
    { fields: [{ key: 'score', type: 'number', computed: 'likelyhood * severity' }] },
    /field "score": computed "likelyhood \* severity": unknown field "likelyhood" \(did you mean "likelihood"\?\) at column 1/
  ],
  [
    'a computed type that is not the field type',
    { fields: [{ key: 'score', type: 'number', computed: 'likelihood > severity' }] },
    /field "score": computed yields boolean, but a number field holds number/
  ],
  [
    'a date compared with a number',
    { rules: [{ check: 'occurredOn > 3', message: 'x' }] },
    /rules\[0\]: check "occurredOn > 3": ">" compares date with number at column 12/
  ],
  [
    'a band label the choice does not offer',
    {
      fields: [
        {
          key: 'band',
          type: 'singleChoice',
          options: ['low', 'high'],
          computed: "band(likelihood, [2, 'low'], [5, 'extreme'])"
        }
      ]
    },
    /field "band": computed may yield "extreme", which the options do not list/
  ],
  [
    'a choice computed from free text',
    { fields: [{ key: 'band', type: 'singleChoice', options: ['low'], computed: "if(has(title), title, 'low')" }] },
    /computed may yield any text, but a choice holds only its options: low/
  ],
  [
    'an expression too long',
    { fields: [{ key: 'score', type: 'number', computed: `likelihood${' + 1'.repeat(maxExpressionLength / 4)}` }] },
    /field "score": computed ".*": is 1010 characters long; at most 1000 are allowed/
  ],
  [
    'an expression too complex',
    { fields: [{ key: 'score', type: 'number', computed: Array.from({ length: 150 }, () => '1').join('+') }] },
    /field "score": computed ".*": is too complex: more than 200 operands and operators at column/
  ],
  [
    'a field expressions cannot read',
    { rules: [{ check: 'has(tags)', message: 'x' }] },
    /rules\[0\]: check "has\(tags\)": field "tags" is a multipleChoice field, which expressions do not read at column 5/
  ],
  [
    'a computed field reading one declared after it',
    {
      fields: [
        { key: 'a', type: 'number', computed: 'b + 1' },
        { key: 'b', type: 'number', computed: 'likelihood' }
      ]
    },
    /field "a": computed "b \+ 1": field "b" is computed after this field/
  ],
  [
    'today() in a computed field',
    { fields: [{ key: 'age', type: 'number', computed: 'daysBetween(occurredOn, today())' }] },
    /field "age": computed .*: today\(\) cannot be used here/
  ],
  [
    'a required computed field',
    { fields: [{ key: 'score', type: 'number', computed: 'likelihood', required: true }] },
    /field "score": a computed field cannot be required/
  ],
  [
    'a computed location',
    { fields: [{ key: 'where', type: 'location', computed: 'likelihood' }] },
    /unknown key "computed"/
  ],
  [
    'a default that is not a value of the field',
    { fields: [{ key: 'kind', type: 'singleChoice', options: ['x'], default: 'z' }] },
    /field "kind": default "z" is not a value of the field/
  ],
  [
    'a date default that is no date',
    { fields: [{ key: 'due', type: 'date', default: '2026-02-30' }] },
    /field "due": default "2026-02-30" is not a value of the field \(a date 'YYYY-MM-DD', or 'today\(\)'\)/
  ],
  [
    'a rule that is not a condition',
    { rules: [{ check: 'likelihood * 2', message: 'x' }] },
    /rules\[0\]: check yields number; it must yield true or false/
  ],
  [
    'a rule on an unknown transition',
    { rules: [{ check: 'likelihood > 1', message: 'x', on: { transitions: ['approve'] } }] },
    /rules\[0\]: on.transitions names unknown transition "approve"/
  ],
  [
    'a rule naming an unknown field',
    { rules: [{ check: 'likelihood > 1', message: 'x', fields: ['likely'] }] },
    /rules\[0\]: fields names unknown field "likely"/
  ],
  [
    'a misspelt rule member',
    { rules: [{ check: 'likelihood > 1', mesage: 'x' }] },
    /unknown key "mesage" \(did you mean "message"\?\)/
  ]
]
for (const [what, extra, message] of refusals)
  t.test(`${what} stops the package, naming where`, async (t) => {
    t.throws(load(extra), { name: 'ModuleDefinitionError', message })
  })

t.test('a changed formula, or a field made computed, is a breaking change any migration answers', async (t) => {
  const v1 = definition({ fields: [{ key: 'score', type: 'number', computed: 'likelihood * severity' }] })
  const v2 = {
    ...definition({ fields: [{ key: 'score', type: 'number', computed: 'likelihood + severity' }] }),
    version: '2.0.0'
  }
  const without = checkRelease(v1 as never, v2 as never)
  t.match(without.breaking, [{ at: 'field "score"', change: 'computed likelihood * severity → likelihood + severity' }])
  t.match(without.refused, /need a migration from 1.0.0/)
  t.notOk(checkRelease(v1 as never, v2 as never, [{ from: '^1.0.0', to: '2.0.0', steps: [] }]).refused)
  const added = {
    ...definition({ fields: [{ key: 'flag', type: 'boolean', computed: 'likelihood > 3' }] }),
    version: '2.0.0'
  }
  t.match(checkRelease(definition() as never, added as never).breaking, [
    { at: 'field "flag"', change: /^computed none → likelihood > 3/ }
  ])

  const ruled = definition({ rules: [{ check: 'likelihood > 1', message: 'x' }] })
  t.same(checkRelease(definition() as never, { ...ruled, version: '1.1.0' } as never).compatible, [
    'rules changed (later writes only)'
  ])
  t.match(
    checkRelease(definition() as never, ruled as never).refused,
    /the definition changed but its version is still 1.0.0/
  )
})

t.test(
  'a computed field that reads a field only some roles may read must be as restricted, or the module does not load',
  async (t) => {
    const restricted = (computedAccess?: { read: string[] }) => () =>
      new ModuleRegistry().register(
        {
          ...definition({
            fields: [
              { key: 'budget', type: 'number', access: { read: ['manager', 'finance'] } },
              { key: 'cost', type: 'number' },
              {
                key: 'remaining',
                type: 'number',
                computed: 'budget - cost',
                ...(computedAccess ? { access: computedAccess } : {})
              }
            ]
          }),
          permissions: {
            editor: ['read', 'create', 'update', 'transition:close'],
            manager: ['read'],
            finance: ['read']
          }
        },
        '@fixture/assess',
        '/nowhere'
      )
    t.throws(
      restricted(),
      /remaining.*computed reads "budget", which only manager, finance may read, so its value would tell every reader of the module what "budget" holds/s
    )
    t.throws(restricted({ read: ['manager', 'editor'] }), /would tell editor what "budget" holds/)
    t.doesNotThrow(restricted({ read: ['manager'] }), 'read by managers only, it tells nobody more than they may read')
  }
)
