import t from '../helpers/tap.ts'
import { userWithToken } from '../helpers/identity.ts'
import { startTestServer } from '../helpers/server.ts'
import { errorExtensionUrn, groupUrn, oktaUser, patchUrn, scim, scimToken } from './helpers.ts'

/*
 * A credential acting with some roles changes the sign-in identity (userName, emails,
 * externalId, active), the group memberships or the existence of a user only when it holds
 * every role that user holds: otherwise an admin could point a health officer's e-mail at an
 * identity-provider account it controls, sign in as them and read medical details.
 */
const server = await startTestServer()
t.teardown(() => server.close())
const patch = (...Operations: unknown[]) => ({ schemas: [patchUrn], Operations })

const officer = await server.platform.users.create('acme', {
  userName: 'hana.officer@acme.example',
  emails: [{ value: 'hana.officer@acme.example', type: 'work', primary: true }],
  externalId: 'oid-hana',
  roles: ['health-officer']
})
const adminOnly = await userWithToken(server, 'acme', ['admin'], { userName: 'ade.admin' })
const asAdmin = scim(server, adminOnly.token)
const plain = await server.platform.users.createGroup('acme', { displayName: 'Site Leeds', roles: [] })

t.test(
  'an admin-only user cannot take over a health officer: every identity change is 403 role.escalation and nothing changes',
  async (t) => {
    const takeover = await asAdmin(
      'PATCH',
      `/Users/${officer.id}`,
      patch({ op: 'replace', path: 'emails[type eq "work"].value', value: 'attacker@evil.example' })
    )
    t.equal(takeover.status, 403)
    t.match(takeover.body, {
      status: '403',
      [errorExtensionUrn]: { code: 'role.escalation', notHeld: ['health-officer'] }
    })
    const refusals: Array<[string, string, unknown]> = [
      ['PATCH', `/Users/${officer.id}`, patch({ op: 'replace', path: 'externalId', value: 'oid-attacker' })],
      ['PATCH', `/Users/${officer.id}`, patch({ op: 'replace', path: 'userName', value: 'attacker@evil.example' })],
      ['PATCH', `/Users/${officer.id}`, patch({ op: 'replace', value: { active: false } })],
      [
        'PUT',
        `/Users/${officer.id}`,
        {
          ...oktaUser('hana.officer@acme.example'),
          emails: [{ value: 'attacker@evil.example', type: 'work', primary: true }]
        }
      ],
      ['DELETE', `/Users/${officer.id}`, undefined],
      ['PATCH', `/Groups/${plain.id}`, patch({ op: 'add', path: 'members', value: [{ value: officer.id }] })],
      ['POST', '/Groups', { schemas: [groupUrn], displayName: 'Smuggled', members: [{ value: officer.id }] }]
    ]
    for (const [method, path, body] of refusals) {
      const r = await asAdmin(method, path, body)
      t.equal(r.status, 403, `${method} ${path} ${JSON.stringify(body)?.slice(0, 80)}`)
      t.equal(r.body[errorExtensionUrn].code, 'role.escalation')
    }
    const after = await server.platform.users.get('acme', officer.id)
    t.match(after, {
      email: 'hana.officer@acme.example',
      emails: [{ value: 'hana.officer@acme.example' }],
      externalId: 'oid-hana',
      userName: 'hana.officer@acme.example',
      active: true,
      groups: []
    })
    t.equal(after!.version, officer.version, 'the health officer was not changed at all')
    t.equal(await server.platform.users.group('acme', 'Smuggled'), undefined)
  }
)

t.test(
  'what the rule leaves alone: users holding only roles the caller holds, and attributes that are no identity',
  async (t) => {
    const peer = await server.platform.users.create('acme', { userName: 'pat.peer@acme.example', roles: [] })
    t.equal(
      (
        await asAdmin(
          'PATCH',
          `/Users/${peer.id}`,
          patch({ op: 'replace', path: 'emails[type eq "work"].value', value: 'pat@acme.example' })
        )
      ).status,
      204
    )
    t.equal(
      (
        await asAdmin(
          'PATCH',
          `/Groups/${plain.id}`,
          patch({ op: 'add', path: 'members', value: [{ value: peer.id }] })
        )
      ).status,
      204
    )
    t.equal(
      (
        await asAdmin(
          'PATCH',
          `/Users/${officer.id}`,
          patch({ op: 'replace', path: 'title', value: 'Occupational health' })
        )
      ).status,
      204,
      'a title is no identity'
    )
  }
)

t.test(
  'an admin who also holds the role, a tenant API key and a SCIM service account without roles may change the health officer',
  async (t) => {
    const both = await userWithToken(server, 'acme', ['admin', 'health-officer'], { userName: 'bo.both' })
    const r = await scim(server, both.token)(
      'PATCH',
      `/Users/${officer.id}`,
      patch({ op: 'replace', path: 'emails[type eq "work"].value', value: 'hana@acme.example' })
    )
    t.equal(r.status, 204)
    t.equal((await server.platform.users.get('acme', officer.id))!.email, 'hana@acme.example')
    const key = await scim(server, server.keys.acme)(
      'PATCH',
      `/Users/${officer.id}`,
      patch({ op: 'replace', path: 'externalId', value: 'oid-hana-2' })
    )
    t.equal(key.status, 204)
    const tenantWide = await scim(server, await scimToken(server, 'acme'))(
      'PATCH',
      `/Groups/${plain.id}`,
      patch({ op: 'add', path: 'members', value: [{ value: officer.id }] })
    )
    t.equal(tenantWide.status, 204)
  }
)

t.test('a SCIM service account acts with its roles: one made with admin only is refused the same way', async (t) => {
  const narrow = scim(server, await scimToken(server, 'acme', ['admin']))
  const r = await narrow(
    'PATCH',
    `/Users/${officer.id}`,
    patch({ op: 'replace', path: 'externalId', value: 'oid-evil' })
  )
  t.equal(r.status, 403)
  t.equal(r.body[errorExtensionUrn].code, 'role.escalation')
  const removal = await narrow(
    'PATCH',
    `/Groups/${plain.id}`,
    patch({ op: 'remove', path: `members[value eq "${officer.id}"]` })
  )
  t.equal(removal.status, 403, 'taking the officer out of a group is a membership change too')
  t.equal((await server.platform.users.get('acme', officer.id))!.externalId, 'oid-hana-2')
})
