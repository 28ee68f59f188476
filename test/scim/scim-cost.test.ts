import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'
import { errorExtensionUrn, errorUrn, groupUrn, oktaUser, patchUrn, scim, scimToken } from './helpers.ts'

/*
 * SCIM work is bounded: a user holds at most 100 values of each multi-valued attribute, a
 * PATCH carries at most 100 operations, and every array element a filter is evaluated on or
 * an operation touches is charged to the request's budget before it is done, so the worst
 * PATCH the caps allow answers quickly, and one past the budget is 422 request.too_costly
 * with nothing changed. The "tight" tenant has a small budget to show the refusal.
 */
const server = await startTestServer({
  tenants: {
    acme: { name: 'Acme', modules: ['incident'] },
    tight: { name: 'Tight', modules: ['incident'], limits: { requestBudget: 15_000 } },
    other: { name: 'Other', modules: ['incident'] }
  }
})
t.teardown(() => server.close())
const acme = scim(server, await scimToken(server, 'acme'))
const tight = scim(server, await scimToken(server, 'tight'))
const patch = (...Operations: unknown[]) => ({ schemas: [patchUrn], Operations })
const emails = (n: number, domain = 'x.example') =>
  Array.from({ length: n }, (_x, i) => ({ value: `u${i}@${domain}`, type: 'work' }))
const costly = (n: number) =>
  patch(
    ...Array.from({ length: n }, () => ({
      op: 'add',
      path: 'emails[type eq "work" and value co "@x"].display',
      value: 'd'
    }))
  )

/** CPU time of this process (the server runs in it) spent on `fn`, in ms, and its result. */
async function cpu<T>(fn: () => Promise<T>): Promise<{ ms: number; result: T }> {
  const before = process.cpuUsage()
  const result = await fn()
  const used = process.cpuUsage(before)
  return { ms: (used.user + used.system) / 1000, result }
}

t.test('a user holds at most 100 values of a multi-valued attribute, and a PATCH at most 100 operations', async (t) => {
  const tooMany = await acme('POST', '/Users', { ...oktaUser('many.mails'), emails: emails(101) })
  t.equal(tooMany.status, 400)
  t.match(tooMany.body, { schemas: [errorUrn], status: '400', scimType: 'invalidValue', detail: /emails.*100/ })
  const phones = await acme('POST', '/Users', {
    ...oktaUser('many.phones'),
    phoneNumbers: Array.from({ length: 101 }, (_x, i) => ({ value: `+44 ${i}` }))
  })
  t.equal(phones.status, 400)
  const user = await acme('POST', '/Users', { ...oktaUser('full.mailbox'), emails: emails(100) })
  t.equal(user.status, 201, 'exactly 100 is fine')
  const grow = await acme(
    'PATCH',
    `/Users/${user.body.id}`,
    patch({ op: 'add', path: 'emails', value: [{ value: 'one@more.example', type: 'home' }] })
  )
  t.equal(grow.status, 400, 'a PATCH cannot grow it past 100 either')
  t.match(grow.body, { scimType: 'invalidValue', detail: /emails.*100/ })
  const ops = await acme('PATCH', `/Users/${user.body.id}`, costly(101))
  t.equal(ops.status, 400)
  t.match(ops.body, { scimType: 'tooMany', detail: /100 operations/ })
  const unchanged = await acme('GET', `/Users/${user.body.id}`)
  t.equal(unchanged.body.meta.version, user.body.meta.version)
})

t.test(
  'the worst PATCH the caps allow (100 filtered operations on 100 e-mails) answers in well under a second of CPU',
  async (t) => {
    const user = await acme('POST', '/Users', { ...oktaUser('worst.case'), emails: emails(100) })
    // The same request once before, on another user: the figure is the work's, not the first compilation of its code.
    const warm = await acme('POST', '/Users', { ...oktaUser('worst.warm'), emails: emails(100) })
    await acme('PATCH', `/Users/${warm.body.id}`, costly(100))
    const { ms, result } = await cpu(() => acme('PATCH', `/Users/${user.body.id}`, costly(100)))
    t.equal(result.status, 204)
    t.comment(`CPU for the PATCH: ${ms.toFixed(0)} ms`)
    t.ok(ms < 250, `CPU ${ms.toFixed(0)} ms`)
    const after = await acme('GET', `/Users/${user.body.id}`)
    t.ok(after.body.emails.every((e: { display?: string }) => e.display === 'd'))
  }
)

t.test(
  'the biggest user the caps allow (100 values in each of 8 multi-valued attributes): created quickly, and the worst PATCH on it answers quickly or is refused unchanged',
  async (t) => {
    const many = (f: (i: number) => object) => Array.from({ length: 100 }, (_x, i) => f(i))
    const biggestNamed = (name: string) => ({
      ...oktaUser(name),
      emails: emails(100),
      phoneNumbers: many((i) => ({ value: `+44 113 ${i}`, type: 'work' })),
      addresses: many((i) => ({ streetAddress: `${i} Wellington Street`, locality: 'Leeds', type: 'work' })),
      ims: many((i) => ({ value: `im${i}`, type: 'xmpp' })),
      photos: many((i) => ({ value: `https://x.example/${i}.png`, type: 'photo' })),
      entitlements: many((i) => ({ value: `entitlement${i}` })),
      roles: many((i) => ({ value: `role${i}` })),
      x509Certificates: many(() => ({ value: 'TUlJQw==' }))
    })
    // Both requests once before, on another user: the figures are the work's, not the first compilation of its code.
    const warm = await acme('POST', '/Users', biggestNamed('biggest.warm'))
    await acme('PATCH', `/Users/${warm.body.id}`, costly(100))
    const created = await cpu(() => acme('POST', '/Users', biggestNamed('biggest.user')))
    t.comment(`CPU for the POST: ${created.ms.toFixed(0)} ms`)
    t.equal(created.result.status, 201)
    t.ok(created.ms < 250, `CPU ${created.ms.toFixed(0)} ms`)
    const id = created.result.body.id
    const { ms, result } = await cpu(() => acme('PATCH', `/Users/${id}`, costly(100)))
    t.comment(`CPU for the PATCH: ${ms.toFixed(0)} ms, answered ${result.status}`)
    t.ok(ms < 250, `CPU ${ms.toFixed(0)} ms`)
    if (result.status === 204) t.pass('completed')
    else {
      t.equal(result.status, 422)
      t.equal(result.body[errorExtensionUrn].code, 'request.too_costly')
      t.equal((await acme('GET', `/Users/${id}`)).body.meta.version, created.result.body.meta.version, 'unchanged')
    }
  }
)

t.test(
  'past the budget a PATCH is 422 request.too_costly, refused before the work, and the user is unchanged',
  async (t) => {
    const user = await tight('POST', '/Users', { ...oktaUser('tight.user'), emails: emails(100) })
    t.equal(user.status, 201)
    const r = await tight('PATCH', `/Users/${user.body.id}`, costly(100))
    t.equal(r.status, 422)
    t.match(r.body, {
      schemas: [errorUrn],
      status: '422',
      [errorExtensionUrn]: { code: 'request.too_costly', for: 'scim patch elements' }
    })
    const after = await tight('GET', `/Users/${user.body.id}`)
    t.equal(after.body.meta.version, user.body.meta.version)
    t.notOk(
      after.body.emails.some((e: { display?: string }) => e.display),
      'no e-mail got a display'
    )
    t.equal(
      (await tight('PATCH', `/Users/${user.body.id}`, costly(2))).status,
      204,
      'a PATCH within the budget still works'
    )
  }
)

t.test(
  'a user stored with 9,999 e-mails (before the caps) costs a PATCH its budget, not the other tenants their answers',
  async (t) => {
    const user = await acme('POST', '/Users', oktaUser('legacy.hoarder'))
    await server.platform.db.system.query('UPDATE users SET emails = $3 WHERE tenant_id = $1 AND id = $2', [
      'acme',
      user.body.id,
      JSON.stringify(emails(9_999))
    ])
    const before = (await server.platform.users.get('acme', user.body.id))!
    const otherKey = server.keys.other
    for (let i = 0; i < 3; i++) await server.request('GET', '/api/v1/me', { token: otherKey }) // warm: the first call of a tenant loads its credential
    let slowest = 0
    let done = false
    const probe = (async () => {
      while (!done) {
        const started = performance.now()
        const me = await server.request('GET', '/api/v1/me', { token: otherKey })
        if (me.status !== 200) throw new Error(`/me answered ${me.status}`)
        slowest = Math.max(slowest, performance.now() - started)
        await new Promise((r) => setTimeout(r, 5))
      }
    })()
    const { ms, result } = await cpu(() => acme('PATCH', `/Users/${user.body.id}`, costly(100)))
    done = true
    await probe
    t.equal(result.status, 422)
    t.equal(result.body[errorExtensionUrn].code, 'request.too_costly')
    t.comment(`CPU ${ms.toFixed(0)} ms; slowest /me of another tenant meanwhile ${slowest.toFixed(0)} ms`)
    t.ok(ms < 250, `CPU ${ms.toFixed(0)} ms`)
    // The target is 100 ms; this machine runs other suites at once, so the bound is looser. Before the caps and the meter, it waited 96 s.
    t.ok(slowest < 500, `slowest /me ${slowest.toFixed(0)} ms`)
    const after = await server.platform.users.get('acme', user.body.id)
    t.equal(after!.emails.length, 9_999)
    t.equal(after!.version, before.version, 'not written')
  }
)

t.test('group PATCH: removing members by id is cheap on a big group; a general member filter is metered', async (t) => {
  const ids: string[] = []
  for (let i = 0; i < 300; i += 50) {
    const batch = await Promise.all(
      Array.from({ length: 50 }, (_x, k) =>
        server.platform.users.create('tight', { userName: `member${i + k}@tight.example` })
      )
    )
    ids.push(...batch.map((u) => u.id))
  }
  const g = await tight('POST', '/Groups', {
    schemas: [groupUrn],
    displayName: 'Big group',
    members: ids.map((value) => ({ value }))
  })
  t.equal(g.status, 201)
  const byId = await tight(
    'PATCH',
    `/Groups/${g.body.id}`,
    patch(...ids.slice(0, 100).map((id) => ({ op: 'remove', path: `members[value eq "${id}"]` })))
  )
  t.equal(byId.status, 204, '100 removals by id on a 300-member group fit a small budget')
  const left = await tight('GET', `/Groups/${g.body.id}`)
  t.equal(left.body.members.length, 200)
  const general = await tight(
    'PATCH',
    `/Groups/${g.body.id}`,
    patch(...Array.from({ length: 100 }, () => ({ op: 'remove', path: 'members[display co "nobody"]' })))
  )
  t.equal(general.status, 422, '100 general filters over 200 members each: past the budget')
  t.equal(general.body[errorExtensionUrn].code, 'request.too_costly')
  const still = await tight('GET', `/Groups/${g.body.id}`)
  t.equal(still.body.meta.version, left.body.meta.version)
})

t.test(
  'a group body with 5,000 members (well within 1 MiB) is read in linear time, not through the schema coercion per member',
  async (t) => {
    const ids = Array.from({ length: 5_000 }, (_x, i) => `6d1f3c52-3b7e-4c55-9d1e-${String(i).padStart(12, '0')}`)
    const body = {
      schemas: [groupUrn],
      displayName: 'Crowd',
      members: ids.map((value) => ({ value, display: 'Someone', type: 'User' }))
    }
    await acme('POST', '/Groups', { ...body, displayName: 'Warm-up', members: body.members.slice(0, 10) })
    const { ms, result } = await cpu(() => acme('POST', '/Groups', body))
    t.equal(result.status, 201, 'members that are no user of the tenant are left out')
    t.comment(`CPU for the POST: ${ms.toFixed(0)} ms`)
    t.ok(ms < 250, `CPU ${ms.toFixed(0)} ms`)
    const put = await cpu(() => acme('PUT', `/Groups/${result.body.id}`, body))
    t.equal(put.result.status, 200)
    t.ok(put.ms < 250, `PUT CPU ${put.ms.toFixed(0)} ms`)
    const bad = await acme('POST', '/Groups', {
      schemas: [groupUrn],
      displayName: 'Bad member',
      members: [{ value: 42 }]
    })
    t.equal(bad.status, 400)
    t.equal(bad.body.scimType, 'invalidValue')
  }
)

t.test('a list filter over multi-valued attributes is metered by the elements it is evaluated on', async (t) => {
  const cheap = await tight('GET', `/Users?filter=${encodeURIComponent('userName eq "member7@tight.example"')}`)
  t.equal(cheap.status, 200)
  t.equal(cheap.body.totalResults, 1)
  await server.platform.db.system.query(
    "UPDATE users SET emails = $2 WHERE tenant_id = $1 AND user_name LIKE 'member%'",
    ['tight', JSON.stringify(emails(100, 'tight.example'))]
  )
  const costlyList = await tight(
    'GET',
    `/Users?filter=${encodeURIComponent('emails[type eq "work" and value co "@nowhere"]')}`
  )
  t.equal(costlyList.status, 422, '300 users with 100 e-mails each: 60,000 units, past a 15,000 budget')
  t.equal(costlyList.body[errorExtensionUrn].code, 'request.too_costly')
  const fits = await acme(
    'GET',
    `/Users?filter=${encodeURIComponent('emails[type eq "work" and value co "@nowhere"]')}`
  )
  t.equal(fits.status, 200, 'the same filter within the budget answers')
})
