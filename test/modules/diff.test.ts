import t from '../helpers/tap.ts'
import { checkRelease } from '../../core/modules/diff.ts'
import type { ModuleDefinition, ModuleMigration } from '../../core/modules/types.ts'

/** Version 1.0.0 of a small module; each case changes a copy of it. */
function v1(): ModuleDefinition {
  return {
    key: 'risk',
    version: '1.0.0',
    title: 'Risk',
    numberPattern: 'RA-{seq:4}',
    fields: [
      { key: 'title', type: 'text', required: true, maxLength: 200 },
      { key: 'site', type: 'text' },
      { key: 'severity', type: 'singleChoice', options: ['low', 'medium', 'high'] },
      { key: 'score', type: 'integer', minimum: 1, maximum: 25 },
      { key: 'steps', type: 'group', fields: [{ key: 'step', type: 'text', maxLength: 100 }] }
    ],
    workflow: {
      initial: 'draft',
      states: [{ key: 'draft' }, { key: 'approved', final: true }],
      transitions: [{ key: 'approve', from: ['draft'], to: 'approved' }]
    },
    permissions: { assessor: ['read', 'create'] }
  }
}

const release = (change: (d: any) => void, version = '2.0.0', migrations: ModuleMigration[] = []) => {
  const after = structuredClone(v1()) as ModuleDefinition & Record<string, any>
  change(after)
  after.version = version
  return checkRelease(v1(), after, migrations)
}
/** A migration from 1.x to 2.0.0 whose transform answers any change. */
const transformed: ModuleMigration[] = [{ from: '^1.0.0', to: '2.0.0', transform: (r) => r }]

t.test('each breaking change is named where it is, and needs a new major version and a migration', async (t) => {
  const cases: Array<[string, (d: any) => void, string, string]> = [
    [
      'a field removed',
      (d) => d.fields.splice(1, 1),
      'field "site"',
      'removed (a rename is a removal and an addition)'
    ],
    [
      'a field renamed',
      (d) => (d.fields[1].key = 'location'),
      'field "site"',
      'removed (a rename is a removal and an addition)'
    ],
    ['a field retyped', (d) => (d.fields[3].type = 'number'), 'field "score"', 'type integer → number'],
    ['a field made required', (d) => (d.fields[1].required = true), 'field "site"', 'made required'],
    [
      'a required field added',
      (d) => d.fields.push({ key: 'owner', type: 'user', required: true }),
      'field "owner"',
      'added as required'
    ],
    ['a choice removed', (d) => d.fields[2].options.pop(), 'field "severity"', 'option "high" removed'],
    ['a limit narrowed', (d) => (d.fields[0].maxLength = 100), 'field "title"', 'maxLength 200 → 100'],
    ['a lower bound raised', (d) => (d.fields[3].minimum = 5), 'field "score"', 'minimum 1 → 5'],
    ['a bound added', (d) => (d.fields[1].maxLength = 50), 'field "site"', 'maxLength none → 50'],
    ['a pattern added', (d) => (d.fields[1].pattern = '^[A-Z]'), 'field "site"', 'pattern none → ^[A-Z]'],
    [
      'a group sub-field narrowed',
      (d) => (d.fields[4].fields[0].maxLength = 10),
      'field "steps.step"',
      'maxLength 100 → 10'
    ],
    [
      'a state removed',
      (d) => (d.workflow.states = [{ key: 'draft' }, { key: 'done', final: true }]),
      'workflow state "approved"',
      'removed'
    ],
    ['a transition removed', (d) => (d.workflow.transitions = []), 'workflow transition "approve"', 'removed']
  ]
  for (const [name, change, at, what] of cases) {
    const major = release(change)
    t.match(major.breaking, [{ at, change: what }], name)
    if (at.startsWith('workflow transition')) t.equal(major.refused, undefined, `${name}: records need no migration`)
    else
      t.match(
        major.refused,
        /need a migration from 1\.0\.0 declared in the package/,
        `${name}: refused without a migration`
      )
    t.equal(release(change, '2.0.0', transformed).refused, undefined, `${name}: accepted in 2.0.0 with a migration`)
    const minor = release(change, '1.1.0')
    t.match(
      minor.refused,
      /breaking change\(s\) need a new major version \(1\.0\.0 → 2\.0\.0 or later\)/,
      `${name}: refused in 1.1.0`
    )
  }
})

t.test('compatible changes apply in a minor version', async (t) => {
  const r = release((d) => {
    d.fields.push({ key: 'owner', type: 'user' })
    d.fields[2].options.push('critical')
    d.fields[0].maxLength = 300
    d.fields[3].minimum = 0
    d.workflow.states.push({ key: 'archived' })
    d.workflow.transitions.push({ key: 'archive', from: ['approved'], to: 'archived' })
  }, '1.1.0')
  t.same(r.breaking, [])
  t.equal(r.refused, undefined)
  t.same(r.compatible, [
    'field "severity": option "critical" added',
    'field "owner" added',
    'workflow state "archived" added'
  ])
})

t.test('a downgrade, a changed definition under the same version and another key are refused', async (t) => {
  t.match(release(() => undefined, '0.9.0').refused, 'a downgrade (1.0.0 → 0.9.0)')
  t.match(
    release((d) => d.fields.push({ key: 'x', type: 'text' }), '1.0.0').refused,
    'the definition changed but its version is still 1.0.0'
  )
  t.equal(release(() => undefined, '1.0.0').refused, undefined, 'the same definition again is fine')
  t.match(release((d) => (d.key = 'other')).refused, /the module key changed/)
})

t.test("a migration's steps answer the changes they name, and a refusal names those they do not", async (t) => {
  const change = (d: any) => {
    d.fields[1].key = 'location'
    d.fields[2].options = ['minor', 'medium', 'high']
    d.fields.push({ key: 'owner', type: 'user', required: true })
    d.workflow.states = [{ key: 'draft' }, { key: 'signed-off', final: true }]
    d.workflow.transitions[0].to = 'signed-off'
  }
  const steps: ModuleMigration['steps'] = [
    { op: 'renameField', from: 'site', to: 'location' },
    { op: 'mapChoice', field: 'severity', values: { low: 'minor' } },
    { op: 'setDefault', field: 'owner', value: '6d1f3c52-3b7e-4c55-9d1e-0c5b8a1f2e11' },
    { op: 'renameState', from: 'approved', to: 'signed-off' }
  ]
  const all = release(change, '2.0.0', [{ from: '^1.0.0', to: '2.0.0', steps }])
  t.equal(all.refused, undefined, 'every change answered by a step')
  t.same(all.unanswered, [])
  const some = release(change, '2.0.0', [{ from: '^1.0.0', to: '2.0.0', steps: steps.slice(0, 2) }])
  t.match(
    some.refused,
    'do not answer 2 breaking change(s): field "owner": added as required; workflow state "approved": removed'
  )
  const elsewhere = release(change, '2.0.0', [{ from: '^0.1.0', to: '2.0.0', steps }])
  t.match(elsewhere.refused, /need a migration from 1\.0\.0/, 'a migration from other versions does not count')
})
