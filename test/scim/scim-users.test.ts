import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'
import {
  enterpriseUrn,
  errorExtensionUrn,
  errorUrn,
  oktaUser,
  patchUrn,
  scim,
  scimToken,
  scimType,
  userUrn
} from './helpers.ts'

const server = await startTestServer()
t.teardown(() => server.close())
const s = scim(server, await scimToken(server, 'acme'))
const enc = encodeURIComponent
const patch = (...Operations: unknown[]) => ({ schemas: [patchUrn], Operations })

async function created(body: Record<string, unknown>) {
  const r = await s('POST', '/Users', body)
  if (r.status !== 201) throw new Error(`setup: create answered ${r.status} ${r.text}`)
  return r.body
}

t.test('a created user is answered as application/scim+json with its id, meta, ETag and Location', async (t) => {
  const r = await s('POST', '/Users', oktaUser('ada.lovelace'))
  t.equal(r.status, 201)
  t.match(r.headers.get('content-type'), /^application\/scim\+json/)
  t.match(r.body, {
    schemas: [userUrn],
    userName: 'ada.lovelace',
    name: { givenName: 'ada', familyName: 'lovelace' },
    active: true,
    meta: { resourceType: 'User', version: 'W/"1"' }
  })
  t.equal(r.headers.get('etag'), 'W/"1"')
  t.equal(r.headers.get('location'), r.body.meta.location)
  t.match(r.body.meta.location, new RegExp(`/api/scim/v2/Users/${r.body.id}$`))
  const read = await s('GET', `/Users/${r.body.id}`)
  t.same(read.body, r.body, 'GET gives back what the create answered')
})

t.test(
  'a body sent as application/json is read too, and another media type is refused with a SCIM error',
  async (t) => {
    const json = await server.request('POST', '/api/scim/v2/Users', {
      token: await scimToken(server, 'acme'),
      body: oktaUser('json.sender')
    })
    t.equal(json.status, 201)
    const text = await s('POST', '/Users', undefined, {})
    t.equal(text.status, 400, 'no body at all: the schema requires userName')
    const refused = await server.request('POST', '/api/scim/v2/Users', {
      token: await scimToken(server, 'acme'),
      raw: 'userName=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' }
    })
    t.equal(refused.status, 415)
    t.match(refused.body, {
      schemas: [errorUrn],
      status: '415',
      [errorExtensionUrn]: { code: 'request.unsupported_media_type' }
    })
  }
)

t.test('userName is unique without regard to case: a second one is 409 uniqueness', async (t) => {
  await created(oktaUser('grace.hopper'))
  const again = await s('POST', '/Users', oktaUser('GRACE.HOPPER'))
  t.equal(again.status, 409)
  t.match(again.body, {
    schemas: [errorUrn],
    status: '409',
    scimType: 'uniqueness',
    detail: /grace\.hopper|GRACE\.HOPPER/i,
    [errorExtensionUrn]: { code: 'user.exists' }
  })
  t.type(again.body[errorExtensionUrn].traceId, 'string')
})

t.test(
  'refusals are SCIM errors: a missing userName, malformed JSON, an unknown id, a filter that does not parse',
  async (t) => {
    const missing = await s('POST', '/Users', { schemas: [userUrn], displayName: 'No name' })
    t.match(missing.body, { status: '400', scimType: 'invalidValue' })
    const junk = await server.request('POST', '/api/scim/v2/Users', {
      token: await scimToken(server, 'acme'),
      raw: '{"acve": tre',
      headers: { 'content-type': scimType }
    })
    t.match(junk.body, { status: '400', scimType: 'invalidSyntax' })
    const unknown = await s('GET', '/Users/010101001010101011001010101011')
    t.equal(unknown.status, 404)
    t.match(unknown.body, { schemas: [errorUrn], status: '404' })
    for (const bad of [
      'userName eq',
      'userName xx "a"',
      '(userName eq "a"',
      'userName eq "a" and',
      'nosuchattribute eq "a"',
      'active gt true',
      'meta.created gt "yesterday"'
    ]) {
      const r = await s('GET', `/Users?filter=${enc(bad)}`)
      t.equal(r.status, 400, bad)
      t.equal(r.body.scimType, 'invalidFilter', bad)
    }
  }
)

t.test('no credential, a wrong one or one without the scim scope get SCIM errors too', async (t) => {
  const none = await server.request('GET', '/api/scim/v2/Users', { token: null })
  t.equal(none.status, 401)
  t.match(none.body, { schemas: [errorUrn], status: '401' })
  const wrong = await server.request('GET', '/api/scim/v2/Users', { token: 'non-token' })
  t.match(wrong.body, { schemas: [errorUrn], status: '401', [errorExtensionUrn]: { code: 'auth.invalid' } })
  const reader = (
    await server.platform.credentials.create({
      tenantId: 'acme',
      kind: 'service_account',
      name: 'reader',
      scopes: ['records:read']
    })
  ).token
  const scoped = await server.request('GET', '/api/scim/v2/Users', { token: reader })
  t.match(scoped.body, { status: '403', [errorExtensionUrn]: { code: 'scope.missing', missingScope: 'scim' } })
  const nonAdmin = await scimToken(server, 'acme', ['reporter'])
  t.match((await scim(server, nonAdmin)('GET', '/Users')).body, {
    status: '403',
    [errorExtensionUrn]: { code: 'permission.denied' }
  })
})

t.test(
  'filters: every operator, and, or, not, parentheses, value paths, names in any case, userName without regard to case',
  async (t) => {
    const tag = `f${Date.now().toString(36)}`
    const a = await created({
      ...oktaUser(`${tag}.alpha`),
      title: 'Site engineer',
      emails: [
        { value: `alpha@${tag}.example.com`, type: 'work', primary: true },
        { value: `alpha@home.${tag}.org`, type: 'home' }
      ]
    })
    const b = await created({
      ...oktaUser(`${tag}.beta`),
      active: false,
      emails: [{ value: `beta@${tag}.example.org`, type: 'work' }],
      [enterpriseUrn]: { department: 'EHS', employeeNumber: '701' }
    })
    const c = await created({
      ...oktaUser(`${tag}.gamma`),
      emails: [{ value: `gamma@${tag}.example.com`, type: 'home' }]
    })
    const ids = async (filter: string) => {
      const r = await s('GET', `/Users?filter=${enc(`(${filter}) and userName sw "${tag}"`)}`)
      if (r.status !== 200) throw new Error(`${filter}: ${r.status} ${r.text}`)
      return r.body.Resources.map((u: { id: string }) => u.id).sort()
    }
    const sorted = (...xs: Array<{ id: string }>) => xs.map((x) => x.id).sort()
    t.same(await ids(`userName eq "${tag.toUpperCase()}.ALPHA"`), sorted(a), 'eq on userName ignores case')
    t.same(await ids(`UserName Eq "${tag}.alpha"`), sorted(a), 'attribute names and operators in any case')
    t.same(await ids(`userName ne "${tag}.alpha"`), sorted(b, c), 'ne')
    t.same(await ids('userName co "ET"'), sorted(b), 'co')
    t.same(await ids(`userName ew "MMA"`), sorted(c), 'ew')
    t.same(await ids(`userName gt "${tag}.b"`), sorted(b, c), 'gt')
    t.same(await ids(`userName ge "${tag}.beta"`), sorted(b, c), 'ge')
    t.same(await ids(`userName lt "${tag}.b"`), sorted(a), 'lt')
    t.same(await ids(`userName le "${tag}.beta"`), sorted(a, b), 'le')
    t.same(await ids('title pr'), sorted(a), 'pr')
    t.same(await ids('active eq false'), sorted(b), 'a boolean')
    t.same(await ids('active eq "True"'), sorted(a, c), 'a boolean as Entra writes it')
    t.same(
      await ids('emails[type eq "work" and value co ".example.com"]'),
      sorted(a),
      'a value path holds one element to both conditions'
    )
    t.same(await ids('emails[type eq "work"].value ew ".org"'), sorted(b), 'a value path with a sub-attribute')
    t.same(await ids('emails.type eq "home"'), sorted(a, c), 'a sub-attribute of any element')
    t.same(await ids('emails co "GAMMA@"'), sorted(c), 'a multi-valued attribute compares its values')
    t.same(
      await ids(`urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department eq "ehs"`),
      sorted(b),
      'an extension attribute by its URN'
    )
    t.same(await ids('not (active eq false or title pr)'), sorted(c), 'not applies to the whole parenthesis')
    t.same(await ids('not (active eq true and title pr)'), sorted(b, c), 'not (a and b) is not a or not b')
    t.same(
      await ids('userName ew "alpha" or (active eq false and (emails.value co ".org" or title pr))'),
      sorted(a, b),
      'nested parentheses'
    )
    t.same(
      await ids('meta.created gt 2015-10-10T14:38:21.8617979-07:00'),
      sorted(a, b, c),
      'a date-time, unquoted with seven decimals as Microsoft sends it'
    )
    t.same(await ids(`meta.lastModified lt "2000-01-01T00:00:00Z"`), [], 'nothing before 2000')
    t.same(await ids(`name.familyName eq ALPHA`), sorted(a), 'a bare word compared as text')
    t.same(await ids(`externalId eq null`), sorted(a, b, c), 'eq null: the attribute is absent')
  }
)

t.test('attributes and excludedAttributes shape each answer; id and schemas always come', async (t) => {
  const u = await created({
    ...oktaUser('shape.tester'),
    [enterpriseUrn]: { department: 'Quality', manager: { value: 'm-1' } }
  })
  const only = await s('GET', `/Users/${u.id}?attributes=userName,name.givenName,${enc(`${enterpriseUrn}:department`)}`)
  t.same(only.body, {
    schemas: u.schemas,
    id: u.id,
    userName: 'shape.tester',
    name: { givenName: 'shape' },
    [enterpriseUrn]: { department: 'Quality' }
  })
  t.equal(only.headers.get('etag'), 'W/"1"', 'the ETag is there although meta was left out')
  const without = await s('GET', `/Users/${u.id}?excludedAttributes=emails,meta,${enc(enterpriseUrn)}`)
  t.notOk('emails' in without.body)
  t.notOk('meta' in without.body)
  t.notOk(enterpriseUrn in without.body)
  t.equal(without.body.userName, 'shape.tester')
  const list = await s('GET', `/Users?filter=${enc('userName eq "shape.tester"')}&attributes=emails[type eq "work"]`)
  t.same(
    list.body.Resources[0],
    { schemas: u.schemas, id: u.id, emails: u.emails },
    'a filter in an attribute name is read as the attribute'
  )
})

t.test('PUT replaces every writable attribute and round-trips what has no column of its own', async (t) => {
  const u = await created(oktaUser('put.tester'))
  const replacement = {
    schemas: [userUrn, enterpriseUrn],
    id: u.id,
    userName: 'put.tester',
    externalId: 'ext-put',
    name: { formatted: 'Put Tester', givenName: 'Put', familyName: 'Tester' },
    displayName: 'Put Tester',
    active: true,
    emails: [{ value: 'put@example.com', type: 'work', primary: true }],
    phoneNumbers: [{ value: '+44 113 496 0000', type: 'work' }],
    addresses: [{ country: 'GB', locality: 'Leeds', type: 'work', primary: true }],
    title: 'Safety lead',
    preferredLanguage: 'en-GB',
    locale: 'en-GB',
    timezone: 'Europe/London',
    [enterpriseUrn]: { employeeNumber: '42', department: 'EHS', manager: { value: 'boss-1' } }
  }
  const put = await s('PUT', `/Users/${u.id}`, replacement)
  t.equal(put.status, 200)
  const read = await s('GET', `/Users/${u.id}`)
  const { meta, groups, ...shown } = read.body
  t.same(shown, replacement, 'what a PUT sends, a GET gives back')
  t.equal(meta.version, 'W/"2"')
  t.equal(groups, undefined)
  const cleared = await s('PUT', `/Users/${u.id}`, { schemas: [userUrn], userName: 'put.tester' })
  t.same(
    Object.keys(cleared.body).sort(),
    ['active', 'id', 'meta', 'schemas', 'userName'],
    'what a PUT leaves out is cleared'
  )
  const noName = await s('PUT', `/Users/${u.id}`, { schemas: [userUrn], userame: 'typo' })
  t.match(noName.body, { status: '400', scimType: 'invalidValue' })
  const otherId = await s('PUT', `/Users/${u.id}`, {
    schemas: [userUrn],
    id: '00000000-0000-0000-0000-000000000000',
    userName: 'put.tester'
  })
  t.match(otherId.body, { status: '400', scimType: 'mutability' })
})

t.test(
  'PATCH as Entra ID sends it: capitalised ops, string booleans, value-filter paths that add, no-path objects, the manager as an id',
  async (t) => {
    const u = await created({
      ...oktaUser('entra.user'),
      emails: [{ value: 'entra@example.com', type: 'work', primary: true }]
    })
    const r = await s(
      'PATCH',
      `/Users/${u.id}`,
      patch(
        { op: 'Replace', path: 'active', value: 'False' },
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'entra.new@example.com' },
        { op: 'Add', path: 'emails[type eq "home"].value', value: 'entra@home.example' },
        { op: 'Add', path: 'phoneNumbers[type eq "mobile"].value', value: '+44 7700 900000' },
        { op: 'Replace', path: 'Name.FamilyName', value: 'Updated' },
        { op: 'Add', path: `${enterpriseUrn}:manager`, value: 'boss-7' },
        { op: 'Add', path: `${enterpriseUrn}:department`, value: 'Operations' },
        {
          op: 'Replace',
          value: { displayName: 'Entra Updated', 'name.givenName': 'Ent', [`${enterpriseUrn}:costCenter`]: 'CC-1' }
        }
      )
    )
    t.equal(r.status, 204)
    t.equal(r.headers.get('etag'), 'W/"2"', 'all operations are one change')
    const now = (await s('GET', `/Users/${u.id}`)).body
    t.equal(now.active, false)
    t.same(now.emails, [
      { value: 'entra.new@example.com', type: 'work', primary: true },
      { type: 'home', value: 'entra@home.example' }
    ])
    t.same(now.phoneNumbers, [{ type: 'mobile', value: '+44 7700 900000' }])
    t.same(now.name, { givenName: 'Ent', familyName: 'Updated' })
    t.equal(now.displayName, 'Entra Updated')
    t.same(now[enterpriseUrn], { manager: { value: 'boss-7' }, department: 'Operations', costCenter: 'CC-1' })
    const removeFilter = await s(
      'PATCH',
      `/Users/${u.id}`,
      patch({ op: 'Remove', path: 'emails[type eq "home"]' }, { op: 'remove', path: `${enterpriseUrn}:manager` })
    )
    t.equal(removeFilter.status, 204)
    const after = (await s('GET', `/Users/${u.id}`)).body
    t.same(after.emails, [{ value: 'entra.new@example.com', type: 'work', primary: true }])
    t.notOk('manager' in after[enterpriseUrn])
  }
)

t.test(
  'PATCH as Okta sends it: lower-case ops, no path with an object, and 200 with the user when attributes are asked for',
  async (t) => {
    const u = await created(oktaUser('okta.user'))
    const r = await s(
      'PATCH',
      `/Users/${u.id}?attributes=active,userName`,
      patch({ op: 'replace', value: { active: false } })
    )
    t.equal(r.status, 200)
    t.same(r.body, { schemas: [userUrn], id: u.id, userName: 'okta.user', active: false })
    const renamed = await s(
      'PATCH',
      `/Users/${u.id}?excludedAttributes=emails`,
      patch({ op: 'replace', path: 'userName', value: 'okta.renamed' }, { op: 'add', path: 'nickName', value: 'Okie' })
    )
    t.match(renamed.body, { userName: 'okta.renamed', nickName: 'Okie' })
    t.notOk('emails' in renamed.body)
  }
)

t.test(
  'PATCH refusals: an unknown path, a read-only attribute, a bad op, a filter that matches nothing to remove, none applied',
  async (t) => {
    const u = await created(oktaUser('patch.refusals'))
    const cases: Array<[unknown, string]> = [
      [patch({ op: 'replace', path: 'nosuch', value: 'x' }), 'invalidPath'],
      [patch({ op: 'replace', path: 'id', value: 'x' }), 'mutability'],
      [patch({ op: 'replace', path: 'meta.created', value: 'x' }), 'mutability'],
      [patch({ op: 'replace', path: 'groups', value: [] }), 'mutability'],
      [patch({ op: 'move', path: 'userName', value: 'x' }), 'invalidSyntax'],
      [patch({ op: 'remove' }), 'noTarget'],
      [patch({ op: 'replace', path: 'emails[value co "nowhere"].value', value: 'x@y' }), 'noTarget'],
      [patch({ op: 'replace', path: 'emails[type eq "work"', value: 'x' }), 'invalidPath'],
      [patch({ op: 'replace', path: 'active', value: 'maybe' }), 'invalidValue'],
      [{ schemas: [patchUrn] }, 'invalidValue'],
      [
        patch({ op: 'replace', path: 'displayName', value: 'Kept' }, { op: 'replace', path: 'userName', value: '' }),
        'invalidValue'
      ]
    ]
    for (const [body, scimType] of cases) {
      const r = await s('PATCH', `/Users/${u.id}`, body)
      t.equal(r.status, 400, JSON.stringify(body))
      t.equal(r.body.scimType, scimType, JSON.stringify(body))
    }
    const now = (await s('GET', `/Users/${u.id}`)).body
    t.equal(now.displayName, u.displayName, 'a PATCH with one bad operation changes nothing')
    t.equal(now.meta.version, 'W/"1"')
  }
)

t.test('If-Match: the current ETag passes, another is 412, and DELETE honours it too', async (t) => {
  const u = await created(oktaUser('etag.user'))
  const stale = await s('PATCH', `/Users/${u.id}`, patch({ op: 'replace', path: 'displayName', value: 'A' }), {
    'if-match': 'W/"7"'
  })
  t.equal(stale.status, 412)
  t.match(stale.body, { schemas: [errorUrn], status: '412', [errorExtensionUrn]: { currentVersion: 1 } })
  const fresh = await s('PATCH', `/Users/${u.id}`, patch({ op: 'replace', path: 'displayName', value: 'A' }), {
    'if-match': 'W/"1"'
  })
  t.equal(fresh.status, 204)
  t.equal(fresh.headers.get('etag'), 'W/"2"')
  t.equal((await s('PUT', `/Users/${u.id}`, oktaUser('etag.user'), { 'if-match': '"1"' })).status, 412)
  t.equal((await s('DELETE', `/Users/${u.id}`, undefined, { 'if-match': 'W/"1"' })).status, 412)
  t.equal((await s('DELETE', `/Users/${u.id}`, undefined, { 'if-match': '*' })).status, 204)
})

t.test('a deleted user is 404, listed nowhere, and its userName can be provisioned again', async (t) => {
  const u = await created(oktaUser('gone.user'))
  t.equal((await s('DELETE', `/Users/${u.id}`)).status, 204)
  t.equal((await s('GET', `/Users/${u.id}`)).status, 404)
  t.equal((await s('DELETE', `/Users/${u.id}`)).status, 404)
  t.equal((await s('PATCH', `/Users/${u.id}`, patch({ op: 'replace', path: 'active', value: true }))).status, 404)
  t.equal((await s('GET', `/Users?filter=${enc('userName eq "gone.user"')}`)).body.totalResults, 0)
  const again = await s('POST', '/Users', oktaUser('gone.user'))
  t.equal(again.status, 201)
  t.not(again.body.id, u.id)
  // The deleted user's row stays for the names records show.
  t.equal((await server.platform.users.names('acme', [u.id])).get(u.id), 'gone user')
})

t.test(
  'paging with startIndex and count, in creation order; trailing slashes and endpoint names in another case are served',
  async (t) => {
    const tag = `p${Date.now().toString(36)}`
    const made = []
    for (let i = 0; i < 5; i++) made.push(await created(oktaUser(`${tag}.u${i}`)))
    const filter = enc(`userName sw "${tag}"`)
    const page = async (startIndex: number, count: number) =>
      (await s('GET', `/Users?filter=${filter}&startIndex=${startIndex}&count=${count}`)).body
    t.match(await page(1, 2), { totalResults: 5, startIndex: 1, itemsPerPage: 2 })
    const all = [...(await page(1, 2)).Resources, ...(await page(3, 2)).Resources, ...(await page(5, 2)).Resources]
    t.same(
      all.map((u: { id: string }) => u.id),
      made.map((u) => u.id)
    )
    t.match(
      await page(0, -3),
      { startIndex: 1, itemsPerPage: 0, totalResults: 5, Resources: [] },
      'startIndex below 1 is 1, count below 0 is 0'
    )
    t.equal((await page(9, 2)).itemsPerPage, 0)
    const bad = await s('GET', `/Users?startIndex=two`)
    t.match(bad.body, { status: '400', scimType: 'invalidValue' })
    const slash = await s('GET', `/Users/?filter=${filter}`)
    t.equal(slash.body.totalResults, 5)
    t.equal((await s('GET', `/users?filter=${filter}`)).body.totalResults, 5)
  }
)

t.test('discovery: ServiceProviderConfig, ResourceTypes and Schemas are read-only', async (t) => {
  const config = await s('GET', '/ServiceProviderConfig')
  t.match(config.body, {
    patch: { supported: true },
    filter: { supported: true, maxResults: 200 },
    etag: { supported: true },
    bulk: { supported: false }
  })
  const types = await s('GET', '/ResourceTypes')
  t.match(types.body, {
    totalResults: 2,
    Resources: [
      { id: 'User', endpoint: '/Users' },
      { id: 'Group', endpoint: '/Groups' }
    ]
  })
  t.equal((await s('GET', '/ResourceTypes/Group')).body.schema, 'urn:ietf:params:scim:schemas:core:2.0:Group')
  const schemas = await s('GET', '/Schemas')
  t.ok(schemas.text.includes('User Account'))
  t.same(
    schemas.body.Resources.map((r: { id: string }) => r.id),
    [
      userUrn,
      enterpriseUrn,
      'urn:ietf:params:scim:schemas:core:2.0:Group',
      'urn:qehs:params:scim:schemas:extension:records:2.0:Group'
    ]
  )
  t.equal((await s('GET', `/Schemas/${enc(enterpriseUrn)}`)).body.name, 'EnterpriseUser')
  for (const [method, path] of [
    ['POST', '/Schemas'],
    ['PUT', '/ServiceProviderConfig'],
    ['PATCH', '/ResourceTypes/User'],
    ['DELETE', `/Schemas/${enc(userUrn)}`]
  ]) {
    const r = await s(method, path, method === 'DELETE' ? undefined : {})
    t.equal(r.status, 405, `${method} ${path}`)
    t.match(r.body, { schemas: [errorUrn], status: '405' })
    t.match(r.headers.get('allow'), /GET/)
  }
})

t.test(
  "one tenant's SCIM users are invisible to another: reads, writes and filters answer as for a random id",
  async (t) => {
    const a = await created(oktaUser('acme.secret'))
    const globex = scim(server, await scimToken(server, 'globex'))
    const random = '5b0e3c8a-1111-4d2e-9a55-0123456789ab'
    for (const id of [a.id, random]) {
      t.equal((await globex('GET', `/Users/${id}`)).status, 404)
      t.equal((await globex('PUT', `/Users/${id}`, oktaUser('taken.over'))).status, 404)
      t.equal(
        (await globex('PATCH', `/Users/${id}`, patch({ op: 'replace', path: 'active', value: false }))).status,
        404
      )
      t.equal((await globex('DELETE', `/Users/${id}`)).status, 404)
      t.equal((await globex('GET', `/Users?filter=${enc(`id eq "${id}"`)}`)).body.totalResults, 0)
    }
    t.equal((await globex('GET', `/Users?filter=${enc('userName eq "acme.secret"')}`)).body.totalResults, 0)
    t.equal(
      (await globex('POST', '/Users', oktaUser('acme.secret'))).status,
      201,
      'the same userName is free in another tenant'
    )
    t.equal((await s('GET', `/Users/${a.id}`)).body.active, true, "A's user is untouched")
  }
)
