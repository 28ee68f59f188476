import t from '../helpers/tap.ts'
import { fixtureModules } from '../helpers/fixture-modules.ts'
import { defaultTenants, startTestServer } from '../helpers/server.ts'

/**
 * The expression language: `==` and `!=` on texts, as a module author writes them in a computed
 * field and a rule (docs/modules.md, "Expressions"), over choices whose values are longer than ten characters.
 */
const spill = {
  key: 'spill',
  version: '1.0.0',
  title: 'Spill',
  numberPattern: 'SP-{seq:4}',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'category', type: 'singleChoice', options: ['environmental', 'safety'], required: true },
    { key: 'permitNo', type: 'text' },
    { key: 'reportable', type: 'boolean', computed: "category == 'environmental'" },
    {
      key: 'route',
      type: 'singleChoice',
      options: ['regulator', 'internal'],
      computed: "if(category == 'environmental', 'regulator', 'internal')"
    }
  ],
  workflow: {
    initial: 'open',
    states: [{ key: 'open' }, { key: 'closed', final: true }],
    transitions: [{ key: 'close', from: ['open'], to: 'closed' }]
  },
  permissions: { editor: ['read', 'create', 'update', 'transition:*'] },
  rules: [
    {
      check: "category != 'environmental' or has(permitNo)",
      message: 'an environmental spill needs the permit number',
      fields: ['permitNo']
    },
    {
      check: "title != 'Do not use this title'",
      message: 'is a placeholder',
      fields: ['title']
    }
  ]
}
const fixtures = fixtureModules([spill])
t.teardown(fixtures.remove)
const server = await startTestServer({
  modules: { directories: ['tenant-modules', fixtures.directory], packages: [] },
  tenants: { ...defaultTenants, acme: { ...defaultTenants.acme, modules: [...defaultTenants.acme.modules, 'spill'] } }
})
t.teardown(() => server.close())

const create = (payload: Record<string, unknown>) =>
  server.request('POST', '/api/v1/records', { body: { moduleKey: 'spill', payload } })

t.test(
  'a computed field comparing a choice with a value longer than ten characters is true when they are equal',
  async (t) => {
    const made = await create({ title: 'Diesel into the drain', category: 'environmental', permitNo: 'EA-1' })
    t.equal(made.status, 201)
    t.equal(made.body.payload.reportable, true, "category == 'environmental' for an environmental spill")
    t.equal(made.body.payload.route, 'regulator')
    const safety = await create({ title: 'Wet floor', category: 'safety' })
    t.equal(safety.status, 201)
    t.equal(safety.body.payload.reportable, false)
  }
)

t.test('a rule with != on a long choice value refuses what it names', async (t) => {
  const res = await create({ title: 'Diesel into the drain', category: 'environmental' })
  t.equal(res.status, 400, 'an environmental spill without a permit number is refused')
  t.match(res.body, { code: 'field.invalid', errors: [{ pointer: '/payload/permitNo', code: 'rule' }] })
})

t.test('a rule with != on a long free-text literal refuses that text', async (t) => {
  const res = await create({ title: 'Do not use this title', category: 'safety' })
  t.equal(res.status, 400, 'the placeholder title is refused')
  t.match(res.body, { code: 'field.invalid', errors: [{ pointer: '/payload/title', code: 'rule' }] })
  const ok = await create({ title: 'A real title here', category: 'safety' })
  t.equal(ok.status, 201, 'and any other title accepted')
})
