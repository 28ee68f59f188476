import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import { freshDatabase } from '../helpers/database.ts'
import { fixtureModules } from '../helpers/fixture-modules.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'

/**
 * A module package replaced by another version between two starts on the same database, as an operator upgrades:
 * a compatible release applies to the tenant that installed the old one; a breaking one without a migration, and
 * any downgrade, leave that tenant on its version with the module answering 503 and the reason for its admins,
 * while every other module serves; going back to the recorded version serves again.
 */
const v1 = {
  key: 'permit',
  version: '1.0.0',
  title: 'Permit',
  numberPattern: 'PTW-{seq:4}',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'site', type: 'text' },
    { key: 'kind', type: 'singleChoice', options: ['hot-work', 'height'] }
  ],
  workflow: { initial: 'open', states: [{ key: 'open' }], transitions: [] },
  permissions: { admin: ['read', 'create', 'update'] }
}
/** A compatible release: a choice and an optional field added. */
const v1_1 = {
  ...v1,
  version: '1.1.0',
  fields: [
    ...v1.fields.slice(0, 2),
    { key: 'kind', type: 'singleChoice', options: ['hot-work', 'height', 'confined-space'] },
    { key: 'notes', type: 'longText' }
  ]
}
const fixtures = fixtureModules([v1])
t.teardown(() => fixtures.remove())
const db = await freshDatabase()
t.teardown(() => db.drop())

/**
 * Replaces the fixture package with another version of it, as installing another version would. Each version gets a
 * folder of its own: this process's module cache would otherwise serve the first file again (a restarted service
 * reads the new one).
 */
let installs = 0
const install = (definition: Record<string, unknown>) => {
  for (const entry of readdirSync(fixtures.directory)) rmSync(join(fixtures.directory, entry), { recursive: true })
  const dir = join(fixtures.directory, `permit-${++installs}`)
  mkdirSync(dir)
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({
      name: '@fixture/permit',
      version: String(definition.version),
      type: 'module',
      'records-module': { entry: 'module.ts', host: '>=0.1.0 <1.0.0' }
    })
  )
  writeFileSync(join(dir, 'module.ts'), `export default ${JSON.stringify(definition)}\n`)
}

/** One start of the service on the shared database; the caller closes it. */
const start = (): Promise<TestServer> =>
  startTestServer({
    database: { url: db.url },
    modules: { directories: ['tenant-modules', fixtures.directory] },
    tenants: { acme: { name: 'Acme', modules: ['incident', 'permit'] } }
  })

const unavailableReason = async (server: TestServer) =>
  (await server.request('GET', '/api/v1/modules')).body.unavailable as Array<{ key: string; reason: string }>

let recordId = ''
t.test('version 1.0.0 installs and stores a record', async (t) => {
  const server = await start()
  t.teardown(() => server.close())
  const r = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'permit', payload: { title: 'Boiler room', site: 'Leeds', kind: 'hot-work' } }
  })
  t.equal(r.status, 201)
  recordId = r.body.id
})

t.test('a compatible release (an optional field, a choice) applies; the old record reads as it was', async (t) => {
  install(v1_1)
  const server = await start()
  t.teardown(() => server.close())
  t.same(await unavailableReason(server), [])
  const old = await server.request('GET', `/api/v1/records/${recordId}`)
  t.equal(old.status, 200)
  t.match(old.body, { moduleVersion: '1.0.0', payload: { title: 'Boiler room', site: 'Leeds' } })
  const catalogue = await server.request('GET', '/api/v1/module-catalogue')
  t.match(
    catalogue.body.items.find((m: { key: string }) => m.key === 'permit'),
    { version: '1.1.0', installed: { version: '1.1.0' } },
    'the tenant moved to 1.1.0'
  )
})

t.test('a breaking release without a migration leaves the tenant on its version, the module 503', async (t) => {
  install({ ...v1, version: '2.0.0', fields: [v1.fields[0], v1.fields[2]] })
  const server = await start()
  t.teardown(() => server.close())
  const r = await server.request('GET', `/api/v1/records/${recordId}`)
  t.equal(r.status, 503)
  t.equal(r.body.code, 'module.unavailable')
  t.equal(
    (await server.request('POST', '/api/v1/records', { body: { moduleKey: 'permit', payload: { title: 'x' } } }))
      .status,
    503
  )
  t.match(await unavailableReason(server), [
    {
      key: 'permit',
      reason:
        /^permit 1\.1\.0 → 2\.0\.0 has breaking changes .*field "site": removed.*need a migration declared in the package/
    }
  ])
  const catalogue = await server.request('GET', '/api/v1/module-catalogue')
  t.match(
    catalogue.body.items.find((m: { key: string }) => m.key === 'permit'),
    { version: '2.0.0', installed: { version: '1.1.0' } }
  )
  t.equal((await server.request('GET', '/api/v1/records?moduleKey=incident')).status, 200, 'the other modules serve')
})

t.test('a downgrade is refused; the recorded version again serves', async (t) => {
  install(v1)
  const down = await start()
  t.equal((await down.request('GET', `/api/v1/records/${recordId}`)).status, 503)
  t.match(await unavailableReason(down), [{ key: 'permit', reason: /permit 1\.1\.0 → 1\.0\.0 refused: a downgrade/ }])
  await down.close()
  install(v1_1)
  const back = await start()
  t.teardown(() => back.close())
  const r = await back.request('GET', `/api/v1/records/${recordId}`)
  t.equal(r.status, 200, 'the version the tenant is on serves again')
})
