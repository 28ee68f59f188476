import t from '../helpers/tap.ts'
import { eventually } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import {
  errorExtensionUrn,
  errorUrn,
  groupUrn,
  oktaUser,
  patchUrn,
  recordsGroupUrn,
  scim,
  scimToken
} from './helpers.ts'

const server = await startTestServer()
t.teardown(() => server.close())
const { platform } = server
const token = await scimToken(server, 'acme')
const s = scim(server, token)
const patch = (...Operations: unknown[]) => ({ schemas: [patchUrn], Operations })

/** A provisioned user with a personal access token and a signed-in browser session. */
async function provisioned(userName: string) {
  const r = await s('POST', '/Users', oktaUser(userName))
  if (r.status !== 201) throw new Error(`setup: ${r.status} ${r.text}`)
  const pat = (
    await platform.credentials.create({
      tenantId: 'acme',
      kind: 'personal',
      name: `${userName} laptop`,
      userId: r.body.id
    })
  ).token
  const session = await platform.sessions.create('acme', r.body.id)
  return { id: r.body.id as string, pat, cookie: `records_session=${session.cookieValue}` }
}
const reportIncident = async (pat: string) =>
  (
    await server.request('POST', '/api/v1/records', {
      token: pat,
      body: { moduleKey: 'incident', payload: incidentPayload() }
    })
  ).status
const me = async (o: { token?: string; cookie?: string }) =>
  (await server.request('GET', '/api/v1/me', { token: o.token ?? null, headers: o.cookie ? { cookie: o.cookie } : {} }))
    .status
async function group(body: Record<string, unknown>) {
  const r = await s('POST', '/Groups', { schemas: [groupUrn], ...body })
  if (r.status !== 201) throw new Error(`setup: ${r.status} ${r.text}`)
  return r.body
}
async function eventsOf(subjectId: string) {
  const { rows } = await platform.db.system.query(
    'SELECT type, actor, data FROM events WHERE tenant_id = $1 AND subject_id = $2 ORDER BY position',
    ['acme', subjectId]
  )
  return rows
}

t.test(
  'a group named as a role grants it to its members at once, and removing the member revokes it at once',
  async (t) => {
    const u = await provisioned('role.by.name')
    t.equal(await reportIncident(u.pat), 403, 'a provisioned user holds no role')
    const g = await group({ displayName: 'Reporter', members: [{ value: u.id }] })
    t.same(g[recordsGroupUrn], { grantedRoles: ['reporter'] }, 'the displayName names the role, in any case')
    const roundTrip = await s('PUT', `/Groups/${g.id}`, { ...g, meta: undefined })
    t.same(
      roundTrip.body[recordsGroupUrn],
      { grantedRoles: ['reporter'] },
      'a group read and put back keeps the name rule'
    )
    t.equal(await reportIncident(u.pat), 201, 'the next call creates an incident')
    const removed = await s('PATCH', `/Groups/${g.id}`, patch({ op: 'remove', path: `members[value eq "${u.id}"]` }))
    t.equal(removed.status, 204)
    t.equal(await reportIncident(u.pat), 403, 'the next call after removal is refused')
    t.equal(
      (await s('PATCH', `/Groups/${g.id}`, patch({ op: 'add', path: 'members', value: [{ value: u.id }] }))).status,
      204
    )
    t.equal(await reportIncident(u.pat), 201)
    t.equal(
      (await s('PATCH', `/Groups/${g.id}`, patch({ op: 'Remove', path: 'members', value: [{ value: u.id }] }))).status,
      204,
      "Entra's removal: the member as a value"
    )
    t.equal(await reportIncident(u.pat), 403)
  }
)

t.test(
  'the records extension names roles for a group of any name; changing them changes what members hold at once',
  async (t) => {
    const u = await provisioned('role.by.extension')
    const g = await group({
      displayName: 'EHS Leads',
      members: [{ value: u.id }],
      [recordsGroupUrn]: { roles: ['safety-manager'] }
    })
    t.same(g[recordsGroupUrn], { roles: ['safety-manager'], grantedRoles: ['safety-manager'] })
    t.equal(await reportIncident(u.pat), 201)
    const narrowed = await s(
      'PATCH',
      `/Groups/${g.id}`,
      patch({ op: 'replace', path: `${recordsGroupUrn}:roles`, value: ['auditor'] })
    )
    t.equal(narrowed.status, 204)
    t.equal(await reportIncident(u.pat), 403, 'auditors read, they do not report')
    const unknown = await s(
      'PATCH',
      `/Groups/${g.id}`,
      patch({ op: 'replace', path: `${recordsGroupUrn}:roles`, value: ['overlord'] })
    )
    t.equal(unknown.status, 400)
    t.match(unknown.body, {
      schemas: [errorUrn],
      status: '400',
      scimType: 'invalidValue',
      detail: /overlord.*roles of this tenant: .*admin, .*safety-manager/
    })
    const plain = await group({ displayName: 'Everyone in Leeds', members: [{ value: u.id }] })
    t.same(plain[recordsGroupUrn].grantedRoles, [], 'a group named otherwise grants nothing')
    const created = await s('POST', '/Groups', {
      schemas: [groupUrn],
      displayName: 'Bad roles',
      [recordsGroupUrn]: { roles: ['reporter', 'nope'] }
    })
    t.match(created.body, { status: '400', scimType: 'invalidValue', detail: /nope/ })
  }
)

t.test(
  'active false, by PATCH or PUT, stops every token and session of the user on the next call; DELETE too',
  async (t) => {
    for (const how of ['PATCH', 'PUT', 'DELETE'] as const) {
      const u = await provisioned(`deactivated.by.${how.toLowerCase()}`)
      t.equal(await me({ token: u.pat }), 200)
      t.equal(await me({ cookie: u.cookie }), 200)
      const r =
        how === 'PATCH'
          ? await s('PATCH', `/Users/${u.id}`, patch({ op: 'Replace', path: 'active', value: 'False' }))
          : how === 'PUT'
            ? await s('PUT', `/Users/${u.id}`, oktaUser(`deactivated.by.put`, { active: false }))
            : await s('DELETE', `/Users/${u.id}`)
      t.equal(r.status, how === 'PUT' ? 200 : 204, how)
      const next = await server.request('GET', '/api/v1/me', { token: u.pat })
      t.equal(next.status, 401, `${how}: the personal token is refused on its next call`)
      t.equal(next.body.code, 'auth.user_inactive')
      t.equal(await me({ cookie: u.cookie }), 401, `${how}: the session is gone`)
    }
    const back = await provisioned('reactivated.user')
    await s('PATCH', `/Users/${back.id}`, patch({ op: 'replace', value: { active: false } }))
    t.equal(await me({ token: back.pat }), 401)
    await s('PATCH', `/Users/${back.id}`, patch({ op: 'replace', value: { active: true } }))
    t.equal(await me({ token: back.pat }), 200, 'reactivated, the token works again (sessions stay ended)')
  }
)

t.test(
  'members: add, remove by value filter, remove all, PUT replaces them, unknown ids are left out; excludedAttributes=members',
  async (t) => {
    const [a, b, c] = [await provisioned('member.a'), await provisioned('member.b'), await provisioned('member.c')]
    const g = await group({ displayName: 'Members test', members: [{ value: a.id, display: 'Alpha' }] })
    t.same(
      g.members.map((m: { value: string; display: string }) => [m.value, m.display]),
      [[a.id, 'Alpha']],
      'the display a client sends is kept'
    )
    await s(
      'PATCH',
      `/Groups/${g.id}`,
      patch({
        op: 'add',
        path: 'members',
        value: [
          { value: b.id },
          { value: c.id },
          { value: 'string id 1' },
          { value: '00000000-0000-4000-8000-000000000000' }
        ]
      })
    )
    const after = (await s('GET', `/Groups/${g.id}`)).body
    t.same(
      after.members.map((m: { value: string }) => m.value),
      [a.id, b.id, c.id],
      'values that are no user of the tenant are left out'
    )
    t.equal(after.members[1].display, 'member b', "a member added without a display shows the user's name")
    await s('PATCH', `/Groups/${g.id}`, patch({ op: 'remove', path: `members[value eq "${b.id}"]` }))
    t.same(
      (await s('GET', `/Groups/${g.id}`)).body.members.map((m: { value: string }) => m.value),
      [a.id, c.id]
    )
    const excluded = await s('GET', `/Groups/${g.id}?excludedAttributes=members`)
    t.notOk('members' in excluded.body)
    t.equal(excluded.body.displayName, 'Members test')
    t.notOk(
      'members' in
        (
          await s(
            'GET',
            `/Groups?excludedAttributes=members&filter=${encodeURIComponent('displayName eq "Members test"')}`
          )
        ).body.Resources[0]
    )
    const put = await s('PUT', `/Groups/${g.id}`, {
      schemas: [groupUrn],
      id: g.id,
      displayName: 'Members test',
      members: [{ value: b.id }]
    })
    t.same(
      put.body.members.map((m: { value: string }) => m.value),
      [b.id]
    )
    await s('PATCH', `/Groups/${g.id}`, patch({ op: 'remove', path: 'members' }))
    t.notOk('members' in (await s('GET', `/Groups/${g.id}`)).body, 'remove all')
    const renamed = await s(
      'PATCH',
      `/Groups/${g.id}?attributes=displayName`,
      patch({ op: 'replace', value: { id: g.id, displayName: 'Renamed' } })
    )
    t.same(renamed.body, { schemas: g.schemas, id: g.id, displayName: 'Renamed' }, "Okta's rename repeats the id")
    const filtered = await s('GET', `/Groups?filter=${encodeURIComponent(`displayName eq "renamed" and members pr`)}`)
    t.equal(filtered.body.totalResults, 0)
    t.equal((await s('DELETE', `/Groups/${g.id}`)).status, 204)
    t.equal((await s('GET', `/Groups/${g.id}`)).status, 404)
  }
)

t.test(
  "deleting a group takes its role from its members at once; another tenant's SCIM groups read as a random id",
  async (t) => {
    const u = await provisioned('group.deleted')
    const g = await group({ displayName: 'reporter', members: [{ value: u.id }] })
    t.equal(await reportIncident(u.pat), 201)
    t.equal((await s('DELETE', `/Groups/${g.id}`)).status, 204)
    t.equal(await reportIncident(u.pat), 403)
    const kept = await group({ displayName: 'Acme only' })
    const globex = scim(server, await scimToken(server, 'globex'))
    for (const id of [kept.id, '5b0e3c8a-1111-4d2e-9a55-0123456789ab']) {
      t.equal((await globex('GET', `/Groups/${id}`)).status, 404)
      t.equal(
        (await globex('PATCH', `/Groups/${id}`, patch({ op: 'add', path: 'members', value: [{ value: u.id }] })))
          .status,
        404
      )
      t.equal((await globex('DELETE', `/Groups/${id}`)).status, 404)
    }
    const globexGroup = await globex('POST', '/Groups', {
      schemas: [groupUrn],
      displayName: 'reporter',
      members: [{ value: u.id }]
    })
    t.equal(globexGroup.status, 201)
    t.notOk('members' in globexGroup.body, "acme's user cannot be made a member of globex's group")
    t.equal(await reportIncident(u.pat), 403)
    t.equal(
      (await globex('GET', `/Groups?filter=${encodeURIComponent('displayName eq "Acme only"')}`)).body.totalResults,
      0
    )
  }
)

t.test('a SCIM credential acting with some roles only grants roles it holds', async (t) => {
  const narrow = scim(server, await scimToken(server, 'acme', ['admin', 'reporter']))
  const u = await provisioned('escalation.target')
  const refused = await narrow('POST', '/Groups', {
    schemas: [groupUrn],
    displayName: 'safety-manager',
    members: [{ value: u.id }]
  })
  t.equal(refused.status, 403)
  t.match(refused.body, {
    schemas: [errorUrn],
    status: '403',
    [errorExtensionUrn]: { code: 'role.escalation', notHeld: ['safety-manager'] }
  })
  const fine = await narrow('POST', '/Groups', {
    schemas: [groupUrn],
    displayName: 'reporter',
    members: [{ value: u.id }]
  })
  t.equal(fine.status, 201)
  t.equal(
    (
      await narrow(
        'PATCH',
        `/Groups/${fine.body.id}`,
        patch({ op: 'add', path: `${recordsGroupUrn}:roles`, value: ['safety-manager'] })
      )
    ).status,
    403
  )
})

t.test(
  'provisioning writes user.* and group.* events in its own transaction, and admins read them in the identity log',
  async (t) => {
    const u = await provisioned('audited.user')
    const g = await group({
      displayName: 'Audit trail group',
      members: [{ value: u.id }],
      [recordsGroupUrn]: { roles: ['reporter'] }
    })
    await s('PATCH', `/Users/${u.id}`, patch({ op: 'replace', path: 'displayName', value: 'Audited' }))
    await s('PATCH', `/Groups/${g.id}`, patch({ op: 'remove', path: 'members' }))
    await s('DELETE', `/Users/${u.id}`)
    const events = await eventsOf(u.id)
    t.match(events, [
      { type: 'user.provisioned', actor: { type: 'service-account' }, data: { via: 'scim', version: 1 } },
      { type: 'user.updated', data: { rolesGranted: ['reporter'], groupsJoined: [g.id], groupId: g.id } },
      { type: 'user.updated', data: { changed: ['displayName'], rolesGranted: [], rolesRevoked: [] } },
      { type: 'user.updated', data: { rolesRevoked: ['reporter'], groupsLeft: [g.id] } },
      { type: 'user.deactivated', data: { deleted: true } }
    ])
    t.match(await eventsOf(g.id), [
      { type: 'group.provisioned', data: { roles: ['reporter'], members: 1 } },
      { type: 'group.updated', data: { changed: ['members'], membersRemoved: 1 } }
    ])

    const before = (
      await platform.db.system.query('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', ['acme'])
    ).rows[0].n
    t.equal((await s('POST', '/Users', oktaUser('audited.user.2'))).status, 201)
    t.equal((await s('POST', '/Users', oktaUser('AUDITED.USER.2'))).status, 409)
    t.equal(
      (await s('PATCH', `/Groups/${g.id}`, patch({ op: 'replace', path: `${recordsGroupUrn}:roles`, value: ['nope'] })))
        .status,
      400
    )
    t.equal(
      (await s('PATCH', `/Groups/${g.id}`, patch({ op: 'replace', path: 'displayName', value: 'Audit trail group' })))
        .status,
      204
    )
    const after = (
      await platform.db.system.query('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', ['acme'])
    ).rows[0].n
    t.equal(after - before, 1, 'only the create wrote an event: refusals and a change to the same value write none')

    // The log shows a change once every transaction older than it has ended (cluster-wide): a moment after it commits.
    let log = await server.request('GET', `/api/v1/identity-log?subjectId=${u.id}`, { token })
    await eventually(
      async () =>
        (log = await server.request('GET', `/api/v1/identity-log?subjectId=${u.id}`, { token })).body.items.length ===
        events.length
    )
    t.equal(log.status, 200)
    t.same(
      log.body.items.map((e: { type: string }) => e.type),
      events.map((e) => e.type)
    )
    t.match(log.body.items[0], { actor: { type: 'service-account', name: 'acme scim' }, subjectId: u.id })
    const paged = await server.request('GET', '/api/v1/identity-log?limit=2&type=user.updated', { token })
    t.equal(paged.body.items.length, 2)
    const next = await server.request(
      'GET',
      `/api/v1/identity-log?limit=2&type=user.updated&cursor=${encodeURIComponent(paged.body.nextCursor)}`,
      { token }
    )
    t.notSame(next.body.items[0].id, paged.body.items[0].id)
    const reporter = await provisioned('not.an.admin')
    t.equal((await server.request('GET', '/api/v1/identity-log', { token: reporter.pat })).status, 403, 'admins only')
    const globexLog = await server.request('GET', '/api/v1/identity-log?limit=200', { token: server.keys.globex })
    t.notOk(globexLog.text.includes(u.id) || globexLog.text.includes(g.id), "another tenant's log holds none of it")
  }
)

t.test('the CLI writes through the same directory: its changes are events too', async (t) => {
  const u = await platform.users.create('acme', { userName: 'cli.user', roles: ['auditor'] })
  await platform.users.grantRole('acme', u.id, 'reporter')
  await platform.users.setActive('acme', u.id, false)
  t.match(await eventsOf(u.id), [
    { type: 'user.provisioned', actor: { type: 'system' }, data: { via: 'directory', roles: ['auditor'] } },
    { type: 'user.updated', data: { changed: ['roles'], rolesGranted: ['reporter'] } },
    { type: 'user.deactivated', data: { changed: ['active'], deleted: false } }
  ])
  const shown = (await s('GET', `/Users/${u.id}`)).body
  t.match(shown, { userName: 'cli.user', active: false, meta: { version: 'W/"3"' } })
})
