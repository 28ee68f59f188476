import t, { type Test } from '../helpers/tap.ts'
import { loadConfig } from '../../core/config.ts'
import { loadModules, ModuleRegistry } from '../../core/modules/registry.ts'
import { ModuleDefinitionError } from '../../core/modules/validate.ts'

const bundled = await loadModules(loadConfig().modules)

/** The bundled incident module with other summary columns, as its package exports it (without what the registry adds). */
function incidentWith(summaryColumns: unknown) {
  const { packageName: _name, packagePath: _path, ...exported } = structuredClone(bundled.get('incident')!.definition)
  return { ...exported, summaryColumns }
}

function refusal(t: Test, summaryColumns: unknown): string {
  const err = t.throws(() =>
    new ModuleRegistry().register(incidentWith(summaryColumns), '@acme/incident-fixture', '/tmp/fixture')
  ) as ModuleDefinitionError
  t.ok(err instanceof ModuleDefinitionError, 'refused as a module definition error')
  return err.message
}

t.test('every bundled module declares summary columns that name its fields', async (t) => {
  for (const m of bundled.all()) {
    t.ok(m.definition.summaryColumns?.length, `${m.definition.key} declares summary columns`)
    for (const key of m.definition.summaryColumns ?? [])
      t.ok(m.fields.has(key), `${m.definition.key}: ${key} is a field`)
  }
})

t.test(
  'a module whose summary columns name an unknown field is refused, naming the package and the field',
  async (t) => {
    const message = refusal(t, ['title', 'colour'])
    t.match(message, 'Module package "@acme/incident-fixture": summaryColumns: names unknown field "colour"')
  }
)

t.test('summary columns must be a short list of distinct top-level fields', async (t) => {
  t.match(refusal(t, []), /summaryColumns: must list 1 to 8/)
  t.match(refusal(t, 'title'), /summaryColumns: must list 1 to 8/)
  t.match(refusal(t, ['title', 'title']), /names "title" twice/)
  t.match(
    refusal(t, [
      'title',
      'site',
      'category',
      'severity',
      'occurredAt',
      'description',
      'rootCause',
      'closureNote',
      'location'
    ]),
    /must list 1 to 8/
  )
})

t.test('a module without summary columns loads', async (t) => {
  const { summaryColumns: _drop, ...definition } = incidentWith(undefined)
  t.ok(new ModuleRegistry().register({ ...definition, key: 'incident-plain' }, '@acme/plain', '/tmp/plain'))
})
