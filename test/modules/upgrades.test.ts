// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import { readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import { freshDatabase } from '../helpers/database.ts'
import { fixtureModules, writeModulePackage, permitMigrations } from '../helpers/fixture-modules.ts'
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
const db = await freshDatabase()
// The job scheduler of the starts with jobs leaves a timer behind: the process ends after the teardown.
t.teardown(async () => {
  fixtures.remove()
  await db.drop()
  setTimeout(() => process.exit(), 200).unref()
})

/**
 * Replaces the fixture package with another version of it, as installing another version would. Each version gets a
 * folder of its own: this process's module cache would otherwise serve the first file again (a restarted service
 * reads the new one).
 */
let installs = 0
const install = (definition: Record<string, unknown> & { key: string }, migrations = '') => {
  for (const entry of readdirSync(fixtures.directory)) rmSync(join(fixtures.directory, entry), { recursive: true })
  writeModulePackage(join(fixtures.directory, `permit-${++installs}`), definition, { source: migrations })
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
        /^permit 1\.1\.0 → 2\.0\.0 refused: 3 breaking change\(s\) need a migration from 1\.1\.0 declared in the package.*field "site": removed/
    }
  ])
  const catalogue = await server.request('GET', '/api/v1/module-catalogue')
  t.match(
    catalogue.body.items.find((m: { key: string }) => m.key === 'permit'),
    { version: '2.0.0', installed: { version: '1.1.0' } }
  )
  t.equal((await server.request('GET', '/api/v1/records?moduleKey=incident')).status, 200, 'the other modules serve')
  const ready = await server.request('GET', '/readyz', { token: null })
  t.equal(ready.status, 200, 'ready: the other modules serve')
  t.same(
    ready.body.degraded,
    { moduleUpgradesRefused: [{ module: 'permit', tenants: 1 }] },
    'operators see it on /readyz'
  )
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

/**
 * 2.0.0 renames a field, a choice value and a state, and adds a required field; its package declares the migration
 * from ^1.0.0. Defined after the tests above left the tenant on 1.1.0 with one record.
 */
const v2 = {
  ...v1,
  version: '2.0.0',
  fields: [
    v1.fields[0],
    { key: 'location', type: 'text' },
    { key: 'kind', type: 'singleChoice', options: ['hot', 'height', 'confined-space'] },
    { key: 'notes', type: 'longText' },
    { key: 'risk', type: 'singleChoice', options: ['low', 'high'], required: true }
  ],
  workflow: {
    initial: 'active',
    states: [{ key: 'active' }, { key: 'closed' }],
    transitions: [{ key: 'close', from: ['active'], to: 'closed' }]
  },
  permissions: { admin: ['read', 'create', 'update', 'transition:close'] }
}
// Not idempotent on purpose: a migration applied twice to one record would show a second mark.
const v2Migrations = permitMigrations(
  "(r) => ({ ...r, payload: { ...r.payload, title: r.payload.title.trim(), notes: (r.payload.notes ?? '') + '↑' } })"
)

t.test('a breaking release whose migration does not answer every change is refused, naming the change', async (t) => {
  install(
    v2,
    `export const migrations = [{ from: '^1.0.0', to: '2.0.0', steps: [{ op: 'renameField', from: 'site', to: 'location' }] }]\n`
  )
  const server = await start()
  t.teardown(() => server.close())
  t.equal((await server.request('GET', `/api/v1/records/${recordId}`)).status, 503)
  t.match(await unavailableReason(server), [
    {
      key: 'permit',
      reason:
        /do not answer 3 breaking change\(s\): field "kind": option "hot-work" removed; field "risk": added as required; workflow state "open": removed/
    }
  ])
})

let movedOnWrite = ''
let oddId = ''
t.test(
  'with its migration, 2.0.0 serves at once: a record not yet moved reads as 2.0.0 and moves on its first write',
  async (t) => {
    install(v2, v2Migrations)
    const server = await start()
    t.teardown(() => server.close())
    t.same(await unavailableReason(server), [])
    const old = await server.request('GET', `/api/v1/records/${recordId}`)
    t.equal(old.status, 200)
    t.match(old.body, {
      moduleVersion: '2.0.0',
      state: 'active',
      payload: { title: 'Boiler room', location: 'Leeds', kind: 'hot', risk: 'low' },
      availableTransitions: [{ key: 'close' }]
    })
    t.notOk('site' in old.body.payload, 'the old key is gone from the answer')
    const stored = await server.platform.db.system.query('SELECT module_version, payload FROM records WHERE id = $1', [
      recordId
    ])
    t.match(stored.rows[0], { module_version: '1.0.0', payload: { site: 'Leeds' } }, 'a read wrote nothing')
    const listed = await server.request('GET', '/api/v1/records?moduleKey=permit')
    t.match(listed.body.items[0], { payload: { location: 'Leeds', kind: 'hot' } }, 'a list shows it as 2.0.0 too')
    const gql = await server.request('POST', '/api/graphql', {
      body: { query: `{ record(id: "${recordId}") { ... on Permit { state payload { location kind risk } } } }` }
    })
    t.same(
      gql.body,
      { data: { record: { state: 'active', payload: { location: 'Leeds', kind: 'HOT', risk: 'LOW' } } } },
      'GraphQL answers it as 2.0.0 too, without errors'
    )

    const patched = await server.request('PATCH', `/api/v1/records/${recordId}`, {
      body: { payload: { notes: 'Checked' } },
      headers: { 'if-match': old.headers.get('etag')! }
    })
    t.equal(patched.status, 200, 'an unrelated PATCH of the old record passes')
    t.match(patched.body, { moduleVersion: '2.0.0', payload: { location: 'Leeds', notes: 'Checked', risk: 'low' } })
    t.match(
      patched.body.activity.slice(-2),
      [
        {
          action: 'migrated',
          actor: { type: 'system', id: 'module-migration' },
          comment: /1\.0\.0 to 2\.0\.0; state open → active/
        },
        { action: 'updated', changes: [{ field: 'notes', from: '↑', to: 'Checked' }] }
      ],
      'the move and the change are two entries'
    )
    const events = await server.platform.db.system.query(
      "SELECT type, data FROM events WHERE subject_id = $1 AND type = 'record.migrated'",
      [recordId]
    )
    t.match(events.rows, [{ data: { migration: { from: '1.0.0', to: '2.0.0' } } }], 'one record.migrated event')
    movedOnWrite = recordId
  }
)

t.test(
  'the background job moves the records left behind, and the module shows its progress to tenant admins',
  async (t) => {
    const seeded = await startWithJobs(false)
    // Records of 1.1.0 written straight into the table, as the tenant had them before the upgrade.
    await seeded.platform.db.system.query(
      `INSERT INTO records (tenant_id, id, module_key, module_version, number, state, payload, created_by, updated_by)
     SELECT 'acme', gen_random_uuid(), 'permit', '1.1.0', 'OLD-' || g, 'open',
            jsonb_build_object('title', ' Permit ' || g || ' ', 'site', 'Site ' || g, 'kind', 'hot-work'),
            '{"type":"system","id":"seed","name":"seed"}', '{"type":"system","id":"seed","name":"seed"}'
       FROM generate_series(1, 1200) g`
    )
    // One the new version refuses: a title the transform cannot trim (not a string).
    await seeded.platform.db.system.query(
      `INSERT INTO records (tenant_id, id, module_key, module_version, number, state, payload, created_by, updated_by)
     VALUES ('acme', gen_random_uuid(), 'permit', '1.1.0', 'OLD-BAD', 'open', '{"title": 7}', '{"type":"system","id":"seed","name":"seed"}', '{"type":"system","id":"seed","name":"seed"}')`
    )
    // And one the migration moves but 2.0.0 refuses: a choice value no version has.
    const odd = (
      await seeded.platform.db.system.query(
        `INSERT INTO records (tenant_id, id, module_key, module_version, number, state, payload, created_by, updated_by)
       VALUES ('acme', gen_random_uuid(), 'permit', '1.1.0', 'OLD-ODD', 'open', '{"title": "Odd", "site": "Hull", "kind": "welding"}', '{"type":"system","id":"seed","name":"seed"}', '{"type":"system","id":"seed","name":"seed"}')
       RETURNING id`
      )
    ).rows[0].id
    await seeded.close()
    const server = await startWithJobs(true)
    t.teardown(() => server.close())
    const migration = await migrationDone(server)
    t.match(migration, {
      toVersion: '2.0.0',
      state: 'done',
      total: 1202,
      migrated: 1200,
      refused: 2,
      remaining: 2,
      refusals: [
        { number: 'OLD-BAD', fromVersion: '1.1.0', reason: /the migration refused it/ },
        { number: 'OLD-ODD', fromVersion: '1.1.0', reason: /payload\.kind must be one of: hot, height, confined-space/ }
      ]
    })
    const { rows } = await server.platform.db.system.query(
      `SELECT module_version, count(*)::int AS n, count(*) FILTER (WHERE payload ? 'site' OR state = 'open')::int AS stale
       FROM records WHERE tenant_id = 'acme' AND module_key = 'permit' GROUP BY module_version ORDER BY module_version`
    )
    t.same(rows, [
      { module_version: '1.1.0', n: 2, stale: 2 },
      { module_version: '2.0.0', n: 1201, stale: 0 }
    ])
    const activity = await server.platform.db.system.query(
      `SELECT count(*)::int AS n FROM record_activity a JOIN records r ON r.tenant_id = a.tenant_id AND r.id = a.record_id
      WHERE r.number LIKE 'OLD-%' AND a.action = 'migrated'`
    )
    t.equal(activity.rows[0].n, 1200, 'one migrated entry per moved record')
    const moved = await server.request('GET', `/api/v1/records/${movedOnWrite}`)
    t.equal(
      moved.body.activity.filter((a: { action: string }) => a.action === 'migrated').length,
      1,
      'a record moved on write is not moved again'
    )
    // Over REST, refused records say so (migrationRefused), as the OpenAPI document describes them (the contract check
    // of every response runs when the server closes).
    const bad = await server.request('GET', '/api/v1/records?moduleKey=permit&number=OLD-BAD')
    t.match(
      bad.body.items[0],
      {
        moduleVersion: '1.1.0',
        state: 'active',
        payload: { title: 7, risk: 'low' },
        migrationRefused: { fromVersion: '1.1.0', reason: /the migration refused it/ }
      },
      'a record whose migration failed reads as its steps leave it'
    )
    const restOdd = await server.request('GET', `/api/v1/records/${odd}`)
    t.match(
      restOdd.body,
      {
        moduleVersion: '1.1.0',
        state: 'active',
        payload: { kind: 'welding', location: 'Hull' },
        migrationRefused: { fromVersion: '1.1.0', reason: /payload\.kind/ }
      },
      'one the new version refuses reads as far as the migration took it'
    )
    t.notOk(
      'migrationRefused' in (await server.request('GET', `/api/v1/records/${movedOnWrite}`)).body,
      'a moved one does not'
    )
    const gql = await server.request('POST', '/api/graphql', {
      body: {
        query: `{ record(id: "${odd}") { moduleVersion state migrationRefused { fromVersion } ... on Permit { payload { title location kind risk notes } } } }`
      }
    })
    t.same(
      gql.body,
      {
        data: {
          record: {
            moduleVersion: '1.1.0',
            state: 'active',
            migrationRefused: { fromVersion: '1.1.0' },
            payload: { title: 'Odd', location: 'Hull', kind: null, risk: 'LOW', notes: '↑' }
          }
        }
      },
      'GraphQL reads a refused record as far as its migration took it (once), without the value no option has, and no error'
    )
    oddId = odd
  }
)

/** The permit module's migration as its tenant admin sees it, once the job has finished it (or after a minute). */
async function migrationDone(server: TestServer) {
  const deadline = Date.now() + 60_000
  let migration
  do {
    await new Promise((r) => setTimeout(r, 250))
    migration = (await server.request('GET', '/api/v1/modules/permit')).body.migration
  } while (migration?.state !== 'done' && Date.now() < deadline)
  return migration
}

/** A start with the job scheduler on (the migration job), or off. */
function startWithJobs(enabled: boolean) {
  return startTestServer({
    database: { url: db.url },
    modules: { directories: ['tenant-modules', fixtures.directory] },
    tenants: { acme: { name: 'Acme', modules: ['incident', 'permit'] } },
    jobs: { enabled, processEverySeconds: 1 }
  })
}

t.test('a record the new version refuses takes only a write that makes it valid, which moves it first', async (t) => {
  const server = await startWithJobs(false)
  t.teardown(() => server.close())
  const unrelated = await server.request('PATCH', `/api/v1/records/${oddId}`, { body: { payload: { notes: 'x' } } })
  t.equal(unrelated.status, 400, 'a PATCH that leaves it invalid is refused as any invalid payload is')
  t.equal(unrelated.body.code, 'field.invalid')
  t.match(unrelated.body.detail, /kind must be one of/)
  const close = await server.request('POST', `/api/v1/records/${oddId}:transition`, { body: { transition: 'close' } })
  t.equal(close.status, 409, 'nor a transition that leaves it invalid')
  t.equal(close.body.code, 'record.migration_refused')
  t.match(close.body.detail, /version 2\.0\.0 refuses it as its migration leaves it: payload\.kind/)
  const stored = await server.platform.db.system.query('SELECT module_version, state FROM records WHERE id = $1', [
    oddId
  ])
  t.same(stored.rows[0], { module_version: '1.1.0', state: 'open' }, 'nothing written')

  const fixed = await server.request('PATCH', `/api/v1/records/${oddId}`, { body: { payload: { kind: 'height' } } })
  t.equal(fixed.status, 200, JSON.stringify(fixed.body))
  t.match(fixed.body, {
    moduleVersion: '2.0.0',
    state: 'active',
    payload: { kind: 'height', location: 'Hull', notes: '↑' }
  })
  t.match(fixed.body.activity.slice(-2), [
    { action: 'migrated', actor: { id: 'module-migration' } },
    { action: 'updated', changes: [{ field: 'kind', from: 'welding', to: 'height' }] }
  ])
  const migration = (await server.request('GET', '/api/v1/modules/permit')).body.migration
  t.match(migration, { state: 'done', remaining: 1, refusals: [{ number: 'OLD-BAD' }] }, 'no longer listed as refused')

  // One whose migration failed outright: a delete removes it as it is stored, under its own version.
  const bad = (await server.request('GET', '/api/v1/records?moduleKey=permit&number=OLD-BAD')).body.items[0]
  const removed = await server.request('DELETE', `/api/v1/records/${bad.id}`)
  t.equal(removed.status, 200, JSON.stringify(removed.body))
  const gone = await server.platform.db.system.query(
    'SELECT module_version, payload, deleted_at IS NOT NULL AS deleted FROM records WHERE id = $1',
    [bad.id]
  )
  t.same(gone.rows[0], { module_version: '1.1.0', payload: { title: 7 }, deleted: true })
  t.match((await server.request('GET', '/api/v1/modules/permit')).body.migration, { remaining: 0, refusals: [] })
})

t.test('a compatible release that keeps the migrations moves what is left and finishes', async (t) => {
  install({ ...v2, version: '2.1.0', fields: [...v2.fields, { key: 'permitHolder', type: 'user' }] }, v2Migrations)
  const server = await startWithJobs(true)
  t.teardown(() => server.close())
  const migration = await migrationDone(server)
  // The records of 2.0.0 are not moved again (they differ only compatibly), and the run ends.
  t.match(migration, { toVersion: '2.1.0', state: 'done', total: 0, migrated: 0, refused: 0, remaining: 0 })
  const { rows } = await server.platform.db.system.query(
    "SELECT module_version, count(*)::int AS n FROM records WHERE module_key = 'permit' GROUP BY 1 ORDER BY 1"
  )
  t.same(rows, [
    { module_version: '1.1.0', n: 1 },
    { module_version: '2.0.0', n: 1202 }
  ])
})

t.test(
  'a definition changed under the version the tenant is on is refused; one no tenant is on may be corrected',
  async (t) => {
    install(
      { ...v2, version: '2.1.0', fields: v2.fields.slice(0, 4).concat({ key: 'risk', type: 'text', required: true }) },
      v2Migrations
    )
    const server = await start()
    t.teardown(() => server.close())
    t.match(await unavailableReason(server), [
      {
        key: 'permit',
        reason: /permit 2\.1\.0 → 2\.1\.0 refused: the definition changed but its version is still 2\.1\.0/
      }
    ])
  }
)

t.test("a release must take every version the tenant's records may be under, not only the tenant's own", async (t) => {
  const v2_1 = { ...v2, version: '2.1.0', fields: [...v2.fields, { key: 'permitHolder', type: 'user' }] }
  const v3 = {
    ...v2_1,
    version: '3.0.0',
    fields: v2_1.fields.map((f) => (f.key === 'notes' ? { ...f, key: 'remarks' } : f))
  }
  const fromTwo = `{ from: '^2.0.0', to: '3.0.0', steps: [{ op: 'renameField', from: 'notes', to: 'remarks' }] }`
  // The runs so far moved every record off 1.x, so the tenant is no longer held to it; a record of 1.1.0 that is still
  // stored (as one the job had not reached would be) puts 1.1.0 back among the versions it was on.
  const seeded = await start()
  const { rows } = await seeded.platform.db.system.query(
    `INSERT INTO records (tenant_id, id, module_key, module_version, number, state, payload, created_by, updated_by)
     VALUES ('acme', gen_random_uuid(), 'permit', '1.1.0', 'OLD-LATE', 'open', '{"title": "Late", "site": "York", "notes": "n"}',
             '{"type":"system","id":"seed","name":"seed"}', '{"type":"system","id":"seed","name":"seed"}') RETURNING id`
  )
  await seeded.platform.db.system.query(
    "UPDATE tenant_modules SET versions = versions || '{1.1.0}' WHERE tenant_id = 'acme' AND module_key = 'permit'"
  )
  await seeded.close()
  install(v3, `export const migrations = [${fromTwo}]\n`)
  const refused = await start()
  t.match(await unavailableReason(refused), [
    {
      key: 'permit',
      reason:
        /permit 1\.1\.0 → 3\.0\.0 refused: .*need a migration from 1\.1\.0.*records written under 1\.1\.0, a version this tenant was on, may still be stored/
    }
  ])
  await refused.close()
  install(v3, v2Migrations.replace(/\]\s*$/, `, ${fromTwo}]\n`))
  const server = await start()
  t.teardown(() => server.close())
  t.same(await unavailableReason(server), [], 'with migrations from 1.x and 2.x it applies')
  const r = await server.request('GET', `/api/v1/records/${movedOnWrite}`)
  t.match(r.body, { moduleVersion: '3.0.0', payload: { remarks: 'Checked' } })
  const late = await server.request('GET', `/api/v1/records/${rows[0].id}`)
  t.match(
    late.body,
    { moduleVersion: '3.0.0', state: 'active', payload: { location: 'York', remarks: 'n↑', risk: 'low' } },
    'a record of 1.1.0 reads through both migrations'
  )
})
