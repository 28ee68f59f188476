// tap: own process
import t from '../helpers/tap.ts'
import { setClock, syncClock } from '../../core/clock.ts'
import { systemScope } from '../../core/db/tenant-scope.ts'
import type { JobContext } from '../../core/jobs/index.ts'
import { recurrenceJob } from '../../plugins/recurrence/recurrence.job.ts'
import { fixtureModules } from '../helpers/fixture-modules.ts'
import { defaultTenants, startTestServer } from '../helpers/server.ts'

/**
 * Recurrence through two modules: an `audit` every day per `finding`, and a `finding` every day per `audit`. Were
 * each record one series makes to start a series of the other, the records made would grow without bound (2, 9, 76,
 * 1145 after one to four days from one record); records a series made start no series of their own.
 */
const audit = {
  key: 'audit',
  version: '1.0.0',
  title: 'Audit',
  numberPattern: 'AU-{seq:4}',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'finding', type: 'recordRef', module: 'finding' }
  ],
  workflow: { initial: 'open', states: [{ key: 'open' }, { key: 'done', final: true }], transitions: [] },
  permissions: { editor: ['read', 'create', 'update'] },
  recurrence: { every: 'day', per: 'finding', payload: { title: 'Follow-up audit' } }
}
const finding = {
  key: 'finding',
  version: '1.0.0',
  title: 'Finding',
  numberPattern: 'FI-{seq:4}',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'audit', type: 'recordRef', module: 'audit' }
  ],
  workflow: { initial: 'open', states: [{ key: 'open' }, { key: 'done', final: true }], transitions: [] },
  permissions: { editor: ['read', 'create', 'update'] },
  recurrence: { every: 'day', per: 'audit', payload: { title: 'Daily finding check' } }
}
const fixtures = fixtureModules([audit, finding])
t.teardown(fixtures.remove)
const server = await startTestServer({
  modules: { directories: ['tenant-modules', fixtures.directory], packages: [] },
  tenants: { ...defaultTenants, acme: { ...defaultTenants.acme, modules: ['incident', 'audit', 'finding'] } },
  clock: { controllable: true, refreshMs: 100 }
})
t.teardown(async () => {
  await setClock(server.platform.db.system, {})
  await server.close()
})
const day = 86_400_000
const job: JobContext = { touch: async () => undefined, signal: new AbortController().signal }
const seriesJob = recurrenceJob(server.platform)
const run = () => systemScope('test', () => seriesJob.run({}, job))
const count = async () =>
  Number(
    (
      await server.platform.db.system.query(
        `SELECT count(*) AS n FROM records WHERE tenant_id = 'acme' AND module_key IN ('audit', 'finding')`
      )
    ).rows[0].n
  )

t.test('two modules with a recurrence per record of each other do not multiply records day after day', async (t) => {
  const first = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'audit', payload: { title: 'Warehouse audit' } }
  })
  t.equal(first.status, 201)
  const perDay: number[] = []
  for (let d = 1; d <= 3; d++) {
    await setClock(server.platform.db.system, { offsetMs: d * day + 60_000 })
    await syncClock()
    await run()
    perDay.push(await count())
    t.comment(`day ${d}: ${perDay.at(-1)}`)
  }
  t.comment(`records after each day: ${perDay.join(', ')}`)
  t.ok(perDay.at(-1)! <= 1 + 2 * 3, 'at most one record a day per series the first record started, and its own')
})

t.test('a series started on a record made long ago makes one record at once, not one per period since', async (t) => {
  const old = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'finding', payload: { title: 'Finding from the archive' } }
  })
  t.equal(old.status, 201)
  await server.platform.db.system.query(
    `UPDATE records SET created_at = created_at - interval '2 years' WHERE tenant_id = 'acme' AND id = $1`,
    [old.body.id]
  )
  await run()
  await run()
  const { rows } = await server.platform.db.system.query(
    `SELECT count(*)::int AS n FROM records WHERE tenant_id = 'acme' AND module_key = 'audit' AND payload->>'finding' = $1`,
    [old.body.id]
  )
  t.same(rows, [{ n: 1 }], 'one audit now, then one a day, instead of two years of them')
})
