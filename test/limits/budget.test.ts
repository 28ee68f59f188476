import t from '../helpers/tap.ts'
import { Budget, charge, currentBudget, withBudget } from '../../core/limits/budget.ts'
import { ApiError } from '../../core/errors/index.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'

t.test('a budget refuses the charge that would pass it, before counting it, and names what asked', async (t) => {
  const budget = new Budget(10, 5)
  budget.charge(6, 'rows read')
  t.equal(budget.remaining, 4)
  t.ok(budget.fits(4))
  t.notOk(budget.fits(5))
  const err = t.throws(() => budget.charge(5, 'lookups')) as unknown as ApiError
  t.equal(err.problemCode, 'request.too_costly')
  t.equal(err.code, 422)
  t.match(err.message, /lookups/)
  t.equal(budget.spent, 6, 'the refused charge is not counted')
  t.same({ ...budget.spentOn }, { 'rows read': 6 })
  t.throws(() => budget.charge(Number.NaN, 'x'), RangeError, 'NaN is never a charge that fits')
  t.throws(() => budget.charge(-1, 'x'), RangeError)
})

t.test('the current budget is the request’s inside withBudget and unlimited outside any request', async (t) => {
  const budget = new Budget(3, 1)
  await withBudget(budget, async () => {
    await new Promise((r) => setTimeout(r, 1))
    charge(2, 'lookups')
    t.equal(currentBudget(), budget, 'kept across awaits')
    t.throws(() => charge(2, 'lookups'))
  })
  t.equal(budget.spent, 2)
  charge(1_000_000, 'system work')
  t.equal(currentBudget().limit, Infinity)
})

t.test('settling counts one request per unitsPerRequest units charged, once', async (t) => {
  const counted: number[] = []
  const budget = new Budget(100, 10, async (extra) => void counted.push(extra))
  budget.charge(9, 'a')
  await budget.settleRate()
  t.same(counted, [], 'up to one request’s worth counts as the request itself')
  await budget.reserve(21, 'b')
  t.same(counted, [2], '30 units are three requests: two more')
  await budget.settleRate()
  t.same(counted, [2], 'nothing twice')
})

t.test('over HTTP', async (t) => {
  const s = await startTestServer({
    tenants: {
      acme: { name: 'Acme', modules: ['incident'] },
      small: {
        name: 'Small budget',
        modules: ['incident'],
        limits: { requestBudget: 30, budgetUnitsPerRequest: 10, requestsPerMinute: 1_000 }
      }
    }
  })
  t.teardown(() => s.close())
  const small = s.keys.small
  for (let i = 0; i < 30; i++)
    t.equal(
      (
        await s.request('POST', '/api/v1/records', {
          token: small,
          body: { moduleKey: 'incident', payload: incidentPayload({ title: `Incident ${i}` }) }
        })
      ).status,
      201
    )

  t.test(
    'a list that would read more rows than the budget allows is 422 request.too_costly as a problem',
    async (t) => {
      const r = await s.request('GET', '/api/v1/records?moduleKey=incident&limit=100', { token: small })
      t.equal(r.status, 422)
      t.equal(r.headers.get('content-type'), 'application/problem+json')
      t.equal(r.body.code, 'request.too_costly')
      t.ok(r.body.traceId && r.body.type && r.body.title && r.body.detail)
      const fits = await s.request('GET', '/api/v1/records?moduleKey=incident&limit=5', { token: small })
      t.equal(fits.status, 200, 'a smaller page fits')
    }
  )

  t.test('an expensive request counts as several against the rate limit', async (t) => {
    const cheap = await s.request('GET', '/api/v1/me', { token: small })
    const before = Number(cheap.headers.get('x-ratelimit-remaining'))
    // 5 units for the call and 10 rows read: 15 units, two requests' worth at 10 units each.
    t.equal((await s.request('GET', '/api/v1/records?moduleKey=incident&limit=10', { token: small })).status, 200)
    const after = Number((await s.request('GET', '/api/v1/me', { token: small })).headers.get('x-ratelimit-remaining'))
    t.equal(before - after, 3, 'the list counted as two requests, the second /me as one')
  })

  t.test(
    'a bulk call stops attempting rows past its budget, says where to resume, and loads the rows before',
    async (t) => {
      const rows = Array.from({ length: 20 }, (_, i) => ({
        externalRef: `B-${i}`,
        payload: incidentPayload({ title: `Bulk ${i}` })
      }))
      const r = await bulkCall(s.url, '/api/modules/incident/bulk', small, ndjson(rows))
      t.equal(r.status, 200)
      const outcomes = r.lines.filter((l: any) => l.line !== undefined)
      const refused = outcomes.filter((o: any) => o.problem?.code === 'request.too_costly')
      const loaded = outcomes.filter((o: any) => o.status === 'created')
      t.ok(loaded.length > 0 && refused.length > 0, `${loaded.length} loaded, ${refused.length} refused`)
      t.equal(loaded.length + refused.length, 20)
      const summary = r.lines.at(-1).summary
      t.equal(summary.complete, false)
      t.equal(summary.notAttempted, refused.length)
      t.equal(summary.resumeAtLine, loaded.length + 1)
      const listed = await s.request('GET', `/api/v1/records?moduleKey=incident&externalRef=B-${loaded.length}`, {
        token: s.keys.acme
      })
      t.equal(listed.status, 200)
      t.same(listed.body.items, [], 'no row past the budget was written')
    }
  )

  t.test('another tenant’s budget is its own', async (t) => {
    t.equal(
      (await s.request('GET', '/api/v1/records?moduleKey=incident&limit=100', { token: s.keys.acme })).status,
      200
    )
  })
})
