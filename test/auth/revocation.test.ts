import pg from 'pg'
import t from '../helpers/tap.ts'
import { CredentialStore } from '../../core/auth/credentials.ts'
import { startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
// A second instance of the service, as far as credentials go: its own pool and store.
const otherPool = new pg.Pool({ connectionString: server.platform.db.url, max: 2 })
const other = new CredentialStore(otherPool)
t.teardown(async () => {
  await otherPool.end()
  await server.close()
})

const listenerPid = async () => {
  const { rows } = await otherPool.query(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`
  )
  return rows[0]?.pid as number | undefined
}

async function statusWithin(ms: number, token: string, want: number) {
  const deadline = Date.now() + ms
  let status: number
  do {
    status = (await server.request('GET', '/api/v1/modules', { token })).status
    if (status === want) return status
    await new Promise((r) => setTimeout(r, 50))
  } while (Date.now() < deadline)
  return status
}

t.test('a token revoked by another instance fails at once on this one', async (t) => {
  const { token, credential } = await server.platform.credentials.create({
    tenantId: 'acme',
    kind: 'api_key',
    name: 'revoked elsewhere'
  })
  t.equal((await server.request('GET', '/api/v1/modules', { token })).status, 200, 'works, and is now cached')
  await other.revoke(credential.id)
  t.equal(await statusWithin(1000, token, 401), 401, 'the NOTIFY clears the cache long before its 30 s limit')
})

t.test('after its listening connection drops, the service reconnects and still learns of revocations', async (t) => {
  const { token, credential } = await server.platform.credentials.create({
    tenantId: 'acme',
    kind: 'api_key',
    name: 'revoked after a drop'
  })
  t.equal((await server.request('GET', '/api/v1/modules', { token })).status, 200)
  const before = await listenerPid()
  t.ok(before, 'the service listens')
  await otherPool.query('SELECT pg_terminate_backend($1)', [before])
  const deadline = Date.now() + 10_000
  let after: number | undefined
  while (Date.now() < deadline && (!(after = await listenerPid()) || after === before))
    await new Promise((r) => setTimeout(r, 100))
  t.ok(after && after !== before, 'a new listening connection replaced the dropped one')
  await other.revoke(credential.id)
  t.equal(await statusWithin(1000, token, 401), 401)
})
