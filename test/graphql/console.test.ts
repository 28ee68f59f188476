import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/*
 * The example query the GraphQL console (/settings/graphql) opens with, for every role of
 * the tenant: it must run as it is, without errors, against the schema of whoever opens it
 * (the browser test, test/settings/graphql-console.test.ts, runs it by hand once).
 */

const server = await startTestServer()
t.teardown(() => server.close())
for (let i = 0; i < 2; i++)
  await server.request('POST', '/api/v1/records', {
    token: server.keys.acme,
    body: { moduleKey: 'incident', payload: incidentPayload() }
  })

const unescape = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')

/** Opens the console as a new user of acme with these roles: the example query and the session to run it with. */
let users = 0
async function openConsole(roles: string[]) {
  const user = await server.platform.users.create('acme', { userName: `console-user-${++users}`, roles })
  const session = await server.platform.sessions.create('acme', user.id)
  const cookie = `records_session=${session.cookieValue}`
  const res = await fetch(`${server.url}/settings/graphql`, { headers: { cookie } })
  const html = await res.text()
  const query = unescape(/data-query="([^"]*)"/.exec(html)?.[1] ?? '')
  return {
    status: res.status,
    query,
    headers: {
      cookie,
      'x-csrf-token': session.csrfToken,
      accept: 'application/graphql-response+json, application/json'
    }
  }
}

const roles = server.platform.users.knownRoles('acme')

t.test('for every role of the tenant, and for none, the example query runs without errors', async (t) => {
  for (const role of [...roles.map((r) => [r]), []]) {
    const opened = await openConsole(role)
    t.equal(opened.status, 200, `${role.join() || 'no role'}: the console opens`)
    const ran = await server.request('POST', '/api/graphql', {
      token: null,
      headers: opened.headers,
      body: { query: opened.query }
    })
    t.equal(ran.status, 200, `${role.join() || 'no role'}: answered`)
    t.same(ran.body.errors, undefined, `${role.join() || 'no role'}: no errors`, { query: opened.query })
    t.ok(
      ran.body.data && Object.keys(ran.body.data).length === 1,
      `${role.join() || 'no role'}: data for its one root field`
    )
  }
})

t.test(
  "a safety manager's example lists incidents, the first module acme's operator listed, with summary columns it may read",
  async (t) => {
    const opened = await openConsole(['safety-manager'])
    t.match(opened.query, /^query Incidents \{\n {2}incidents\(first: 10\) \{/m)
    for (const field of ['id', 'number', 'state', 'title', 'site', 'category', 'severity'])
      t.match(opened.query, new RegExp(`^ +${field}$`, 'm'), `selects ${field}`)
    const ran = await server.request('POST', '/api/graphql', {
      token: null,
      headers: opened.headers,
      body: { query: opened.query }
    })
    t.equal(ran.body.data.incidents.edges.length, 2, "acme's two incidents")
    t.match(ran.body.data.incidents.edges[0].node, {
      number: /^INC-\d{4}-00001$/,
      state: 'reported',
      payload: { title: incidentPayload().title, site: incidentPayload().site }
    })
  }
)

t.test('without a role that reads a module, the example asks who the user is', async (t) => {
  const opened = await openConsole([])
  t.match(opened.query, /^query Me \{/m)
  const ran = await server.request('POST', '/api/graphql', {
    token: null,
    headers: opened.headers,
    body: { query: opened.query }
  })
  t.match(ran.body.data.me, { tenantName: 'Acme Chemicals', roles: [] })
})
