import pg from 'pg'
import t from '../helpers/tap.ts'
import { setClock, syncClock, clock } from '../../core/clock.ts'
import { systemScope } from '../../core/db/tenant-scope.ts'
import type { JobContext } from '../../core/jobs/index.ts'
import { dateJobs, overdueCondition } from '../../plugins/records/records.due.ts'
import { declaredIndexes } from '../../plugins/records/records.indexes.ts'
import { recurrenceJob } from '../../plugins/recurrence/recurrence.job.ts'
import { fixtureModules } from '../helpers/fixture-modules.ts'
import { userWithToken } from '../helpers/identity.ts'
import { defaultTenants, startTestServer } from '../helpers/server.ts'
import { dateModules, dayAfter } from './fixtures.ts'

/**
 * Due dates, overdue, date-triggered transitions and recurrence on one instance, on the controllable clock
 * (core/clock.ts): the jobs are run here one pass at a time (test/instances/dates.test.ts runs them on two instances).
 */
const fixtures = fixtureModules(dateModules)
t.teardown(fixtures.remove)
const server = await startTestServer({
  modules: { directories: ['tenant-modules', fixtures.directory], packages: [] },
  tenants: { ...defaultTenants, acme: { ...defaultTenants.acme, modules: ['incident', 'task', 'permit', 'review'] } },
  clock: { controllable: true, refreshMs: 100 }
})
t.teardown(async () => {
  await setClock(server.platform.db.system, {})
  await server.close()
})
const day = 86_400_000
const moveClock = async (offsetMs: number) => {
  await setClock(server.platform.db.system, { offsetMs })
  await syncClock()
}
const job: JobContext = { touch: async () => undefined, signal: new AbortController().signal }
const [overdueJob, autoJob] = dateJobs(server.platform)
const seriesJob = recurrenceJob(server.platform)
const run = (j: { run: (d: Record<string, unknown>, c: JobContext) => Promise<unknown> }) =>
  systemScope('test', () => j.run({}, job))

const create = async (moduleKey: string, payload: Record<string, unknown>) => {
  const res = await server.request('POST', '/api/v1/records', { body: { moduleKey, payload } })
  if (res.status !== 201) throw new Error(`setup: ${res.status} ${res.text}`)
  return res.body as { id: string; number: string; version: number }
}
const ids = async (query: string) => {
  const res = await server.request('GET', `/api/v1/records?moduleKey=task&limit=100&${query}`)
  if (res.status !== 200) throw new Error(`${query}: ${res.status} ${res.text}`)
  return res.body.items.map((r: { id: string }) => r.id).sort()
}
const overdueEvents = async (recordId: string) =>
  (
    await server.platform.db.system.query(
      `SELECT data FROM events WHERE type = 'record.overdue' AND subject_id = $1 ORDER BY occurred_at`,
      [recordId]
    )
  ).rows.map((r) => r.data)

const today = clock().now()
const late = await create('task', { title: 'Late', dueDate: dayAfter(today, -1) })
const soon = await create('task', { title: 'Soon', dueDate: dayAfter(today, 2) })
const undated = await create('task', { title: 'No due date' })
const parked = await create('task', { title: 'Parked', dueDate: dayAfter(today, -5) })
const parkedAt = await server.request('POST', `/api/v1/records/${parked.id}:transition`, {
  body: { transition: 'park' }
})
if (parkedAt.status !== 200) throw new Error(`setup: ${parkedAt.status} ${parkedAt.text}`)

t.test('overdue=true lists records whose due date has passed in a state where it counts, on REST', async (t) => {
  t.same(await ids('overdue=true'), [late.id], 'a due date today is not overdue yet; a parked record no longer counts')
  t.same(await ids('overdue=false'), [soon.id, undated.id, parked.id].sort(), 'the others, without a due date too')
  await moveClock(3 * day)
  t.same(
    await ids('overdue=true'),
    [late.id, soon.id].sort(),
    'three days on, the platform clock makes another overdue'
  )
  await moveClock(0)
  const refused = await server.request('GET', '/api/v1/records?moduleKey=incident&overdue=true')
  t.equal(refused.status, 400)
  t.match(refused.body.errors[0], { field: 'overdue', code: 'filter' })
  t.match(refused.body.errors[0].detail, /declares no due date/)
  const bad = await server.request('GET', '/api/v1/records?moduleKey=task&overdue=maybe')
  t.equal(bad.status, 400)
})

t.test('the module schema says which field is due, until which states, and its recurrence', async (t) => {
  const task = await server.request('GET', '/api/v1/modules/task')
  t.equal(task.status, 200)
  t.same(task.body.due, { field: 'dueDate', until: ['parked', 'done'] })
  t.same(task.body.recurrence, { every: 'month', per: 'site', payload: { title: 'Monthly site inspection' } })
  const permit = await server.request('GET', '/api/v1/modules/permit')
  t.same(permit.body.workflow.transitions[0].auto, { after: 'validTo' })
  t.equal(permit.body.due, null)
})

t.test('GraphQL takes overdue as a Boolean argument of a module with a due date', async (t) => {
  const gql = await server.request('POST', '/api/graphql', {
    body: { query: '{ tasks(first: 50, overdue: true) { nodes { id } } }' }
  })
  t.notOk(gql.body.errors, JSON.stringify(gql.body.errors))
  t.same(
    gql.body.data.tasks.nodes.map((n: { id: string }) => n.id),
    [late.id]
  )
  const none = await server.request('POST', '/api/graphql', {
    body: { query: '{ incidents(first: 5, overdue: true) { nodes { id } } }' }
  })
  t.ok(none.body.errors?.length, 'a module without a due date has no such argument')
})

t.test('an export takes overdue as a filter', async (t) => {
  const exp = await server.request('POST', '/api/v1/exports', {
    body: { moduleKey: 'task', format: 'csv', filters: { overdue: true } }
  })
  t.equal(exp.status, 202, exp.text)
  t.match(exp.body.filters, { overdue: true })
})

t.test('the overdue job writes one record.overdue event per record and due date', async (t) => {
  await run(overdueJob)
  await run(overdueJob)
  t.same(await overdueEvents(late.id), [
    { number: late.number, version: 1, field: 'dueDate', due: dayAfter(today, -1) }
  ])
  t.same(await overdueEvents(soon.id), [], 'not yet due')
  t.same(await overdueEvents(parked.id), [], 'parked: its due date no longer counts')
  // A new due date that passes again is a new event; the same one is not.
  const moved = await server.request('PATCH', `/api/v1/records/${late.id}`, {
    body: { payload: { dueDate: dayAfter(today, 1) } }
  })
  t.equal(moved.status, 200)
  await run(overdueJob)
  t.equal((await overdueEvents(late.id)).length, 1, 'the new due date has not passed')
  await moveClock(2 * day)
  await run(overdueJob)
  await run(overdueJob)
  const events = await overdueEvents(late.id)
  t.same(
    events.map((e) => e.due),
    [dayAfter(today, -1), dayAfter(today, 1)],
    'one more, for the new due date'
  )
  await moveClock(0)
  const { rows } = await server.platform.db.system.query(
    `SELECT actor, module_key FROM events WHERE type = 'record.overdue' AND subject_id = $1`,
    [late.id]
  )
  t.match(rows[0], { actor: { type: 'system', id: 'date-rules' }, module_key: 'task' }, 'written by the date rules')
})

t.test('a date-triggered transition fires once its date has passed, once, as the system', async (t) => {
  const permit = await create('permit', {
    title: 'Hot work',
    validTo: new Date(today.getTime() + 3_600_000).toISOString()
  })
  await run(autoJob)
  let got = await server.request('GET', `/api/v1/records/${permit.id}`)
  t.equal(got.body.state, 'active', 'not before its validTo')
  await moveClock(2 * 3_600_000)
  await run(autoJob)
  await run(autoJob)
  got = await server.request('GET', `/api/v1/records/${permit.id}?include=activity`)
  t.equal(got.body.state, 'expired')
  t.equal(got.body.version, 2, 'fired once')
  const fired = await server.platform.db.system.query(
    `SELECT actor, data FROM events WHERE type = 'record.transitioned' AND subject_id = $1`,
    [permit.id]
  )
  t.equal(fired.rows.length, 1)
  t.match(fired.rows[0], { actor: { type: 'system', id: 'date-rules' }, data: { transition: { key: 'expire' } } })
  await moveClock(0)
})

const seriesOf = async (moduleKey: string) => {
  const res = await server.request('GET', `/api/v1/record-series?moduleKey=${moduleKey}`)
  if (res.status !== 200) throw new Error(`series: ${res.status} ${res.text}`)
  return res.body.items as Array<{ id: string; per: { value: string }; state: string; made: number }>
}
const made = async (site: string) =>
  (
    await server.platform.db.system.query(
      `SELECT count(*)::int AS n FROM records WHERE module_key = 'task' AND payload->>'site' = $1 AND payload->>'title' = 'Monthly site inspection'`,
      [site]
    )
  ).rows[0].n

t.test('a monthly series per site makes one record per site and period; paused and ended ones make none', async (t) => {
  await run(seriesJob)
  const series = await seriesOf('task')
  t.same(
    series.map((s) => [s.per.value, s.state, s.made]),
    [
      ['north', 'active', 0],
      ['south', 'active', 0]
    ],
    'a series per option, its first record one period after its start'
  )
  await moveClock(32 * day)
  await run(seriesJob)
  await run(seriesJob)
  t.same([await made('north'), await made('south')], [1, 1], 'one each, however often the job runs')
  const [north, south] = series
  const paused = await server.request('PATCH', `/api/v1/record-series/${north.id}`, { body: { state: 'paused' } })
  t.equal(paused.status, 200, paused.text)
  t.equal(paused.body.state, 'paused')
  await moveClock(95 * day)
  await run(seriesJob)
  t.same([await made('north'), await made('south')], [1, 3], 'south caught up the two months since; north was paused')
  const resumed = await server.request('PATCH', `/api/v1/record-series/${north.id}`, { body: { state: 'active' } })
  t.equal(resumed.body.state, 'active')
  await run(seriesJob)
  t.equal(await made('north'), 2, 'resumed: the current period is made, those that passed while paused are not')
  const ended = await server.request('PATCH', `/api/v1/record-series/${south.id}`, { body: { state: 'ended' } })
  t.equal(ended.body.state, 'ended')
  await moveClock(200 * day)
  await run(seriesJob)
  t.equal(await made('south'), 3, 'an ended series makes no more')
  t.ok((await made('north')) > 2, 'north goes on')
  const again = await server.request('PATCH', `/api/v1/record-series/${south.id}`, { body: { state: 'active' } })
  t.equal(again.status, 409)
  t.equal(again.body.code, 'series.ended')
  await moveClock(0)
})

t.test('the series API needs the module rights and a module with a recurrence', async (t) => {
  const none = await server.request('GET', '/api/v1/record-series?moduleKey=incident')
  t.equal(none.status, 400)
  const missing = await server.request('GET', '/api/v1/record-series/00000000-0000-4000-8000-000000000000')
  t.equal(missing.status, 404)
  const bad = await server.request('PATCH', `/api/v1/record-series/${(await seriesOf('task'))[0].id}`, {
    body: { state: 'stopped' }
  })
  t.equal(bad.status, 400)
})

t.test('an annual review series per task makes one review per task and year, linked to it', async (t) => {
  await run(seriesJob)
  const series = await seriesOf('review')
  t.ok(
    series.some((s) => s.per.value === soon.id),
    'a series per live task'
  )
  await moveClock(370 * day)
  await run(seriesJob)
  await run(seriesJob)
  const { rows } = await server.platform.db.system.query(
    `SELECT payload FROM records WHERE module_key = 'review' AND payload->>'task' = $1`,
    [soon.id]
  )
  t.same(rows, [{ payload: { title: 'Annual review', task: soon.id } }], 'one review of the task, linked to it')
  await moveClock(0)
  // Whoever may read the reviews but not the tasks is not told which task a series is of, as no record tells them.
  const auditor = await userWithToken(server, 'acme', ['auditor'])
  const seen = await server.request('GET', '/api/v1/record-series?moduleKey=review', { token: auditor.token })
  t.equal(seen.status, 200, seen.text)
  t.ok(seen.body.items.length > 0 && seen.body.items.every((s: { per: { value: unknown } }) => s.per.value === null))
})

t.test('the overdue condition is served by the due-date field index at scale', async (t) => {
  // 20,000 tasks due in the next years, 50 overdue: the index on the due date finds those without reading the rest.
  await server.platform.db.system.query(
    `INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by)
     SELECT 'acme', 'task', '1.0.0', 'PLAN-' || g, 'open',
            jsonb_build_object('title', 'Task ' || g, 'dueDate', to_char(now() + make_interval(days => CASE WHEN g <= 50 THEN -g ELSE g % 1000 + 1 END), 'YYYY-MM-DD')),
            '{"type":"system","id":"plan-test","name":"plan test"}', '{"type":"system","id":"plan-test","name":"plan test"}'
       FROM generate_series(1, 20000) g`
  )
  const owner = new pg.Client({ connectionString: server.platform.db.url })
  await owner.connect()
  t.teardown(() => owner.end())
  await owner.query('ANALYZE records')
  const m = server.platform.tenants.module('acme', 'task')
  const { sql, bindings } = overdueCondition(m, true, clock().now())
  let n = 0
  const text = sql.replace(/\?/g, () => `$${++n}`)
  const { rows } = await owner.query(
    `EXPLAIN SELECT r.id FROM records r WHERE r.tenant_id = 'acme' AND r.module_key = 'task' AND r.deleted_at IS NULL AND ${text}`,
    bindings
  )
  const plan = rows.map((r) => r['QUERY PLAN']).join('\n')
  const index = declaredIndexes([m]).find((i) => i.serves.some((s) => s.startsWith('task.dueDate')))!
  t.ok(index, 'the due date has an index')
  t.match(plan, index.name, `the plan reads it:\n${plan}`)
  const listed = await server.request('GET', '/api/v1/records?moduleKey=task&overdue=true&limit=100')
  t.ok(
    listed.body.items.filter((r: { number: string }) => r.number.startsWith('PLAN-')).length === 50,
    'and the list finds the fifty'
  )
})
