import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from '../helpers/tap.ts'
import { purgeExpiredKeys } from '../../plugins/idempotency/idempotency.ts'
import { incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

const pool = server.platform.db.system
const leadId = '0b7e4c61-2f3a-4d8b-9a0e-5c1d2e3f4a5b'
const count = async (sql: string, values: unknown[] = []) => (await pool.query(sql, values)).rows[0].n as number
const recordCount = (tenant = 'acme') => count('SELECT count(*)::int AS n FROM records WHERE tenant_id = $1', [tenant])
const activityCount = (id: string) =>
  count("SELECT count(*)::int AS n FROM record_activity WHERE tenant_id = 'acme' AND record_id = $1", [id])
const withKey = (key: string, extra: Record<string, string> = {}) => ({ 'idempotency-key': key, ...extra })

async function createIncident(title: string) {
  const r = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload({ title }) }
  })
  if (r.status !== 201) throw new Error(`setup: create answered ${r.status} ${r.text}`)
  return r.body
}

/** A retry answers like the first request, marked as a replay. */
function expectReplay(t: Test, first: Reply, retry: Reply) {
  t.equal(retry.status, first.status, 'same status')
  t.strictSame(retry.body, first.body, 'identical body')
  t.equal(retry.text, first.text, 'byte for byte, keys in the same order')
  t.equal(retry.headers.get('idempotent-replayed'), 'true', 'Idempotent-Replayed: true')
  t.equal(first.headers.get('idempotent-replayed'), null, 'the first answer is not marked as a replay')
}

t.test('a retried create answers the stored 201 and creates the record once', async (t) => {
  const key = randomUUID()
  const before = await recordCount()
  const body = { moduleKey: 'incident', payload: incidentPayload({ title: 'Create once' }) }
  const first = await server.request('POST', '/api/v1/records', { body, headers: withKey(key) })
  t.equal(first.status, 201)
  const retry = await server.request('POST', '/api/v1/records', { body, headers: withKey(key) })
  expectReplay(t, first, retry)
  t.equal(retry.headers.get('location'), first.headers.get('location'), 'same Location')
  t.equal(retry.headers.get('etag'), first.headers.get('etag'), 'same ETag')
  t.equal(await recordCount(), before + 1, 'one record created')
})

t.test('a retried PATCH answers the stored response and applies the change once', async (t) => {
  const rec = await createIncident('Patch once')
  const key = randomUUID()
  const body = { payload: { severity: 'high' } }
  const first = await server.request('PATCH', `/api/v1/records/${rec.id}`, { body, headers: withKey(key) })
  t.equal(first.status, 200)
  t.equal(first.body.version, 2)
  const retry = await server.request('PATCH', `/api/v1/records/${rec.id}`, { body, headers: withKey(key) })
  expectReplay(t, first, retry)
  const { rows } = await pool.query("SELECT version FROM records WHERE tenant_id = 'acme' AND id = $1", [rec.id])
  t.equal(rows[0].version, 2, 'version bumped once')
  t.equal(await activityCount(rec.id), 2, 'one update activity')
})

t.test('a retried transition answers the stored response and fires once', async (t) => {
  const rec = await createIncident('Transition once')
  const key = randomUUID()
  const body = { transition: 'start-investigation', payload: { investigationLead: leadId } }
  const first = await server.request('POST', `/api/v1/records/${rec.id}:transition`, { body, headers: withKey(key) })
  t.equal(first.status, 200)
  t.equal(first.body.state, 'investigating')
  const retry = await server.request('POST', `/api/v1/records/${rec.id}:transition`, { body, headers: withKey(key) })
  expectReplay(t, first, retry)
  t.equal(
    await count(
      "SELECT count(*)::int AS n FROM record_activity WHERE tenant_id = 'acme' AND record_id = $1 AND action = 'transitioned'",
      [rec.id]
    ),
    1
  )
})

t.test('a retried DELETE answers the stored 200 although the record is gone', async (t) => {
  const rec = await createIncident('Delete once')
  const key = randomUUID()
  const first = await server.request('DELETE', `/api/v1/records/${rec.id}`, { headers: withKey(key) })
  t.equal(first.status, 200)
  t.ok(first.body.deletedAt)
  const retry = await server.request('DELETE', `/api/v1/records/${rec.id}`, { headers: withKey(key) })
  expectReplay(t, first, retry)
  t.equal(await activityCount(rec.id), 2, 'one delete activity')
  const fresh = await server.request('DELETE', `/api/v1/records/${rec.id}`, { headers: withKey(randomUUID()) })
  t.equal(fresh.status, 404, 'a new key sees the record as deleted')
})

t.test('the same key with a different request is refused with 422 idempotency.key_reused', async (t) => {
  const rec = await createIncident('Key reuse')
  const key = randomUUID()
  const before = await recordCount()
  t.equal(
    (
      await server.request('POST', '/api/v1/records', {
        body: { moduleKey: 'incident', payload: incidentPayload({ title: 'A' }) },
        headers: withKey(key)
      })
    ).status,
    201
  )
  const other = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload({ title: 'B' }) },
    headers: withKey(key)
  })
  t.equal(other.status, 422)
  t.equal(other.body.code, 'idempotency.key_reused')
  const otherMethod = await server.request('PATCH', `/api/v1/records/${rec.id}`, {
    body: { payload: { title: 'A' } },
    headers: withKey(key)
  })
  t.equal(otherMethod.status, 422, 'another method with the same key is refused too')
  t.equal(otherMethod.body.code, 'idempotency.key_reused')
  t.equal(await recordCount(), before + 1)
  const { rows } = await pool.query(
    "SELECT payload->>'title' AS title FROM records WHERE tenant_id = 'acme' AND id = $1",
    [rec.id]
  )
  t.equal(rows[0].title, 'Key reuse', 'the refused PATCH changed nothing')
})

t.test(
  "the same key from another tenant's credential or another credential of the tenant is independent",
  async (t) => {
    const key = randomUUID()
    const body = { moduleKey: 'incident', payload: incidentPayload({ title: 'Shared key' }) }
    const acme = await server.request('POST', '/api/v1/records', { body, headers: withKey(key) })
    const globexBefore = await recordCount('globex')
    const globex = await server.request('POST', '/api/v1/records', {
      token: server.keys.globex,
      body,
      headers: withKey(key)
    })
    t.equal(globex.status, 201)
    t.equal(globex.headers.get('idempotent-replayed'), null)
    t.not(globex.body.id, acme.body.id)
    t.equal(await recordCount('globex'), globexBefore + 1)
    const globexOther = await server.request('POST', '/api/v1/records', {
      token: server.keys.globex,
      body: { ...body, payload: incidentPayload({ title: 'Other' }) },
      headers: withKey(randomUUID())
    })
    t.equal(globexOther.status, 201)
    const second = await server.platform.credentials.create({
      tenantId: 'acme',
      kind: 'api_key',
      name: 'second acme key'
    })
    const again = await server.request('POST', '/api/v1/records', { token: second.token, body, headers: withKey(key) })
    t.equal(again.status, 201)
    t.equal(again.headers.get('idempotent-replayed'), null)
    t.not(again.body.id, acme.body.id)
  }
)

t.test('a retry while the first request is still running is refused with 409 idempotency.in_flight', async (t) => {
  const rec = await createIncident('In flight')
  const key = randomUUID()
  const body = { payload: { severity: 'critical' } }
  const lock = await pool.connect()
  let first: Promise<Reply> | undefined
  try {
    await lock.query('BEGIN')
    await lock.query("SELECT id FROM records WHERE tenant_id = 'acme' AND id = $1 FOR UPDATE", [rec.id])
    first = server.request('PATCH', `/api/v1/records/${rec.id}`, { body, headers: withKey(key) })
    let state: string | undefined
    for (let i = 0; i < 100 && state !== 'in_flight'; i++) {
      await sleep(20)
      state = (await pool.query("SELECT state FROM idempotency_keys WHERE tenant_id = 'acme' AND key = $1", [key]))
        .rows[0]?.state
    }
    t.equal(state, 'in_flight', 'the first request claimed the key')
    const retry = await server.request('PATCH', `/api/v1/records/${rec.id}`, { body, headers: withKey(key) })
    t.equal(retry.status, 409)
    t.equal(retry.body.code, 'idempotency.in_flight')
    const changed = await server.request('PATCH', `/api/v1/records/${rec.id}`, {
      body: { payload: { severity: 'low' } },
      headers: withKey(key)
    })
    t.equal(changed.status, 422, 'a different request with the key is still key_reused')
    await lock.query('COMMIT')
  } finally {
    await lock.query('ROLLBACK').catch(() => undefined)
    lock.release()
  }
  const done = await first
  t.equal(done.status, 200)
  t.equal(done.body.payload.severity, 'critical')
  t.equal(done.body.version, 2)
  const later = await server.request('PATCH', `/api/v1/records/${rec.id}`, { body, headers: withKey(key) })
  expectReplay(t, done, later)
})

t.test('a stored 4xx answer is replayed identically', async (t) => {
  const key = randomUUID()
  const before = await recordCount()
  const body = { moduleKey: 'incident', payload: { title: 'No other fields' } }
  const first = await server.request('POST', '/api/v1/records', { body, headers: withKey(key) })
  t.equal(first.status, 400)
  t.equal(first.body.code, 'field.invalid')
  const retry = await server.request('POST', '/api/v1/records', { body, headers: withKey(key) })
  expectReplay(t, first, retry)
  t.match(retry.headers.get('content-type'), /^application\/problem\+json/)
  t.equal(await recordCount(), before)

  const missing = `/api/v1/records/${randomUUID()}`
  const k2 = randomUUID()
  const notFound = await server.request('PATCH', missing, { body: { payload: { title: 'x' } }, headers: withKey(k2) })
  t.equal(notFound.status, 404)
  expectReplay(
    t,
    notFound,
    await server.request('PATCH', missing, { body: { payload: { title: 'x' } }, headers: withKey(k2) })
  )
})

t.test('an expired key is accepted as a new request', async (t) => {
  const key = randomUUID()
  const body = { moduleKey: 'incident', payload: incidentPayload({ title: 'Expiring' }) }
  const first = await server.request('POST', '/api/v1/records', { body, headers: withKey(key) })
  t.equal(first.status, 201)
  await pool.query(
    "UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE tenant_id = 'acme' AND key = $1",
    [key]
  )
  const before = await recordCount()
  const again = await server.request('POST', '/api/v1/records', { body, headers: withKey(key) })
  t.equal(again.status, 201)
  t.equal(again.headers.get('idempotent-replayed'), null, 'not a replay')
  t.not(again.body.id, first.body.id, 'a new record')
  t.equal(await recordCount(), before + 1)
  const changed = await server.request('POST', '/api/v1/records', { body, headers: withKey(key) })
  t.equal(changed.body.id, again.body.id, 'the renewed key now replays the second answer')
  const { rows } = await pool.query(
    "SELECT expires_at > now() + interval '23 hours' AS renewed FROM idempotency_keys WHERE tenant_id = 'acme' AND key = $1",
    [key]
  )
  t.ok(rows[0].renewed, 'the renewed key is kept for the retention period again')
})

t.test('purgeExpiredKeys deletes expired keys of every tenant and keeps live ones', async (t) => {
  const keys = { expiredAcme: randomUUID(), expiredGlobex: randomUUID(), live: randomUUID() }
  const post = (token: string, key: string) =>
    server.request('POST', '/api/v1/records', {
      token,
      body: { moduleKey: 'incident', payload: incidentPayload() },
      headers: withKey(key)
    })
  t.equal((await post(server.keys.acme, keys.expiredAcme)).status, 201)
  t.equal((await post(server.keys.globex, keys.expiredGlobex)).status, 201)
  t.equal((await post(server.keys.acme, keys.live)).status, 201)
  await pool.query("UPDATE idempotency_keys SET expires_at = now() - interval '1 minute' WHERE key = ANY($1)", [
    [keys.expiredAcme, keys.expiredGlobex]
  ])
  const expiredBefore = await count('SELECT count(*)::int AS n FROM idempotency_keys WHERE expires_at <= now()')
  const liveBefore = await count('SELECT count(*)::int AS n FROM idempotency_keys WHERE expires_at > now()')
  t.ok(expiredBefore >= 2)
  t.equal(await purgeExpiredKeys(pool), expiredBefore, 'reports how many it removed')
  t.equal(
    await count('SELECT count(*)::int AS n FROM idempotency_keys WHERE expires_at <= now()'),
    0,
    'no expired key is left'
  )
  t.equal(
    await count('SELECT count(*)::int AS n FROM idempotency_keys WHERE expires_at > now()'),
    liveBefore,
    'live keys are kept'
  )
  t.equal(await count('SELECT count(*)::int AS n FROM idempotency_keys WHERE key = $1', [keys.live]), 1)
  t.equal(await purgeExpiredKeys(pool), 0, 'running it again removes nothing')
})

t.test('an invalid Idempotency-Key is refused with 400 and nothing is created', async (t) => {
  const before = await recordCount()
  for (const [label, key] of [
    ['300 characters', 'k'.repeat(300)],
    ['an inner space', 'two words'],
    ['empty', ''],
    ['non-ASCII', 'clé-1']
  ] as const) {
    const r = await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload() },
      headers: withKey(key)
    })
    t.equal(r.status, 400, `${label}: 400`)
    t.equal(r.body.code, 'idempotency.key_invalid', `${label}: code`)
  }
  t.equal(await recordCount(), before)
  const edge = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload() },
    headers: withKey('k'.repeat(255))
  })
  t.equal(edge.status, 201, 'a 255-character key is accepted')
})
