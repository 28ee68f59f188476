import { defineModule, type PayloadOf } from '@qehs-records/module-sdk'
import incident from '../../tenant-modules/incident/module.ts'
import t from '../helpers/tap.ts'

// What the SDK's types do for an author, checked by tsc (`npm run typecheck` fails this file when a
// `@ts-expect-error` below no longer finds its error, or a valid line stops compiling).

const workflow = {
  initial: 'open',
  states: [{ key: 'open' }, { key: 'done', final: true }],
  transitions: [{ key: 'finish', from: ['open'], to: 'done' }]
}
const base = { key: 'risk', version: '1.0.0', title: 'Risk', numberPattern: 'RA-{seq:4}', workflow, permissions: {} }

const risk = defineModule({
  ...base,
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'likelihood', type: 'integer', minimum: 1, maximum: 5, required: true },
    { key: 'rating', type: 'singleChoice', options: ['low', { value: 'high', label: 'High' }] },
    { key: 'hazards', type: 'multipleChoice', options: ['noise', 'dust'] },
    { key: 'owner', type: 'user' },
    { key: 'where', type: 'location' },
    {
      key: 'controls',
      type: 'group',
      fields: [
        { key: 'control', type: 'text', required: true },
        { key: 'done', type: 'boolean' }
      ]
    }
  ]
})

type Risk = PayloadOf<typeof risk>
const full: Risk = {
  title: 'Forklift aisle',
  likelihood: 3,
  rating: 'high',
  hazards: ['noise'],
  owner: '6f1c3a52-8c1e-4a8e-9d55-2d2f6c8f0a11',
  where: { latitude: 51.5, longitude: -0.1 },
  controls: [{ control: 'Barrier', done: true }]
}
const minimal: Risk = { title: 'x', likelihood: 1 }
// @ts-expect-error a required field is missing
const missing: Risk = { title: 'x' }
// @ts-expect-error a choice outside the options
const offList: Risk = { title: 'x', likelihood: 1, rating: 'medium' }
// @ts-expect-error a field the module does not declare
const extra: Risk = { title: 'x', likelihood: 1, colour: 'red' }
// @ts-expect-error a group item without its required sub-field
const groupItem: Risk = { title: 'x', likelihood: 1, controls: [{ done: true }] }

defineModule({
  ...base,
  // @ts-expect-error a misspelt member of a field
  fields: [{ key: 'title', type: 'text', requird: true }]
})
defineModule({
  ...base,
  // @ts-expect-error a member of another field type (options on a text field)
  fields: [{ key: 'title', type: 'text', options: ['a'] }]
})
defineModule({
  ...base,
  fields: [{ key: 'title', type: 'text' }],
  // @ts-expect-error a top-level key the format does not have
  indexes: ['title']
})
defineModule({
  ...base,
  fields: [{ key: 'title', type: 'text' }],
  workflow: {
    ...workflow,
    // @ts-expect-error a transition member in the wrong case
    transitions: [{ key: 'finish', from: ['open'], to: 'done', forbidself: true }]
  }
})
defineModule({
  ...base,
  // @ts-expect-error a group member's unknown key
  fields: [{ key: 'items', type: 'group', fields: [{ key: 'label', type: 'text', placeholder: 'x' }] }]
})
defineModule({
  ...base,
  // @ts-expect-error an access rule's misspelt member
  fields: [{ key: 'note', type: 'longText', access: { read: ['a'], wirte: ['a'] } }]
})

// Computed fields, defaults and rules (docs/modules.md, "Computed fields, defaults and rules").
const rated = defineModule({
  ...base,
  fields: [
    { key: 'likelihood', type: 'integer', default: 1 },
    { key: 'score', type: 'number', computed: 'likelihood * 2' },
    { key: 'reviewOn', type: 'date', default: 'today()' }
  ],
  rules: [{ check: 'reviewOn > today()', message: 'in the future', on: { transitions: ['finish'] } }]
})
defineModule({
  ...base,
  // @ts-expect-error a location cannot be computed
  fields: [{ key: 'where', type: 'location', computed: 'x' }]
})
defineModule({
  ...base,
  // @ts-expect-error a default of another type than the field's
  fields: [{ key: 'count', type: 'integer', default: 'one' }]
})
defineModule({
  ...base,
  fields: [{ key: 'title', type: 'text' }],
  // @ts-expect-error a rule's misspelt member
  rules: [{ check: 'true', mesage: 'x' }]
})

// The bundled incident module's payload, as a client of its records would type it.
const report: PayloadOf<typeof incident> = {
  title: 'Slip',
  description: 'Wet floor',
  occurredAt: '2026-11-26T10:00:00Z',
  site: 'Plant 1',
  category: 'near-miss',
  severity: 'low'
}

t.test('the SDK types a payload from the fields and refuses unknown keys at compile time', async (t) => {
  t.same(Object.keys(full).length, 7, 'a payload with every field compiles')
  t.ok(minimal && missing && offList && extra && groupItem, 'the refused payloads are type errors only')
  t.equal(report.category, 'near-miss', "the bundled incident module's payload type")
  t.equal(risk.key, 'risk', 'defineModule returns the definition unchanged')
  t.equal(rated.rules[0].check, 'reviewOn > today()', 'computed fields, defaults and rules compile')
})
