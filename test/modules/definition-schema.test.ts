import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Ajv2020 } from 'ajv/dist/2020.js'
import t from '../helpers/tap.ts'
import { projectRoot } from '../../core/paths.ts'
import { loadModules } from '../../core/modules/registry.ts'
import { unknownKey, type ModuleDefinitionShape } from '../../core/modules/definition-schema.ts'
import type {
  ChoiceOption,
  FieldAccess,
  FieldDefinition,
  FieldType,
  ModuleDefinition,
  SeparationOfDuties,
  Workflow,
  WorkflowState,
  WorkflowTransition
} from '../../core/modules/types.ts'
import { renderModuleSchema, schemaFile } from '../../scripts/module-schema.ts'

// The TypeScript types authors compile against and the schema the registry and editors use say the same: each is
// assignable to the other, and each object has the same members (tsc fails this file when one gains a member alone,
// optional ones included, which assignability alone lets through).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
type Shape = ModuleDefinitionShape
type FieldOf<F, T> = Extract<F, { type: T }>
type Inner<F> = FieldOf<F, 'group'> extends { fields: Array<infer I> } ? I : never
type FieldKeysAgree = {
  [T in FieldType]: Same<keyof FieldOf<FieldDefinition, T>, keyof FieldOf<Shape['fields'][number], T>>
}[FieldType]
type InnerKeysAgree = {
  [T in Exclude<FieldType, 'group'>]: Same<
    keyof FieldOf<Inner<FieldDefinition>, T>,
    keyof FieldOf<Inner<Shape['fields'][number]>, T>
  >
}[Exclude<FieldType, 'group'>]
type Members<A> = Exclude<A, string>
const typesAgree: [
  Same<ModuleDefinition, Shape>,
  Same<keyof ModuleDefinition, keyof Shape>,
  Same<keyof Workflow, keyof Shape['workflow']>,
  Same<keyof WorkflowState, keyof Shape['workflow']['states'][number]>,
  Same<keyof WorkflowTransition, keyof Shape['workflow']['transitions'][number]>,
  Same<keyof SeparationOfDuties, keyof NonNullable<Shape['workflow']['transitions'][number]['separateFrom']>>,
  Same<keyof FieldAccess, keyof NonNullable<Shape['fields'][number]['access']>>,
  Same<keyof ChoiceOption, keyof Members<FieldOf<Shape['fields'][number], 'singleChoice'>['options'][number]>>,
  Same<FieldKeysAgree, true>,
  Same<InnerKeysAgree, true>
] = [true, true, true, true, true, true, true, true, true, true]

const published = JSON.parse(readFileSync(schemaFile, 'utf8')) as object

t.test('the published JSON Schema is the one the registry checks with (npm run schemas writes it)', async (t) => {
  t.ok(typesAgree.every(Boolean), 'types.ts and the schema agree')
  t.equal(readFileSync(schemaFile, 'utf8'), renderModuleSchema(), 'schemas/module-definition.schema.json is fresh')
})

t.test('every bundled module validates against the published schema, and a misspelt key does not', async (t) => {
  const validate = new Ajv2020({ strict: false, allErrors: true }).compile(published)
  const registry = await loadModules({ directories: [join(projectRoot, 'tenant-modules')], packages: [] })
  t.ok(registry.all().length >= 3, 'the bundled modules load')
  for (const m of registry.all()) {
    const { packageName: _n, packagePath: _p, ...definition } = structuredClone(m.definition)
    t.ok(validate(definition), `${m.definition.key}: ${JSON.stringify(validate.errors?.slice(0, 2))}`)
    const misspelt = structuredClone(definition) as unknown as { fields: Array<Record<string, unknown>> }
    misspelt.fields[0].requird = true
    t.notOk(validate(misspelt), `${m.definition.key} with requird is refused`)
    t.match(validate.errors?.[0], { keyword: 'additionalProperties', instancePath: '/fields/0' })
  }
})

t.test('unknownKey names the key, where it sits and the known key it most likely meant', async (t) => {
  const definition = {
    key: 'x',
    fields: [
      { key: 'a', type: 'text' },
      { key: 'g', type: 'group', fields: [{ key: 'n', type: 'number', maximun: 3 }] }
    ],
    workflow: { initial: 'open', states: [{ key: 'open', finale: true }], transitions: [] },
    permissions: { editor: ['read'] }
  }
  t.same(unknownKey(definition), {
    at: 'fields[1] (field "g").fields[0] (field "n")',
    key: 'maximun',
    known: [
      'key',
      'label',
      'description',
      'required',
      'access',
      'type',
      'minimum',
      'maximum',
      'filterable',
      'sortable',
      'computed',
      'default'
    ],
    meant: 'maximum'
  })
  definition.fields[1].fields = [{ key: 'n', type: 'number', maximum: 3 } as never]
  t.match(unknownKey(definition), { at: 'workflow.states[0]', key: 'finale', meant: 'final' })
  definition.workflow.states = [{ key: 'open', final: true } as never]
  t.equal(unknownKey(definition), undefined, 'none left')
  t.match(unknownKey({ ...definition, computed: {} }), { at: 'definition', key: 'computed', meant: undefined })
  t.equal(
    unknownKey({ ...definition, fields: [{ key: 'c', type: 'colour', shade: 1 }] }),
    undefined,
    'an unknown field type is left to the type check, which names the allowed types'
  )
})
