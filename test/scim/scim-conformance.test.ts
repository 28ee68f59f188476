import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'
import {
  errorExtensionUrn,
  errorUrn,
  groupUrn,
  oktaUser,
  recordsGroupUrn,
  scim,
  scimToken,
  userUrn
} from './helpers.ts'

/*
 * What a strict, generic SCIM client (scim2-tester and the like) relies on: error bodies with
 * only RFC 7644's members at the top level, canonical values as suggestions (RFC 7643 §2.3.1:
 * any `type` is accepted), and the roles a group may grant advertised per tenant in /Schemas,
 * so a client that does not know the tenant's role names can still create a group that grants one.
 */
const server = await startTestServer()
t.teardown(() => server.close())
const acme = scim(server, await scimToken(server, 'acme'))
const initech = scim(server, await scimToken(server, 'initech'))
const enc = encodeURIComponent
const rfcMembers = ['schemas', 'status', 'scimType', 'detail']

t.test(
  'a SCIM error has only RFC 7644 members at the top level; the service problem members sit under its extension URN',
  async (t) => {
    await acme('POST', '/Users', oktaUser('taken.name'))
    const conflict = await acme('POST', '/Users', oktaUser('taken.name'))
    t.equal(conflict.status, 409)
    t.same(conflict.body.schemas, [errorUrn, errorExtensionUrn])
    t.same(
      Object.keys(conflict.body)
        .filter((k) => k !== errorExtensionUrn)
        .sort(),
      ['detail', 'schemas', 'scimType', 'status']
    )
    t.match(conflict.body, {
      status: '409',
      scimType: 'uniqueness',
      detail: /taken\.name/,
      [errorExtensionUrn]: { code: 'user.exists', title: 'Conflict', type: /^http/ }
    })
    t.type(conflict.body[errorExtensionUrn].traceId, 'string')
    t.equal(conflict.body[errorExtensionUrn].traceId, conflict.headers.get('x-trace-id'))
    for (const [method, path, token] of [
      ['GET', '/Users?filter=bad', undefined],
      ['GET', '/Users/nobody', undefined],
      ['GET', '/Users', 'not-a-token']
    ] as const) {
      const r = token ? await server.request(method, `/api/scim/v2${path}`, { token }) : await acme(method, path)
      t.ok(
        Object.keys(r.body).every((k) => rfcMembers.includes(k) || k === errorExtensionUrn),
        `${method} ${path}: ${Object.keys(r.body).join(', ')}`
      )
      t.type(r.body[errorExtensionUrn]?.code, 'string', `${method} ${path}`)
    }
  }
)

t.test('a role, an entitlement or an e-mail of any type is accepted: canonical values are suggestions', async (t) => {
  const r = await acme('POST', '/Users', {
    ...oktaUser('typed.values'),
    emails: [{ value: 'typed@example.com', type: 'personal' }],
    roles: [{ value: 'Site lead', type: 'business' }],
    entitlements: [{ value: 'badge', type: 'physical' }],
    x509Certificates: [{ value: 'TUlJQw==', type: 'signing' }]
  })
  t.equal(r.status, 201, r.text)
  t.match(r.body, {
    emails: [{ type: 'personal' }],
    roles: [{ value: 'Site lead', type: 'business' }],
    entitlements: [{ type: 'physical' }]
  })
  const user = (await acme('GET', `/Schemas/${enc(userUrn)}`)).body
  const sub = (attr: string, name: string) =>
    user.attributes
      .find((a: { name: string }) => a.name === attr)
      .subAttributes.find((s: { name: string }) => s.name === name)
  t.same(sub('emails', 'type').canonicalValues, ['work', 'home', 'other'], 'suggested values still advertised')
  t.notOk('canonicalValues' in sub('roles', 'type'), 'no empty list that would refuse every value')
})

t.test(
  '/Schemas advertises the roles a group can grant in this tenant, as canonical values of the records extension',
  async (t) => {
    const rolesOf = async (s: typeof acme) => {
      const ext = (await s('GET', `/Schemas/${enc(recordsGroupUrn)}`)).body
      return ext.attributes.find((a: { name: string }) => a.name === 'roles').canonicalValues
    }
    const acmeRoles = await rolesOf(acme)
    t.ok(
      acmeRoles.includes('admin') && acmeRoles.includes('health-officer') && acmeRoles.includes('safety-manager'),
      acmeRoles.join(', ')
    )
    const listed = (await acme('GET', '/Schemas')).body.Resources.find((s: { id: string }) => s.id === recordsGroupUrn)
    t.same(
      listed.attributes.find((a: { name: string }) => a.name === 'roles').canonicalValues,
      acmeRoles,
      'the list says the same'
    )
    const initechRoles = await rolesOf(initech)
    t.ok(initechRoles.length < acmeRoles.length, 'each tenant its own roles')
    // A generic client picks one of the advertised values and creates a group with it.
    const g = await acme('POST', '/Groups', {
      schemas: [groupUrn, recordsGroupUrn],
      displayName: 'Picked from schema',
      [recordsGroupUrn]: { roles: [acmeRoles.find((r: string) => r !== 'admin')] }
    })
    t.equal(g.status, 201)
  }
)
