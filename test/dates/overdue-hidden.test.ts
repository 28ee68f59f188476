import t from '../helpers/tap.ts'
import { fixtureModules } from '../helpers/fixture-modules.ts'
import { userWithToken } from '../helpers/identity.ts'
import { defaultTenants, startTestServer } from '../helpers/server.ts'

/**
 * A due date only managers may read (`access.read`) is not filtered on by an editor through `overdue`, as it is not
 * through `payload[deadline]` (a filter would give the date away a bit at a time).
 */
const chore = {
  key: 'chore',
  version: '1.0.0',
  title: 'Chore',
  numberPattern: 'CH-{seq:4}',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'deadline', type: 'date', access: { read: ['manager'] } }
  ],
  workflow: { initial: 'open', states: [{ key: 'open' }, { key: 'done', final: true }], transitions: [] },
  permissions: { editor: ['read', 'create', 'update'], manager: ['read', 'create', 'update'] },
  due: { field: 'deadline' }
}
const fixtures = fixtureModules([chore])
t.teardown(fixtures.remove)
const server = await startTestServer({
  modules: { directories: ['tenant-modules', fixtures.directory], packages: [] },
  tenants: {
    ...defaultTenants,
    acme: { ...defaultTenants.acme, modules: [...defaultTenants.acme.modules, 'chore'] }
  }
})
t.teardown(() => server.close())

t.test('an editor who may not read the due date cannot filter on it through overdue', async (t) => {
  const day = 86_400_000
  const at = (days: number) => new Date(Date.now() + days * day).toISOString().slice(0, 10)
  for (const [title, deadline] of [
    ['Past', at(-3)],
    ['Future', at(3)]
  ]) {
    const made = await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'chore', payload: { title, deadline } }
    })
    t.equal(made.status, 201)
  }
  const editor = await userWithToken(server, 'acme', ['editor'])
  const byField = await server.request('GET', '/api/v1/records?moduleKey=chore&payload[deadline][lt]=' + at(0), {
    token: editor.token
  })
  t.equal(byField.status, 403, 'a filter on the hidden deadline is refused')
  const overdue = await server.request('GET', '/api/v1/records?moduleKey=chore&overdue=true', { token: editor.token })
  t.equal(overdue.status, 403, 'and so is overdue, which filters on the same hidden deadline')
  t.equal(overdue.body.code, 'field.forbidden')
})
