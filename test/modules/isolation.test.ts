import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import t from '../helpers/tap.ts'
import { fixtureModules } from '../helpers/fixture-modules.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * One bad module package never takes the service down: a package whose file does not load, one
 * whose host range refuses this platform and one whose definition is wrong sit beside the bundled
 * ones. The service starts, the good modules serve, and every call on a bad one answers 503
 * module.unavailable, its records kept; tenant admins read why at GET /api/v1/modules, and
 * readiness names the packages.
 */
const good = {
  key: 'permit',
  version: '1.0.0',
  title: 'Permit',
  numberPattern: 'PTW-{seq:4}',
  fields: [{ key: 'title', type: 'text', required: true }],
  workflow: { initial: 'open', states: [{ key: 'open' }], transitions: [] },
  permissions: { admin: ['read', 'create'] }
}
// Its transition leads to a state it does not declare.
const wrong = {
  ...good,
  key: 'wrong',
  numberPattern: 'WRG-{seq:4}',
  workflow: { initial: 'open', states: [{ key: 'open' }], transitions: [{ key: 'go', from: ['open'], to: 'gone' }] }
}
const fixtures = fixtureModules([good, wrong])
t.teardown(() => fixtures.remove())
const write = (key: string, manifest: Record<string, unknown>, source: string) => {
  mkdirSync(join(fixtures.directory, key))
  writeFileSync(
    join(fixtures.directory, key, 'package.json'),
    JSON.stringify({
      name: `@fixture/${key}`,
      type: 'module',
      'records-module': { entry: 'module.ts', key, ...manifest }
    })
  )
  writeFileSync(join(fixtures.directory, key, 'module.ts'), source)
}
write('broken', {}, "throw new Error('this package cannot start')\n")
write('incompatible', { host: '>=9.0.0' }, `export default ${JSON.stringify({ ...good, key: 'incompatible' })}\n`)

const server = await startTestServer({
  modules: { directories: ['tenant-modules', fixtures.directory] },
  tenants: {
    acme: { name: 'Acme', modules: ['incident', 'permit', 'broken', 'incompatible', 'wrong'] },
    globex: { name: 'Globex', modules: ['incident'] }
  }
})
t.teardown(() => server.close())
const bad = ['broken', 'incompatible', 'wrong']

t.test('the service starts and the good modules serve, bundled and packaged alike', async (t) => {
  const incident = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload() }
  })
  t.equal(incident.status, 201, 'a bundled module')
  const permit = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'permit', payload: { title: 'Hot work' } }
  })
  t.equal(permit.status, 201, 'a packaged module beside the bad ones')
  const other = await server.request('GET', '/api/v1/records?moduleKey=incident', { token: server.keys.globex })
  t.equal(other.status, 200, 'another tenant')
  // permit has no workflow transitions: its OpenAPI and GraphQL types must still be valid.
  const graphql = await server.request('POST', '/api/graphql', {
    body: { query: '{ modules { key } permits(first: 5) { nodes { number state } } }' }
  })
  t.equal(graphql.status, 200, JSON.stringify(graphql.body.errors))
  t.same(
    graphql.body.data?.modules.map((m: { key: string }) => m.key),
    ['incident', 'permit']
  )
  const doc = await server.request('GET', '/api/docs/spec.json')
  t.equal(doc.status, 200, 'the tenant document')
  t.notOk(JSON.stringify(doc.body).includes('"enum":[]'), 'no empty enum in it')
})

t.test('every call on a module whose package did not load answers 503 module.unavailable', async (t) => {
  for (const key of bad) {
    const calls: Array<[string, string, unknown?]> = [
      ['POST', '/api/v1/records', { moduleKey: key, payload: { title: 'x' } }],
      ['GET', `/api/v1/records?moduleKey=${key}`],
      ['GET', `/api/v1/modules/${key}`],
      ['POST', '/api/v1/exports', { moduleKey: key, format: 'csv' }]
    ]
    for (const [method, path, body] of calls) {
      const r = await server.request(method, path, { body })
      t.equal(r.status, 503, `${key}: ${method} ${path}`)
      t.match(r.headers.get('content-type'), /application\/problem\+json/)
      t.match(r.body, { code: 'module.unavailable', moduleKey: key, detail: /records are kept/ })
      t.notMatch(r.body.detail, /fixture|module\.ts|host/, 'the tenant is not told about the deployment files')
    }
    const bulk = await server.request('POST', `/api/modules/${key}/bulk`, {
      raw: '{"payload":{"title":"x"}}\n',
      headers: { 'content-type': 'application/x-ndjson' }
    })
    t.equal(bulk.status, 503, `${key}: bulk`)
  }
  const notInstalled = await server.request('GET', '/api/v1/records?moduleKey=broken', { token: server.keys.globex })
  t.equal(notInstalled.status, 404, 'a tenant that did not install the module still gets a 404')
})

t.test('a record written before its package broke answers 503, and is kept', async (t) => {
  const id = randomUUID()
  await server.platform.db.system.query(
    `INSERT INTO records (tenant_id, id, module_key, module_version, number, state, payload, created_by, updated_by)
     VALUES ('acme', $1, 'wrong', '1.0.0', 'WRG-0001', 'open', '{"title":"kept"}', '{}', '{}')`,
    [id]
  )
  for (const [method, path] of [
    ['GET', `/api/v1/records/${id}`],
    ['PATCH', `/api/v1/records/${id}`],
    ['DELETE', `/api/v1/records/${id}`]
  ]) {
    const r = await server.request(method, path, { body: method === 'PATCH' ? { payload: { title: 'y' } } : undefined })
    t.equal(r.status, 503, `${method} of the record`)
    t.equal(r.body.code, 'module.unavailable')
  }
  const { rows } = await server.platform.db.system.query('SELECT payload, deleted_at FROM records WHERE id = $1', [id])
  t.same(rows, [{ payload: { title: 'kept' }, deleted_at: null }], 'unchanged')
})

t.test('tenant admins read why at GET /api/v1/modules; readiness names the packages', async (t) => {
  const modules = await server.request('GET', '/api/v1/modules')
  t.equal(modules.status, 200)
  t.same(
    modules.body.items.map((m: { key: string }) => m.key),
    ['incident', 'permit']
  )
  t.match(modules.body.unavailable, [
    {
      key: 'broken',
      status: 'unavailable',
      reason: /^Module package "@fixture\/broken": module\.ts: cannot be loaded: this package cannot start/
    },
    {
      key: 'incompatible',
      status: 'unavailable',
      reason:
        /"@fixture\/incompatible": package\.json "records-module"\.host: ">=9\.0\.0" does not accept this platform version/
    },
    { key: 'wrong', status: 'unavailable', reason: /workflow transition "go": to names unknown state "gone"/ }
  ])
  const ready = await server.request('GET', '/readyz', { token: null })
  t.equal(ready.status, 200, 'ready: the other modules serve')
  t.match(ready.body.degraded, {
    modulePackages: [
      { package: '@fixture/broken', module: 'broken' },
      { package: '@fixture/incompatible', module: 'incompatible' },
      { package: '@fixture/wrong', module: 'wrong' }
    ]
  })
  t.notMatch(JSON.stringify(ready.body), /cannot start|>=9/, 'the reasons stay in the log and the modules endpoint')
})

t.test(
  'the catalogue offers every module that loaded, with its package and host range, and says which the tenant installed',
  async (t) => {
    const acme = await server.request('GET', '/api/v1/module-catalogue')
    t.equal(acme.status, 200)
    t.same(
      acme.body.items.map((m: { key: string }) => m.key),
      [
        'corrective-action',
        'environmental-monitoring',
        'incident',
        'inspection',
        'permit',
        'permit-to-work',
        'risk-assessment'
      ],
      'the loaded modules, not the ones whose package failed'
    )
    t.match(acme.body.items, [
      { key: 'corrective-action', installed: null, package: { name: '@qehs-modules/corrective-action' } },
      { key: 'environmental-monitoring', installed: null },
      { key: 'incident', title: 'Incident', version: '1.3.0', host: '>=0.1.0 <1.0.0', installed: { version: '1.3.0' } },
      { key: 'inspection', installed: null },
      { key: 'permit', package: { name: '@fixture/permit', version: '1.0.0' }, installed: { version: '1.0.0' } },
      { key: 'permit-to-work', installed: null, package: { name: '@qehs-modules/permit-to-work' } },
      { key: 'risk-assessment', installed: null }
    ])
    const globex = await server.request('GET', '/api/v1/module-catalogue', { token: server.keys.globex })
    t.same(
      globex.body.items.filter((m: { installed: unknown }) => m.installed).map((m: { key: string }) => m.key),
      ['incident'],
      'per tenant'
    )
    const graphql = await server.request('POST', '/api/graphql', {
      body: { query: '{ moduleCatalogue { key host package { name } installed { version } } }' }
    })
    t.same(
      graphql.body.data?.moduleCatalogue,
      acme.body.items.map((m: { key: string; host: string; package: { name: string }; installed: unknown }) => ({
        key: m.key,
        host: m.host,
        package: { name: m.package.name },
        installed: m.installed
      })),
      'GraphQL answers the same'
    )
  }
)
