// tap: own process
import t from '../helpers/tap.ts'
import { setClock, syncClock } from '../../core/clock.ts'
import { systemScope } from '../../core/db/tenant-scope.ts'
import { logger } from '../../core/logger.ts'
import type { JobContext } from '../../core/jobs/index.ts'
import { recurrenceJob } from '../../plugins/recurrence/recurrence.job.ts'
import { fixtureModules } from '../helpers/fixture-modules.ts'
import { defaultTenants, startTestServer } from '../helpers/server.ts'

/**
 * Recurrence, a refused recurring record: one module whose recurring record its own rules refuse must not stop every
 * other module's and every other tenant's series. Load refuses a module whose rules refuse its recurrence payload
 * (test/dates/definitions.test.ts); a rule that reads today() is left to the job, so `drill`'s rule does, and refuses
 * every record the series makes.
 */
const drill = {
  key: 'drill',
  version: '1.0.0',
  title: 'Fire drill',
  numberPattern: 'DR-{seq:4}',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'leader', type: 'text' }
  ],
  workflow: { initial: 'planned', states: [{ key: 'planned' }, { key: 'held', final: true }], transitions: [] },
  permissions: { editor: ['read', 'create', 'update'] },
  rules: [
    { check: "has(leader) or today() < date('2000-01-01')", message: 'a drill needs a leader', fields: ['leader'] }
  ],
  recurrence: { every: 'day', payload: { title: 'Daily fire drill' } }
}
const walk = {
  key: 'walk',
  version: '1.0.0',
  title: 'Safety walk',
  numberPattern: 'SW-{seq:4}',
  fields: [{ key: 'title', type: 'text', required: true }],
  workflow: { initial: 'planned', states: [{ key: 'planned' }, { key: 'done', final: true }], transitions: [] },
  permissions: { editor: ['read', 'create', 'update'] },
  recurrence: { every: 'day', payload: { title: 'Daily safety walk' } }
}
// A recurring record naming an incident that is not there: refused as a client's create would be, by its reference.
const audit = {
  key: 'audit',
  version: '1.0.0',
  title: 'Incident audit',
  numberPattern: 'AU-{seq:4}',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'incident', type: 'recordRef', module: 'incident' }
  ],
  workflow: { initial: 'planned', states: [{ key: 'planned' }, { key: 'done', final: true }], transitions: [] },
  permissions: { editor: ['read', 'create', 'update'] },
  recurrence: { every: 'day', payload: { title: 'Daily audit', incident: '00000000-0000-4000-8000-00000000abcd' } }
}
const fixtures = fixtureModules([drill, walk, audit])
t.teardown(fixtures.remove)
const server = await startTestServer({
  modules: { directories: ['tenant-modules', fixtures.directory], packages: [] },
  tenants: {
    ...defaultTenants,
    acme: { ...defaultTenants.acme, modules: ['incident', 'drill', 'walk', 'audit'] },
    globex: { ...defaultTenants.globex, modules: ['incident', 'walk'] }
  },
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
const walks = async (tenant: 'acme' | 'globex') => {
  const res = await server.request('GET', '/api/v1/records?moduleKey=walk&limit=100', { token: server.keys[tenant] })
  if (res.status !== 200) throw new Error(`${res.status} ${res.text}`)
  return res.body.items.length as number
}

t.test(
  "a recurring record one module's rules refuse does not stop the other modules' and tenants' series",
  async (t) => {
    await run()
    await setClock(server.platform.db.system, { offsetMs: 2 * day + 60_000 })
    await syncClock()
    const warnings: Array<[string, Record<string, unknown> | undefined]> = []
    const warn = logger.warn
    logger.warn = (msg, fields) => {
      warnings.push([msg, fields])
      warn(msg, fields)
    }
    t.teardown(() => {
      logger.warn = warn
    })
    let failure: unknown
    try {
      await run()
      await run()
    } catch (err) {
      failure = err
    }
    t.equal(failure, undefined, 'the job run does not fail as a whole')
    t.equal(await walks('acme'), 2, "acme's daily walks are made beside its refused drill")
    t.equal(await walks('globex'), 2, 'globex, which has no drill module, gets its daily walks')
    const refused = warnings.filter(([msg, f]) => msg === 'recurring record refused' && f?.module === 'drill')
    t.equal(refused.length, 1, 'the refusal is logged once for its series and period, not at every run')
    t.match(refused[0]?.[1], {
      tenantId: 'acme',
      module: 'drill',
      series: String,
      period: 1,
      error: /a drill needs a leader/
    })
    const { rows } = await server.platform.db.system.query(
      `SELECT next_period, state FROM record_series WHERE tenant_id = 'acme' AND module_key = 'drill'`
    )
    t.same(rows, [{ next_period: 1, state: 'active' }], 'the series waits at the refused period, to make it once fixed')
    // A reference to a record that is not there is refused as on every other write path, and nothing is made.
    t.match(warnings.find(([msg, f]) => msg === 'recurring record refused' && f?.module === 'audit')?.[1], {
      tenantId: 'acme',
      module: 'audit',
      error: /Validation failed|incident/
    })
    const audits = await server.request('GET', '/api/v1/records?moduleKey=audit', { token: server.keys.acme })
    t.same(audits.body.items, [], 'no audit naming a missing incident')
  }
)
