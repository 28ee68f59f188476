// tap: own process (it spawns two service processes running the date jobs, and SIGKILLs one mid-run)
import t from '../helpers/tap.ts'
import { setClock } from '../../core/clock.ts'
import { fixtureModules } from '../helpers/fixture-modules.ts'
import { dateModules, dayAfter } from '../dates/fixtures.ts'
import { cluster } from './instances.ts'

/**
 * The date jobs on two instances at once, on the controllable clock both read from the database (core/clock.ts):
 * one `record.overdue` event per record and due date, a date-triggered transition fired once, and recurring records
 * made once per series and period, none missed, when the instance running the job is SIGKILLed mid-run.
 */
const fixtures = fixtureModules(dateModules)
t.teardown(fixtures.remove)
const c = await cluster({
  tenants: { acme: { name: 'Acme Chemicals', modules: ['incident', 'task', 'permit', 'review'] } },
  modules: { directories: ['tenant-modules', fixtures.directory], packages: [] },
  jobs: { enabled: true, processEverySeconds: 1, datesEverySeconds: 1 },
  clock: { controllable: true, refreshMs: 200 },
  limits: { requestsPerMinute: 100_000 }
})
t.teardown(() => c.close())
const instances = await Promise.all([c.start('a'), c.start('b')]).catch(async (err) => {
  await c.close()
  throw err
})
const { token } = await c.key('acme')
const day = 86_400_000
const count = async (sql: string, values: unknown[] = []) => (await c.pool.query(sql, values)).rows[0].n as number
/** Every job of `name` has run to its end at least `runs` more times (from the instances' job lines). */
const jobRuns = (name: string) =>
  instances
    .flatMap((i) => i.lines)
    .filter((l) => l.json?.msg === 'job' && l.json.job === name && l.json.outcome === 'done').length
const settle = async (name: string, runs = 3) => {
  const from = jobRuns(name)
  await c.until(`${runs} more runs of ${name}`, async () => jobRuns(name) >= from + runs, 60_000)
}

t.test('two instances write one record.overdue event per overdue record and due date', async (t) => {
  const today = new Date()
  const made = []
  for (let i = 0; i < 20; i++) {
    const res = await instances[i % 2].request('POST', '/api/v1/records', {
      token,
      body: { moduleKey: 'task', payload: { title: `Late ${i}`, dueDate: dayAfter(today, -1 - (i % 3)) } }
    })
    t.equal(res.status, 201)
    made.push(res.body.id)
  }
  await c.until('20 overdue events', async () =>
    (await count(`SELECT count(*)::int AS n FROM events WHERE type = 'record.overdue'`)) >= 20 ? true : false
  )
  await settle('records.overdue')
  t.equal(await count(`SELECT count(*)::int AS n FROM events WHERE type = 'record.overdue'`), 20, 'twenty events')
  t.equal(
    await count(`SELECT count(DISTINCT subject_id)::int AS n FROM events WHERE type = 'record.overdue'`),
    20,
    'one per record'
  )
  const list = await instances[1].request('GET', '/api/v1/records?moduleKey=task&overdue=true&limit=100', { token })
  t.equal(list.body.items.length, 20, 'and the list filter agrees')
})

t.test('a date-triggered transition fires once when the shared clock passes its date', async (t) => {
  const permit = await instances[0].request('POST', '/api/v1/records', {
    token,
    body: {
      moduleKey: 'permit',
      payload: { title: 'Hot work', validTo: new Date(Date.now() + 3_600_000).toISOString() }
    }
  })
  t.equal(permit.status, 201)
  await settle('records.auto-transitions', 2)
  t.equal((await instances[1].request('GET', `/api/v1/records/${permit.body.id}`, { token })).body.state, 'active')
  await setClock(c.pool, { offsetMs: 2 * 3_600_000 })
  await c.until(
    'the permit expired',
    async () =>
      (await instances[1].request('GET', `/api/v1/records/${permit.body.id}`, { token })).body.state === 'expired'
  )
  await settle('records.auto-transitions')
  t.equal(
    await count(`SELECT count(*)::int AS n FROM events WHERE type = 'record.transitioned' AND subject_id = $1`, [
      permit.body.id
    ]),
    1,
    'one transition'
  )
})

t.test('a SIGKILL mid-run neither doubles nor loses a recurring record', async (t) => {
  await c.until('the series of both sites', async () =>
    (await count(`SELECT count(*)::int AS n FROM record_series WHERE module_key = 'task'`)) === 2 ? true : false
  )
  const starts = (await c.pool.query(`SELECT max(starts_at) AS at FROM record_series WHERE module_key = 'task'`))
    .rows[0].at as Date
  // 25 months on: 25 records per site (12 a run at most, so three runs), and two annual reviews per task.
  const target = new Date(starts.getTime() + 25 * 31 * day - 3 * day)
  await setClock(c.pool, { offsetMs: target.getTime() - Date.now() })
  // The instance running the job once it has committed part of the catch-up (12 periods a series and run: the rest is
  // left to the runs after).
  const holder = await c.until(
    'a run of recurrence.create part-way through',
    async () => {
      const { rows } = await c.pool.query(
        `SELECT j.last_modified_by AS name, (SELECT count(*)::int FROM record_series_periods p JOIN record_series s ON s.tenant_id = p.tenant_id AND s.id = p.series_id
                  WHERE s.module_key = 'task') AS made
           FROM agenda_jobs j WHERE j.name = 'recurrence.create' AND j.locked_at IS NOT NULL`
      )
      return rows[0]?.made > 0 && rows[0].made < 50 ? (rows[0].name as string) : undefined
    },
    60_000
  )
  const victim = instances.find((i) => holder.split(':')[1] === String(i.process.pid))!
  victim.process.kill('SIGKILL')
  await victim.exited
  const survivor = instances.find((i) => i !== victim)!
  const atKill = await count(`SELECT count(*)::int AS n FROM record_series_periods`)
  t.comment(`killed instance ${victim.name} mid-run; ${atKill} periods made by then`)
  const inspections = (site: string) =>
    count(
      `SELECT count(*)::int AS n FROM records WHERE module_key = 'task' AND payload->>'site' = $1 AND payload->>'title' = 'Monthly site inspection'`,
      [site]
    )
  await c.until(
    'the survivor catches up',
    async () => (await inspections('north')) >= 25 && (await inspections('south')) >= 25,
    90_000
  )
  await settle('recurrence.create')
  t.same([await inspections('north'), await inspections('south')], [25, 25], 'twenty-five per site, none twice')
  const periods = await c.pool.query(
    `SELECT s.per_value, array_agg(p.period ORDER BY p.period) AS periods FROM record_series s
       JOIN record_series_periods p ON p.tenant_id = s.tenant_id AND p.series_id = s.id
      WHERE s.module_key = 'task' GROUP BY s.per_value ORDER BY 1`
  )
  const all = Array.from({ length: 25 }, (_, i) => i + 1)
  t.same(periods.rows, [
    { per_value: 'north', periods: all },
    { per_value: 'south', periods: all }
  ])
  const reviews = await c.pool.query(
    `SELECT payload->>'task' AS task, count(*)::int AS n FROM records WHERE module_key = 'review' GROUP BY 1 HAVING count(*) <> 2`
  )
  t.same(reviews.rows, [], 'every task that had a series from the start has its two annual reviews, none more')
  const list = await survivor.request('GET', '/api/v1/record-series?moduleKey=task', { token })
  t.same(
    list.body.items.map((s: { made: number }) => s.made),
    [25, 25]
  )
})
