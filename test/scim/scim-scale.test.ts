import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'
import { groupUrn, scim, scimToken } from './helpers.ts'

/*
 * A tenant with 1,000 users and 50 groups, as an identity provider's first sync leaves it:
 * listed in pages that neither skip nor repeat (also while users are added), and filtered.
 * Users are made through the directory (what SCIM's POST calls), 25 at a time; groups over SCIM.
 */
const server = await startTestServer({ tenants: { scale: { name: 'Scale', modules: ['incident'] } } })
t.teardown(() => server.close())
const s = scim(server, await scimToken(server, 'scale'))
const enc = encodeURIComponent
const started = Date.now()

const userCount = 1_000
const ids: string[] = []
for (let i = 0; i < userCount; i += 25) {
  const batch = await Promise.all(
    Array.from({ length: Math.min(25, userCount - i) }, (_x, k) => {
      const n = i + k
      return server.platform.users.create(
        'scale',
        {
          userName: `scale.user${String(n).padStart(4, '0')}@example.com`,
          displayName: `Scale User ${n}`,
          name: { givenName: 'Scale', familyName: `User${n}` },
          emails: [{ value: `user${n}@site${n % 10}.example.com`, type: 'work', primary: true }],
          active: n % 7 !== 0,
          attributes: { title: n % 2 ? 'Operator' : 'Supervisor' }
        },
        { via: 'scim' }
      )
    })
  )
  ids.push(...batch.map((u) => u.id))
}
// Creation order as stored (a batch's users are made at the same millisecond, told apart by microseconds and then id).
const ordered: string[] = (
  await server.platform.db.system.query("SELECT id::text FROM users WHERE tenant_id = 'scale' ORDER BY created_at, id")
).rows.map((r) => r.id)
/** Users by their number n, in creation order. */
const inOrder = (keep: (n: number) => boolean) => {
  const wanted = new Set(ids.filter((_id, n) => keep(n)))
  return ordered.filter((id) => wanted.has(id))
}
const groupIds: string[] = []
for (let g = 0; g < 50; g++) {
  const members = Array.from({ length: 20 }, (_x, k) => ({ value: ids[g * 20 + k] }))
  const r = await s('POST', '/Groups', {
    schemas: [groupUrn],
    displayName:
      g < 5
        ? ['reporter', 'auditor', 'investigator', 'inspector', 'health-officer'][g]
        : `Scale group ${String(g).padStart(2, '0')}`,
    members
  })
  if (r.status !== 201) throw new Error(`setup: group ${g}: ${r.status} ${r.text}`)
  groupIds.push(r.body.id)
}
t.comment(`1,000 users and 50 groups made in ${((Date.now() - started) / 1000).toFixed(1)} s`)

async function pages(path: string, count: number): Promise<{ total: number; ids: string[] }> {
  const seen: string[] = []
  let total: number
  for (let start = 1; ; start += count) {
    const r = await s('GET', `${path}${path.includes('?') ? '&' : '?'}startIndex=${start}&count=${count}`)
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`)
    total = r.body.totalResults
    seen.push(...r.body.Resources.map((x: { id: string }) => x.id))
    if (r.body.itemsPerPage < count) break
  }
  return { total, ids: seen }
}

t.test('1,000 users page through in creation order, each once, 100 and 200 at a time', async (t) => {
  for (const count of [100, 200]) {
    const all = await pages('/Users?attributes=userName', count)
    t.equal(all.total, userCount)
    t.equal(new Set(all.ids).size, userCount, `count ${count}: no user twice`)
    t.same(all.ids, ordered, `count ${count}: in creation order`)
  }
  t.equal((await s('GET', '/Users?count=500')).body.itemsPerPage, 200, 'count above 200 is lowered to 200')
})

t.test('users made while a client pages come after the pages it has seen: nothing skipped or repeated', async (t) => {
  const first = await s('GET', '/Users?startIndex=1&count=200&attributes=id')
  const late = await s('POST', '/Users', {
    userName: 'late.comer@example.com',
    name: { givenName: 'Late', familyName: 'Comer' }
  })
  const rest = await pages('/Users?attributes=id', 200).then((p) => p.ids.slice(200))
  const seen = [...first.body.Resources.map((x: { id: string }) => x.id), ...rest]
  t.same(seen, [...ordered, late.body.id])
  await s('DELETE', `/Users/${late.body.id}`)
})

t.test('filters over 1,000 users: on userName, a value path, a boolean and a group, with paging', async (t) => {
  const sw = await pages(`/Users?filter=${enc('userName sw "SCALE.USER01"')}`, 30)
  t.equal(sw.total, 100)
  t.same(
    sw.ids,
    inOrder((n) => n >= 100 && n < 200)
  )
  const site = await pages(`/Users?filter=${enc('emails[type eq "work"].value ew "@site3.example.com"')}`, 40)
  t.same(
    site.ids,
    inOrder((n) => n % 10 === 3)
  )
  const inactive = await pages(`/Users?filter=${enc('active eq false and title eq "supervisor"')}`, 50)
  t.same(
    inactive.ids,
    inOrder((n) => n % 7 === 0 && n % 2 === 0)
  )
  const inGroup = await pages(`/Users?filter=${enc('groups[display eq "Scale group 07"]')}`, 7)
  t.same(
    inGroup.ids,
    inOrder((n) => n >= 140 && n < 160)
  )
  const either = await s(
    'GET',
    `/Users?filter=${enc('userName eq "scale.user0005@example.com" or name.familyName eq "user999"')}`
  )
  t.same(
    either.body.Resources.map((u: { id: string }) => u.id),
    inOrder((n) => n === 5 || n === 999)
  )
})

t.test('50 groups page through, members left out when asked, and filter by name and member', async (t) => {
  const all = await pages('/Groups?excludedAttributes=members', 20)
  t.equal(all.total, 50)
  t.same(all.ids, groupIds)
  const full = await s('GET', '/Groups?count=2')
  t.equal(full.body.Resources[0].members.length, 20)
  t.same(full.body.Resources[0]['urn:qehs:params:scim:schemas:extension:records:2.0:Group'].grantedRoles, ['reporter'])
  const byName = await pages(`/Groups?filter=${enc('displayName sw "scale group 1"')}&excludedAttributes=members`, 3)
  t.same(byName.ids, groupIds.slice(10, 20))
  const byMember = await s('GET', `/Groups?filter=${enc(`members[value eq "${ids[333]}"]`)}&attributes=displayName`)
  t.same(byMember.body.Resources, [
    { schemas: byMember.body.Resources[0].schemas, id: groupIds[16], displayName: 'Scale group 16' }
  ])
  const user = await s('GET', `/Users/${ids[45]}?attributes=groups`)
  t.same(
    user.body.groups.map((g: { value: string }) => g.value),
    [groupIds[2]],
    'a user shows its groups'
  )
  t.comment(`done in ${((Date.now() - started) / 1000).toFixed(1)} s in all`)
})
