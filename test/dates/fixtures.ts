/**
 * Modules with the date rules of issue 30, for the tests of test/dates and test/instances: a `task` with a due date
 * (date) and a monthly series per site; a `permit` whose `expire` fires by itself once `validTo` has passed; a
 * `review`, a yearly series per task (the annual-review shape: a series per record of another module).
 */
export const task = {
  key: 'task',
  version: '1.0.0',
  title: 'Task',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'site', type: 'singleChoice', options: ['north', 'south'] },
    { key: 'dueDate', type: 'date' }
  ],
  workflow: {
    initial: 'open',
    states: [{ key: 'open' }, { key: 'parked' }, { key: 'done', final: true }],
    transitions: [
      { key: 'finish', from: ['open', 'parked'], to: 'done' },
      { key: 'park', from: ['open'], to: 'parked' }
    ]
  },
  permissions: { editor: ['read', 'create', 'update', 'transition:*'], viewer: ['read'] },
  numberPattern: 'TSK-{seq:4}',
  due: { field: 'dueDate', until: ['parked', 'done'] },
  recurrence: { every: 'month', per: 'site', payload: { title: 'Monthly site inspection' } }
}

export const permit = {
  key: 'permit',
  version: '1.0.0',
  title: 'Permit',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'validTo', type: 'datetime', required: true }
  ],
  workflow: {
    initial: 'active',
    states: [{ key: 'active' }, { key: 'expired', final: true }],
    transitions: [{ key: 'expire', from: ['active'], to: 'expired', auto: { after: 'validTo' } }]
  },
  permissions: { editor: ['read', 'create', 'update'] },
  numberPattern: 'PTW-{seq:4}'
}

export const review = {
  key: 'review',
  version: '1.0.0',
  title: 'Annual review',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'task', type: 'recordRef', module: 'task' }
  ],
  workflow: { initial: 'due', states: [{ key: 'due' }, { key: 'done', final: true }], transitions: [] },
  // An auditor reads the reviews, not the tasks they review.
  permissions: { editor: ['read', 'create', 'update'], auditor: ['read'] },
  numberPattern: 'REV-{seq:4}',
  recurrence: { every: 'year', per: 'task', payload: { title: 'Annual review' } }
}

export const dateModules = [task, permit, review]

/** A day `days` from `from`, as YYYY-MM-DD. */
export const dayAfter = (from: Date, days: number) =>
  new Date(from.getTime() + days * 86_400_000).toISOString().slice(0, 10)
