import t from '../helpers/tap.ts'
import { setClock, syncClock, clock } from '../../core/clock.ts'
import { systemScope } from '../../core/db/tenant-scope.ts'
import type { JobContext } from '../../core/jobs/index.ts'
import { dateJobs } from '../../plugins/records/records.due.ts'
import { userWithToken } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * The bundled modules' dates, on the controllable clock (core/clock.ts), the date jobs run a pass at a time: a permit
 * expires by itself once its validity has passed; an approved risk assessment falls due for review on its review date,
 * is overdue until confirmed with the next one (within a year); a corrective action past its due date is overdue
 * until it is done.
 */
const modules = ['incident', 'corrective-action', 'risk-assessment', 'permit-to-work']
const server = await startTestServer({
  tenants: { acme: { name: 'Acme Chemicals', modules } },
  clock: { controllable: true, refreshMs: 100 }
})
t.teardown(async () => {
  await setClock(server.platform.db.system, {})
  await server.close()
})
const day = 86_400_000
const moveClock = async (days: number) => {
  await setClock(server.platform.db.system, { offsetMs: days * day })
  await syncClock()
}
const job: JobContext = { touch: async () => undefined, signal: new AbortController().signal }
const [overdueJob, autoJob] = dateJobs(server.platform)
const run = (j: { run: (d: Record<string, unknown>, c: JobContext) => Promise<unknown> }) =>
  systemScope('test', () => j.run({}, job))
const dateIn = (days: number) => new Date(clock().now().getTime() + days * day).toISOString().slice(0, 10)

async function call(method: string, path: string, body?: unknown, token?: string) {
  const res = await server.request(method, path, { token, ...(body ? { body } : {}) })
  if (res.status >= 300) throw new Error(`setup: ${method} ${path} answered ${res.status} ${res.text}`)
  return res.body
}
const fire = (id: string, transition: string, payload?: Record<string, unknown>, token?: string) =>
  call('POST', `/api/v1/records/${id}:transition`, { transition, ...(payload ? { payload } : {}) }, token)
const overdue = async (moduleKey: string) =>
  (await call('GET', `/api/v1/records?moduleKey=${moduleKey}&overdue=true`)).items.map((r: { id: string }) => r.id)

t.test('a permit expires by itself once its validity has passed, as the platform, once', async (t) => {
  await moveClock(0)
  const requester = await userWithToken(server, 'acme', ['reporter'])
  const issuer = await userWithToken(server, 'acme', ['permit-issuer'])
  const from = new Date(clock().now().getTime() + 3_600_000)
  const permit = await call('POST', '/api/v1/records', {
    moduleKey: 'permit-to-work',
    payload: {
      title: 'Weld bracket on tank T-4',
      permitType: 'hot-work',
      site: 'Leeds DC',
      validFrom: from.toISOString(),
      validTo: new Date(from.getTime() + 8 * 3_600_000).toISOString(),
      precautions: ['fire-watch'],
      requestedBy: requester.id
    }
  })
  await fire(permit.id, 'approve', { issuer: issuer.id }, issuer.token)
  await run(autoJob)
  t.equal((await call('GET', `/api/v1/records/${permit.id}`)).state, 'approved', 'still valid: nothing fires')
  await moveClock(1)
  await run(autoJob)
  await run(autoJob)
  const expired = await call('GET', `/api/v1/records/${permit.id}`)
  t.equal(expired.state, 'expired')
  const fired = expired.activity.filter((a: { action: string }) => a.action === 'transitioned')
  t.equal(fired.length, 2, 'approve, then expire once')
  t.match(fired[1], {
    transition: { key: 'expire', from: 'approved', to: 'expired' },
    actor: { type: 'system', id: 'date-rules' }
  })
})

t.test(
  'an approved risk assessment falls due for review on its review date, is overdue until confirmed, and is confirmed with the next date within a year',
  async (t) => {
    await moveClock(0)
    const assessor = await userWithToken(server, 'acme', ['safety-manager'])
    const approver = await userWithToken(server, 'acme', ['safety-manager'])
    const ra = await call('POST', '/api/v1/records', {
      moduleKey: 'risk-assessment',
      payload: {
        title: 'Changing forklift gas cylinders',
        site: 'Leeds DC',
        hazards: [{ hazard: 'Cylinder falls on foot', whoAtRisk: ['employees'] }],
        likelihood: 3,
        severity: 4
      }
    })
    await fire(ra.id, 'submit', { assessor: assessor.id })
    const refused = await server.request('POST', `/api/v1/records/${ra.id}:transition`, {
      token: approver.token,
      body: { transition: 'approve', payload: { reviewer: approver.id, reviewDate: dateIn(400) } }
    })
    t.match(refused, { status: 400, body: { errors: [{ pointer: '/payload/reviewDate', detail: /within a year/ }] } })
    await fire(ra.id, 'approve', { reviewer: approver.id, reviewDate: dateIn(30) }, approver.token)
    t.same(await overdue('risk-assessment'), [], 'not yet due')

    await moveClock(31)
    await run(autoJob)
    t.equal(
      (await call('GET', `/api/v1/records/${ra.id}`)).state,
      'review-due',
      'the platform moved it on its review date'
    )
    t.same(await overdue('risk-assessment'), [ra.id], 'and it is overdue')
    await run(overdueJob)
    await run(overdueJob)
    const { rows: events } = await server.platform.db.system.query(
      "SELECT count(*)::int AS n FROM events WHERE type = 'record.overdue' AND subject_id = $1",
      [ra.id]
    )
    t.equal(events[0].n, 1, 'one record.overdue event for its review date')

    const confirmed = await fire(ra.id, 'confirm', { reviewDate: dateIn(365) }, approver.token)
    t.match(confirmed, { state: 'approved', payload: { reviewDate: dateIn(365) } })
    t.same(await overdue('risk-assessment'), [], 'confirmed with the next date: no longer overdue')
  }
)

t.test('a corrective action is overdue after its due date until it is done', async (t) => {
  await moveClock(0)
  const incident = await call('POST', '/api/v1/records', { moduleKey: 'incident', payload: incidentPayload() })
  const owner = await userWithToken(server, 'acme', ['action-owner'])
  const action = await call('POST', '/api/v1/records', {
    moduleKey: 'corrective-action',
    payload: {
      title: 'Fix the guard rail',
      incident: incident.id,
      kind: 'corrective',
      owner: owner.id,
      dueDate: dateIn(3)
    }
  })
  t.same(await overdue('corrective-action'), [])
  await moveClock(5)
  // Its own due field: the overdue statement of another module (risk-assessment's reviewDate, above) is not reused.
  t.same(await overdue('corrective-action'), [action.id], 'past its due date')
  await fire(action.id, 'start')
  await fire(action.id, 'complete', { completionNote: 'Rail replaced', completedOn: dateIn(0) })
  t.same(await overdue('corrective-action'), [], 'done, it awaits verification: not overdue')
})
