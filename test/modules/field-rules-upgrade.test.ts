// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import { readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import { freshDatabase } from '../helpers/database.ts'
import { fixtureModules, writeModulePackage } from '../helpers/fixture-modules.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'

/**
 * A computed field's formula changed between two versions of a module (docs/modules.md, "Computed fields"): stored
 * values follow the old formula, so the release needs a migration (it may have no steps), and every record that
 * migration moves is computed afresh: read at once, written on the record's next write or by the background job,
 * after which lists filter on the new value.
 */
const v1 = {
  key: 'hazard',
  version: '1.0.0',
  title: 'Hazard',
  numberPattern: 'HZ-{seq:4}',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'likelihood', type: 'integer', minimum: 1, maximum: 5, required: true },
    { key: 'severity', type: 'integer', minimum: 1, maximum: 5, required: true },
    { key: 'riskRating', type: 'integer', computed: 'likelihood * severity', filterable: true }
  ],
  workflow: { initial: 'open', states: [{ key: 'open' }], transitions: [] },
  permissions: { admin: ['read', 'create', 'update'] }
}
/** The rating now weighs severity double. */
const v2 = {
  ...v1,
  version: '2.0.0',
  fields: [...v1.fields.slice(0, 3), { ...v1.fields[3], computed: 'likelihood * severity * 2' }]
}
const fixtures = fixtureModules([])
const db = await freshDatabase()
t.teardown(async () => {
  fixtures.remove()
  await db.drop()
  setTimeout(() => process.exit(), 200).unref()
})
let installs = 0
const install = (definition: Record<string, unknown> & { key: string }, source = '') => {
  for (const entry of readdirSync(fixtures.directory)) rmSync(join(fixtures.directory, entry), { recursive: true })
  writeModulePackage(join(fixtures.directory, `hazard-${++installs}`), definition, { source })
}
const start = (jobs = false): Promise<TestServer> =>
  startTestServer({
    database: { url: db.url },
    modules: { directories: ['tenant-modules', fixtures.directory] },
    tenants: { acme: { name: 'Acme', modules: ['hazard'] } },
    jobs: { enabled: jobs, processEverySeconds: 1 }
  })
const stored = async (server: TestServer, id: string) =>
  (await server.platform.db.system.query('SELECT module_version, payload FROM records WHERE id = $1', [id])).rows[0]

const ids: string[] = []
t.test('version 1.0.0 stores its computed values', async (t) => {
  install(v1)
  const server = await start()
  t.teardown(() => server.close())
  for (const [likelihood, severity] of [
    [2, 3],
    [1, 4]
  ]) {
    const r = await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'hazard', payload: { title: 'Stairs', likelihood, severity } }
    })
    t.equal(r.status, 201)
    ids.push(r.body.id)
  }
  t.equal((await stored(server, ids[0])).payload.riskRating, 6)
})

t.test('a changed formula without a migration is refused: the tenant stays on 1.0.0', async (t) => {
  install(v2)
  const server = await start()
  t.teardown(() => server.close())
  const { unavailable } = (await server.request('GET', '/api/v1/modules')).body
  t.match(unavailable, [{ key: 'hazard', reason: /computed likelihood \* severity → likelihood \* severity \* 2/ }])
})

t.test('with a migration, a record reads with the new formula at once and stores it on its next write', async (t) => {
  install(v2, "export const migrations = [{ from: '^1.0.0', to: '2.0.0', steps: [] }]")
  const server = await start()
  t.teardown(() => server.close())
  const read = await server.request('GET', `/api/v1/records/${ids[0]}`)
  t.match(read.body, { moduleVersion: '2.0.0', payload: { riskRating: 12 } })
  t.match(await stored(server, ids[0]), { module_version: '1.0.0', payload: { riskRating: 6 } }, 'a read wrote nothing')
  const patched = await server.request('PATCH', `/api/v1/records/${ids[0]}`, {
    body: { payload: { title: 'Stair well' } }
  })
  t.equal(patched.status, 200)
  t.match(patched.body.activity.slice(-2), [
    { action: 'migrated', changes: [{ field: 'riskRating', from: 6, to: 12 }] },
    { action: 'updated', changes: [{ field: 'title' }] }
  ])
  t.match(await stored(server, ids[0]), { module_version: '2.0.0', payload: { riskRating: 12 } })
})

t.test('the background job moves the rest, computed afresh; lists then filter on the new values', async (t) => {
  const server = await start(true)
  t.teardown(() => server.close())
  const deadline = Date.now() + 60_000
  while ((await stored(server, ids[1])).module_version !== '2.0.0' && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 250))
  t.match(await stored(server, ids[1]), { module_version: '2.0.0', payload: { riskRating: 8 } })
  const list = await server.request('GET', '/api/v1/records?moduleKey=hazard&payload[riskRating][in]=8,12')
  t.same(list.body.items.map((r: { id: string }) => r.id).sort(), [...ids].sort())
})
