import t from '../helpers/tap.ts'
import { ModuleRegistry } from '../../core/modules/registry.ts'
import { ModuleDefinitionError } from '../../core/modules/validate.ts'
import { permit, review, task } from './fixtures.ts'

/** Load-time rules of due dates, date-triggered transitions and recurrence: each refusal names the package and where. */
const load = (def: unknown) => {
  const registry = new ModuleRegistry()
  registry.register(structuredClone(task), '@fixture/task', '/nowhere')
  return registry.register(def, '@fixture/x', '/nowhere')
}
const refusal = (def: unknown) => {
  try {
    load(def)
  } catch (err) {
    if (err instanceof ModuleDefinitionError) return `${err.where}: ${err.problem}`
    throw err
  }
  return 'loaded'
}
const taskWith = (more: Record<string, unknown>) => ({ ...structuredClone(task), key: 'job', ...more })

t.test('the fixtures with due dates, an auto transition and recurrences load', async (t) => {
  t.ok(load(structuredClone(permit)))
  t.ok(load(structuredClone(review)))
})

t.test('a due date is a top-level date or date-time field, and its until names states', async (t) => {
  t.match(
    refusal(taskWith({ due: { field: 'title' } })),
    /^due\.field: "title" must name a top-level field of type date or datetime/
  )
  t.match(
    refusal(taskWith({ due: { field: 'dueDate', until: ['closed'] } })),
    /^due\.until: names unknown state "closed"/
  )
  t.match(refusal(taskWith({ due: { feild: 'dueDate' } })), /unknown key "feild" \(did you mean "field"\?\)/)
})

t.test('an auto transition fires after a top-level date or date-time field', async (t) => {
  const p = structuredClone(permit)
  p.workflow.transitions[0].auto = { after: 'title' }
  t.match(refusal({ ...p, key: 'permit-x' }), /^workflow transition "expire" auto\.after: "title" must name/)
})

t.test('a recurrence is per a choice or reference field, and the records it makes pass the schema', async (t) => {
  t.match(
    refusal(taskWith({ recurrence: { every: 'month', per: 'title', payload: { title: 'x' } } })),
    /^recurrence\.per: "title" must name a top-level field of type singleChoice or recordRef/
  )
  t.match(
    refusal(taskWith({ recurrence: { every: 'month', payload: { titel: 'x' } } })),
    /^recurrence\.payload\.titel: is not a field of the module/
  )
  t.match(
    refusal(taskWith({ recurrence: { every: 'month', per: 'site', payload: { title: 'x', site: 'north' } } })),
    /^recurrence\.payload\.site: is the per field/
  )
  t.match(
    refusal(taskWith({ recurrence: { every: 'week', payload: {} } })),
    /^recurrence\.payload: the records it makes would be refused by the module schema: .*title/
  )
  t.match(
    refusal(taskWith({ recurrence: { every: 'fortnight', payload: { title: 'x' } } })),
    /^recurrence\.every: "fortnight" must be day, week, month, year or \{ days: n \}/
  )
  t.equal(refusal(taskWith({ recurrence: { every: { days: 14 }, payload: { title: 'x' } } })), 'loaded')
  // As a client's create: a computed field's value is the platform's (records.rules.ts createRules, plannedCreate).
  const computed = {
    ...taskWith({ recurrence: { every: 'week', payload: { title: 'x', shout: 'X' } } }),
    fields: [...task.fields, { key: 'shout', type: 'text', computed: 'title' }]
  }
  t.match(
    refusal(computed),
    /^recurrence\.payload: the records it makes would be refused: payload\.shout is computed by the platform/
  )
})

t.test(
  'a recurrence whose records its own rules refuse does not load; a rule reading today() is left to the job',
  async (t) => {
    const rule = (check: string) => [{ check, message: 'a drill needs a leader', fields: ['title'] }]
    t.match(
      refusal(taskWith({ rules: rule("title != 'x'"), recurrence: { every: 'day', payload: { title: 'x' } } })),
      /^recurrence\.payload: the records module "job" makes would be refused by its rules\[0\], check "title != 'x'" \("a drill needs a leader"\)/
    )
    t.equal(
      refusal(taskWith({ rules: rule("title != 'x'"), recurrence: { every: 'day', payload: { title: 'y' } } })),
      'loaded'
    )
    t.match(
      refusal(
        taskWith({
          rules: rule("site != 'south'"),
          recurrence: { every: 'day', per: 'site', payload: { title: 'y' } }
        })
      ),
      /rules\[0\] \(the series of site "south"\)/,
      'every option of the per field is tried'
    )
    t.equal(
      refusal(
        taskWith({
          fields: [...task.fields, { key: 'leader', type: 'text', default: 'the site manager' }],
          rules: rule('has(leader)'),
          recurrence: { every: 'day', payload: { title: 'y' } }
        })
      ),
      'loaded',
      'defaults are filled in first, as on a create'
    )
    t.equal(
      refusal(
        taskWith({
          rules: rule("has(dueDate) or today() < date('2000-01-01')"),
          recurrence: { every: 'day', payload: { title: 'y' } }
        })
      ),
      'loaded'
    )
  }
)
