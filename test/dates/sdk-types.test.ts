import { defineModule } from '@qehs-records/module-sdk'
import t from '../helpers/tap.ts'

// Due dates, auto transitions and recurrences as the SDK types them, checked by tsc (`npm run typecheck` fails this
// file when a `@ts-expect-error` below no longer finds its error, or a valid definition stops compiling).

const base = {
  key: 'inspection-x',
  version: '1.0.0',
  title: 'Inspection',
  numberPattern: 'IX-{seq:4}',
  permissions: {}
}
const workflow = {
  initial: 'open',
  states: [{ key: 'open' }, { key: 'lapsed', final: true }],
  transitions: [{ key: 'lapse', from: ['open'], to: 'lapsed', auto: { after: 'dueDate' } }]
}

const valid = defineModule({
  ...base,
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'site', type: 'singleChoice', options: ['north', 'south'] },
    { key: 'dueDate', type: 'date' }
  ],
  workflow,
  due: { field: 'dueDate', until: ['lapsed'] },
  recurrence: { every: { days: 14 }, per: 'site', payload: { title: 'Fortnightly inspection' } }
})

defineModule({
  ...base,
  fields: [{ key: 'dueDate', type: 'date' }],
  workflow,
  // @ts-expect-error a misspelt member of the due date
  due: { feild: 'dueDate' }
})
defineModule({
  ...base,
  fields: [{ key: 'dueDate', type: 'date' }],
  workflow,
  // @ts-expect-error an `every` the format does not have
  recurrence: { every: 'fortnight', payload: {} }
})
defineModule({
  ...base,
  fields: [{ key: 'dueDate', type: 'date' }],
  workflow: {
    ...workflow,
    // @ts-expect-error a misspelt member of an auto transition
    transitions: [{ key: 'lapse', from: ['open'], to: 'lapsed', auto: { afer: 'dueDate' } }]
  }
})

t.test('due dates, auto transitions and recurrences type-check as written', async (t) => {
  t.equal(valid.recurrence.per, 'site')
})
