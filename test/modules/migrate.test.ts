import t from '../helpers/tap.ts'
import { hiddenFields } from '../../core/auth/access.ts'
import type { Principal } from '../../core/auth/principal.ts'
import { checkRelease, upgradeRefusal } from '../../core/modules/diff.ts'
import { applyMigrations, migrationChain } from '../../core/modules/migrate.ts'
import { ModuleRegistry } from '../../core/modules/registry.ts'
import type { ModuleDefinition, ModuleMigration } from '../../core/modules/types.ts'

/** The rules of module migrations that need no database: steps, chains, checks at load, field rules of old keys. */

const v2: ModuleDefinition = {
  key: 'staff',
  version: '2.0.0',
  title: 'Staff',
  numberPattern: 'ST-{seq:4}',
  fields: [
    { key: 'name', type: 'text', required: true },
    { key: 'pay', type: 'number', access: { read: ['hr'] } },
    { key: 'grade', type: 'singleChoice', options: ['a', 'b'] },
    { key: 'location', type: 'text' }
  ],
  workflow: { initial: 'open', states: [{ key: 'open' }], transitions: [] },
  permissions: { hr: ['read'], auditor: ['read'] }
}
const register = (migrations: unknown, def: ModuleDefinition = v2) =>
  new ModuleRegistry().register(def, '@fixture/staff', '/nowhere', {}, migrations)
const user = (roles: string[]): Principal => ({
  tenantId: 't',
  credentialId: 'c',
  kind: 'session',
  actor: { type: 'user', id: 'u', name: 'u' },
  roles,
  scopes: 'all'
})

t.test(
  'a rename onto a field that already holds another value refuses the record instead of overwriting it',
  async (t) => {
    const chain: ModuleMigration[] = [
      { from: '^1.0.0', to: '2.0.0', steps: [{ op: 'renameField', from: 'site', to: 'location' }] }
    ]
    t.same(applyMigrations(chain, { payload: { site: 'Leeds' }, state: 'open' }).payload, { location: 'Leeds' })
    t.same(
      applyMigrations(chain, { payload: { site: 'Leeds', location: 'Leeds' }, state: 'open' }).payload,
      { location: 'Leeds' },
      'the same value is fine'
    )
    t.throws(
      () => applyMigrations(chain, { payload: { site: 'Leeds', location: 'Leeds HQ, bay 2' }, state: 'open' }),
      /already holds another value in "location"/
    )
  }
)

t.test('overlapping migrations run in turn, each to its nearest target', async (t) => {
  const migrations: ModuleMigration[] = [
    { from: '>=1.0.0 <3.0.0', to: '3.0.0', steps: [{ op: 'renameField', from: 'b', to: 'c' }] },
    { from: '^1.0.0', to: '2.0.0', steps: [{ op: 'renameField', from: 'a', to: 'b' }] }
  ]
  t.same(
    migrationChain(migrations, '1.0.0', '3.0.0').map((m) => m.to),
    ['2.0.0', '3.0.0']
  )
  t.same(applyMigrations(migrationChain(migrations, '1.0.0', '3.0.0'), { payload: { a: 1 }, state: 's' }).payload, {
    c: 1
  })
})

t.test("a transform's result is copied: a later step does not change what the transform shares", async (t) => {
  const shared = { location: 'Depot' }
  const migrations: ModuleMigration[] = [
    { from: '^1.0.0', to: '2.0.0', transform: (r) => ({ ...r, payload: { ...r.payload, office: shared } }) },
    { from: '^2.0.0', to: '3.0.0', steps: [{ op: 'renameField', from: 'office.location', to: 'office.place' }] }
  ]
  applyMigrations(migrationChain(migrations, '1.0.0', '3.0.0'), { payload: {}, state: 's' })
  t.same(shared, { location: 'Depot' })
})

t.test(
  'at load, a default the field cannot hold and a rename across levels are refused, naming the step',
  async (t) => {
    t.throws(
      () => register([{ from: '^1.0.0', to: '2.0.0', steps: [{ op: 'setDefault', field: 'grade', value: 'c' }] }]),
      /migrations\[0\]\.steps\[0\]\.value: is not a value of "grade": must be one of: a, b/
    )
    t.throws(
      () => register([{ from: '^1.0.0', to: '2.0.0', steps: [{ op: 'setDefault', field: 'pay', value: 'lots' }] }]),
      /is not a value of "pay": must be a number/
    )
    t.throws(
      () =>
        register([{ from: '^1.0.0', to: '2.0.0', steps: [{ op: 'renameField', from: 'site', to: 'location.name' }] }]),
      /is not a field|moves within its level/
    )
    t.ok(register([{ from: '^1.0.0', to: '2.0.0', steps: [{ op: 'setDefault', field: 'grade', value: 'a' }] }]))
  }
)

t.test("only the last migration's transform answers any breaking change", async (t) => {
  const v1 = {
    ...v2,
    version: '1.0.0',
    fields: [...v2.fields.slice(0, 3), { key: 'location', type: 'integer' as const }]
  }
  const early: ModuleMigration[] = [
    { from: '^1.0.0', to: '1.5.0', transform: (r) => r },
    { from: '^1.5.0', to: '2.0.0', steps: [] }
  ]
  t.match(
    checkRelease(v1, v2, early).refused,
    /do not answer 1 breaking change\(s\): field "location": type integer → text/
  )
  const late: ModuleMigration[] = [...early.slice(0, 1), { from: '^1.5.0', to: '2.0.0', transform: (r) => r }]
  t.equal(checkRelease(v1, v2, late).refused, undefined)
})

t.test(
  "a renamed field's old key follows its field rule; a removed field is shown to the tenant's own keys only",
  async (t) => {
    const m = register([
      {
        from: '^1.0.0',
        to: '2.0.0',
        steps: [
          { op: 'renameField', from: 'salary', to: 'pay' },
          { op: 'removeField', field: 'bonus' }
        ]
      }
    ])
    t.same([...hiddenFields(user(['auditor']), m)].sort(), ['bonus', 'pay', 'salary'])
    t.same([...hiddenFields(user(['hr']), m)].sort(), ['bonus'])
    t.same([...hiddenFields({ ...user([]), roles: 'all' }, m)], [])
  }
)

t.test(
  'a chain is judged hop by hop where the versions between are known: an early transform answers its own hop',
  async (t) => {
    const one: ModuleDefinition = {
      ...v2,
      version: '1.0.0',
      fields: v2.fields.map((f) => (f.key === 'pay' ? { key: 'pay', type: 'text' } : f))
    }
    const three: ModuleDefinition = {
      ...v2,
      version: '3.0.0',
      fields: v2.fields.map((f) => (f.key === 'location' ? { ...f, key: 'site' } : f))
    }
    const migrations: ModuleMigration[] = [
      {
        from: '^1.0.0',
        to: '2.0.0',
        transform: (r) => ({ ...r, payload: { ...r.payload, pay: Number(r.payload.pay) } })
      },
      { from: '^2.0.0', to: '3.0.0', steps: [{ op: 'renameField', from: 'location', to: 'site' }] }
    ]
    t.equal(
      upgradeRefusal(one, three, migrations, (v) => (v === '2.0.0' ? v2 : undefined)),
      undefined,
      '1.0.0 → 2.0.0 (the transform retypes pay) → 3.0.0 (a rename)'
    )
    t.match(
      upgradeRefusal(one, three, migrations),
      /do not answer 1 breaking change\(s\): field "pay": type text → number/,
      'without 2.0.0 known, the whole way is judged at once'
    )
  }
)
