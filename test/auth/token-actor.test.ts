import knexFactory from 'knex'
import { up as backfillPersons } from '../../core/db/migrations/013-token-persons.ts'
import t, { type Test } from '../helpers/tap.ts'
import { userWithToken, type TestUser } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

// The person behind a token is its actor for four-eyes rules (forbidSelf) and is named in the
// activity: a safety manager refused the closing of their own incident must not close it
// through a service account they created, nor report through one and close with their own token.

const server = await startTestServer()
t.teardown(() => server.close())

const lead = '2c9d6f1e-7b3a-4e58-9f0d-1a2b3c4d5e6f'
const closing = {
  investigationLead: lead,
  rootCause: 'Blind corner at the aisle end',
  closureNote: 'Mirrors fitted and verified'
}
const robotScopes = ['records:read:incident', 'records:write:incident', 'records:transition:incident']

/** A safety manager who also administers the tenant, so may create service accounts. */
const safetyManager = () => userWithToken(server, 'acme', ['safety-manager', 'admin'])

async function serviceAccount(creatorToken: string, name: string, roles = ['safety-manager'], scopes = robotScopes) {
  const res = await server.request('POST', '/api/v1/tokens', {
    token: creatorToken,
    body: { type: 'service-account', name, roles, scopes }
  })
  if (res.status !== 201) throw new Error(`setup: token creation answered ${res.status} ${res.text}`)
  return res.body as { id: string; name: string; token: string }
}

/** The id and name of a user's personal token, as GET /api/v1/tokens lists it to them. */
async function personalToken(user: TestUser) {
  const res = await server.request('GET', '/api/v1/tokens', { token: user.token })
  const own = res.body.items.find((i: { type: string }) => i.type === 'personal')
  return { id: own.id as string, name: own.name as string }
}

/** An incident reported with `token` and brought to actions-pending by it, ready to close. */
async function incidentReadyToClose(token: string) {
  const created = await server.request('POST', '/api/v1/records', {
    token,
    body: { moduleKey: 'incident', payload: incidentPayload(closing) }
  })
  if (created.status !== 201) throw new Error(`setup: incident answered ${created.status} ${created.text}`)
  for (const transition of ['start-investigation', 'record-root-cause']) {
    const res = await server.request('POST', `/api/v1/records/${created.body.id}:transition`, {
      token,
      body: { transition }
    })
    if (res.status !== 200) throw new Error(`setup: ${transition} answered ${res.status} ${res.text}`)
  }
  return created.body.id as string
}

const close = (id: string, token: string) =>
  server.request('POST', `/api/v1/records/${id}:transition`, {
    token,
    body: { transition: 'close', comment: 'Closing' }
  })

async function refusedAsSelfApproval(t: Test, id: string, token: string) {
  const res = await close(id, token)
  t.equal(res.status, 403, '403')
  t.match(res.headers.get('content-type'), /^application\/problem\+json/)
  t.equal(res.body.code, 'workflow.self_approval')
  const now = await server.request('GET', `/api/v1/records/${id}`)
  t.equal(now.body.state, 'actions-pending', 'the record is still actions-pending')
  t.equal(now.body.version, 3, 'and unchanged')
}

t.test('a safety manager cannot close their own incident through a service account they created', async (t) => {
  const reporter = await safetyManager()
  const id = await incidentReadyToClose(reporter.token)
  const robot = await serviceAccount(reporter.token, 'closing robot')
  await refusedAsSelfApproval(t, id, robot.token)

  const other = await safetyManager()
  const otherRobot = await serviceAccount(other.token, 'second pair of eyes')
  const res = await close(id, otherRobot.token)
  t.equal(res.status, 200, "another safety manager's service account closes it")
  t.equal(res.body.state, 'closed')
  const expected = {
    type: 'service-account',
    id: otherRobot.id,
    name: 'second pair of eyes',
    token: { type: 'service-account', id: otherRobot.id, name: 'second pair of eyes' },
    onBehalfOf: { userId: other.id, name: other.userName }
  }
  const entry = res.body.activity.at(-1)
  t.same(entry.transition, { key: 'close', from: 'actions-pending', to: 'closed' })
  t.same(entry.actor, expected, 'the activity names the token and the person behind it')
  t.same(res.body.updatedBy, expected)

  const audit = await server.request('GET', `/api/v1/audit-log?recordId=${id}`)
  t.equal(audit.status, 200)
  t.same(audit.body.items.at(-1).actor, expected, 'and so does the audit log')
  const feed = await server.request('GET', '/api/v1/audit-log?moduleKey=incident&action=transitioned&limit=100')
  t.same(
    feed.body.items.find(
      (i: { recordId: string; transition: { key: string } }) => i.recordId === id && i.transition.key === 'close'
    ).actor,
    expected,
    'and its feed'
  )
})

t.test('a service account created by a service account acts for the person who created the first', async (t) => {
  const reporter = await safetyManager()
  const id = await incidentReadyToClose(reporter.token)
  const adminRobot = await serviceAccount(
    reporter.token,
    'admin robot',
    ['admin', 'safety-manager'],
    ['tokens:write', ...robotScopes]
  )
  const robot = await serviceAccount(adminRobot.token, 'robot of a robot')
  await refusedAsSelfApproval(t, id, robot.token)
})

t.test(
  'a safety manager who reported through a service account cannot close with their own personal token',
  async (t) => {
    const reporter = await safetyManager()
    const robot = await serviceAccount(reporter.token, 'reporting robot')
    const id = await incidentReadyToClose(robot.token)
    const created = (await server.request('GET', `/api/v1/records/${id}`)).body.createdBy
    t.same(
      created.onBehalfOf,
      { userId: reporter.id, name: reporter.userName },
      'the record names the person behind its creator'
    )
    await refusedAsSelfApproval(t, id, reporter.token)

    const other = await safetyManager()
    const res = await close(id, other.token)
    t.equal(res.status, 200, "another safety manager's personal token closes it")
    const pat = await personalToken(other)
    t.same(
      res.body.activity.at(-1).actor,
      { type: 'user', id: other.id, name: other.userName, token: { type: 'personal', id: pat.id, name: pat.name } },
      'the activity names the person and the token they used'
    )
  }
)

t.test('a safety manager cannot close their own incident with a second personal token either', async (t) => {
  const reporter = await safetyManager()
  const id = await incidentReadyToClose(reporter.token)
  const second = await server.request('POST', '/api/v1/tokens', {
    token: reporter.token,
    body: { type: 'personal', name: 'laptop' }
  })
  t.equal(second.status, 201)
  await refusedAsSelfApproval(t, id, second.body.token)
})

t.test('tokens and records from before tokens named their person get that person from the migration', async (t) => {
  const reporter = await safetyManager()
  const adminRobot = await serviceAccount(
    reporter.token,
    'old admin robot',
    ['admin', 'safety-manager'],
    ['tokens:write', ...robotScopes]
  )
  const robot = await serviceAccount(adminRobot.token, 'old robot of a robot')
  const id = await incidentReadyToClose(robot.token)
  // As the previous version wrote them: a creator actor without the person behind it.
  const pool = server.platform.db.system
  await pool.query(
    `UPDATE credentials SET created_by = created_by - 'onBehalfOf' WHERE tenant_id = 'acme' AND id = $1`,
    [robot.id]
  )
  await pool.query(
    `UPDATE records SET created_by = created_by - 'onBehalfOf' - 'token' WHERE tenant_id = 'acme' AND id = $1`,
    [id]
  )
  server.platform.credentials.forgetUsers({ tenantId: 'acme' })
  t.notOk(
    (await server.request('GET', `/api/v1/records/${id}`)).body.createdBy.onBehalfOf,
    'the record names nobody behind its creator'
  )

  const knex = knexFactory({ client: 'pg', connection: server.platform.config.database.url!, pool: { min: 0, max: 1 } })
  try {
    await backfillPersons(knex)
  } finally {
    await knex.destroy()
  }
  server.platform.credentials.forgetUsers({ tenantId: 'acme' })
  const createdBy = (await server.request('GET', `/api/v1/records/${id}`)).body.createdBy
  t.same(
    createdBy.onBehalfOf,
    { userId: reporter.id, name: reporter.userName },
    'the record now names the person behind the chain of tokens'
  )
  await refusedAsSelfApproval(t, id, reporter.token)
  const me = await server.request('GET', '/api/v1/me', { token: robot.token })
  t.same(me.body.actor.onBehalfOf, { userId: reporter.id, name: reporter.userName }, 'and so does the token')
})
