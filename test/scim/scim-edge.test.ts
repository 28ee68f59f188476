import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'
import { errorUrn, oktaUser, patchUrn, scim, scimToken, userUrn } from './helpers.ts'

/*
 * What a SCIM client sends at the edges: attribute names that are JavaScript's own
 * (constructor, __proto__, toString) name no attribute, and text PostgreSQL cannot hold (NUL)
 * is refused before it reaches the database; both as SCIM errors, never a 500.
 */
const server = await startTestServer()
t.teardown(() => server.close())
const s = scim(server, await scimToken(server, 'acme'))
const enc = encodeURIComponent
const patch = (...Operations: unknown[]) => ({ schemas: [patchUrn], Operations })

t.test('filters naming JavaScript object members are 400 invalidFilter on Users and Groups', async (t) => {
  const filters = [
    'constructor pr',
    '__proto__ pr',
    'toString eq "x"',
    'hasOwnProperty eq "x"',
    'name.constructor eq "x"',
    'name.__proto__ pr',
    'emails[constructor eq "x"]',
    'emails.toString eq "x"',
    'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:constructor pr',
    'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager.constructor pr',
    'meta.constructor pr'
  ]
  for (const f of filters) {
    const r = await s('GET', `/Users?filter=${enc(f)}`)
    t.equal(r.status, 400, f)
    t.match(r.body, { schemas: [errorUrn], status: '400', scimType: 'invalidFilter' }, f)
  }
  for (const f of [
    'constructor pr',
    'members[constructor eq "x"]',
    'urn:qehs:params:scim:schemas:extension:records:2.0:Group:constructor pr'
  ]) {
    const r = await s('GET', `/Groups?filter=${enc(f)}`)
    t.equal(r.status, 400, f)
    t.equal(r.body.scimType, 'invalidFilter', f)
  }
})

t.test('a NUL character is refused at the edge: in a filter, a body, a PATCH value', async (t) => {
  const filter = await s('GET', `/Users?filter=${enc('userName eq "x\u0000"')}`)
  t.equal(filter.status, 400)
  t.match(filter.body, { schemas: [errorUrn], status: '400', scimType: 'invalidFilter', detail: /NUL/ })
  for (const escaped of ['userName eq "x\\u0000"', 'emails[value eq "\\u0000"]', 'displayName co "\\ud800"']) {
    const r = await s('GET', `/Users?filter=${enc(escaped)}`)
    t.equal(r.status, 400, `escaped in the filter's JSON string: ${escaped}`)
    t.equal(r.body.scimType, 'invalidFilter', escaped)
  }
  const created = await s('POST', '/Users', { schemas: [userUrn], userName: 'nul\u0000user' })
  t.equal(created.status, 400)
  t.match(created.body, { schemas: [errorUrn], status: '400', detail: /NUL/ })
  const u = await s('POST', '/Users', oktaUser('plain.user'))
  const patched = await s(
    'PATCH',
    `/Users/${u.body.id}`,
    patch({ op: 'replace', path: 'displayName', value: 'a\u0000b' })
  )
  t.equal(patched.status, 400)
  t.match(patched.body, { schemas: [errorUrn], status: '400', detail: /NUL/ })
  const title = await s('PATCH', `/Users/${u.body.id}`, patch({ op: 'replace', path: 'title', value: 'a\u0000b' }))
  t.equal(title.status, 400, 'also in attributes kept as sent (jsonb)')
})

t.test('PATCH paths and attributes naming JavaScript object members name nothing', async (t) => {
  const u = await s('POST', '/Users', oktaUser('proto.user'))
  for (const path of ['constructor', '__proto__', 'name.constructor', 'emails[type eq "work"].constructor']) {
    const r = await s('PATCH', `/Users/${u.body.id}`, patch({ op: 'replace', path, value: 'x' }))
    t.equal(r.status, 400, path)
    t.equal(r.body.scimType, 'invalidPath', path)
  }
  const projected = await s('GET', `/Users/${u.body.id}?attributes=constructor,toString`)
  t.equal(projected.status, 200)
  t.same(Object.keys(projected.body).sort(), ['id', 'schemas'])
})
