// tap: own process (it spawns two service processes and a webhook receiver)
import t from '../helpers/tap.ts'
import { loadConfig } from '../../core/config.ts'
import { loadModules } from '../../core/modules/registry.ts'
import { syncTenants } from '../../core/tenancy/tenants.ts'
import { incidentPayload } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from '../webhooks/receiver.ts'
import { cluster } from './instances.ts'

const tenants = {
  acme: { name: 'Acme Chemicals', modules: ['incident'] },
  // A tenant whose keys may send 10 requests a minute: the window both instances count in.
  limited: { name: 'Limited Ltd', modules: ['incident'], limits: { requestsPerMinute: 10 } }
}
const c = await cluster({
  tenants,
  jobs: { enabled: true, processEverySeconds: 1 },
  exports: { lockSeconds: 5 },
  limits: { requestsPerMinute: 100_000 },
  ...webhookTestConfig()
})
t.teardown(() => c.close())
const [a, b] = await Promise.all([c.start('a'), c.start('b')]).catch(async (err) => {
  await c.close()
  throw err
})
const acme = await c.key('acme')
const token = acme.token

t.test('an Idempotency-Key replayed on the other instance gets the same answer, and one record is made', async (t) => {
  const body = { moduleKey: 'incident', payload: incidentPayload({ title: 'Replayed across instances' }) }
  const headers = { 'idempotency-key': 'two-instances-1' }
  const first = await a.request('POST', '/api/v1/records', { token, body, headers })
  t.equal(first.status, 201)
  const replay = await b.request('POST', '/api/v1/records', { token, body, headers })
  t.equal(replay.status, 201, 'the stored status')
  t.same(replay.body, first.body, 'the stored body')
  const { rows } = await c.pool.query(
    `SELECT count(*)::int AS n FROM records WHERE tenant_id = 'acme' AND payload->>'title' = 'Replayed across instances'`
  )
  t.equal(rows[0].n, 1, 'one record')
})

t.test(
  'the two instances count one rate-limit window (Redis)',
  { skip: !process.env.REDIS_URL && 'needs REDIS_URL' },
  async (t) => {
    const limited = await c.key('limited')
    const statuses: number[] = []
    for (const instance of [a, b]) {
      for (let i = 0; i < 7; i++)
        statuses.push(
          (await instance.request('GET', '/api/v1/records?moduleKey=incident&limit=1', { token: limited.token })).status
        )
    }
    t.same(statuses.slice(0, 7), [200, 200, 200, 200, 200, 200, 200], 'the first instance answers its seven')
    t.equal(statuses.filter((s) => s === 200).length, 10, 'ten answered in all, across both')
    t.same(statuses.slice(10), [429, 429, 429, 429], 'the second instance refuses past the shared limit')
  }
)

t.test('an export is run once, by one of the two instances', async (t) => {
  const created = await a.request('POST', '/api/v1/exports', { token, body: { moduleKey: 'incident', format: 'csv' } })
  t.equal(created.status, 202)
  const id = created.body.id
  const job = await c.until('the export to finish', async () => {
    const r = await b.request('GET', `/api/v1/exports/${id}`, { token })
    return ['succeeded', 'failed'].includes(r.body.status) && r.body
  })
  t.match(job, { status: 'succeeded', attempts: 1 })
  const runs = [a, b].map((i) => i.lines.filter((l) => l.json?.msg === 'export run' && l.json.exportId === id).length)
  t.same(runs.sort(), [0, 1], 'one run, on one instance')
  const { rows: agenda } = await c.pool.query(
    `SELECT count(*)::int AS n FROM agenda_jobs WHERE name = 'exports.render'`
  )
  t.equal(agenda[0].n, 1, 'one job')
  const { rows: events } = await c.pool.query(
    `SELECT count(*)::int AS n FROM events WHERE type = 'export.succeeded' AND subject_id = $1`,
    [id]
  )
  t.equal(events[0].n, 1, 'one export.succeeded event')
  const { rows: chunks } = await c.pool.query(`SELECT count(*)::int AS n FROM export_chunks WHERE export_id = $1`, [id])
  t.equal(chunks[0].n, 0, 'its chunks are gone with its success')
})

t.test('a webhook is delivered once though both instances dispatch', async (t) => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const sub = await a.request('POST', '/api/v1/webhooks', {
    token,
    body: { url: receiver.url, kinds: ['record.created'] }
  })
  t.equal(sub.status, 201)
  const made = await b.request('POST', '/api/v1/records', {
    token,
    body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Delivered once' }) }
  })
  t.equal(made.status, 201)
  await receiver.waitFor(1)
  // Settled: the attempt's outcome is written, so no instance holds or retries it.
  await c.until(
    'the delivery to be recorded',
    async () =>
      (
        await c.pool.query(`SELECT 1 FROM webhook_deliveries WHERE subscription_id = $1 AND status = 'succeeded'`, [
          sub.body.id
        ])
      ).rows[0]
  )
  const ours = receiver.received.filter((r) => r.json?.subject?.id === made.body.id)
  t.equal(ours.length, 1, 'the receiver got it once')
  const { rows } = await c.pool.query(
    `SELECT count(*)::int AS n, sum(attempts)::int AS attempts FROM webhook_deliveries WHERE subscription_id = $1`,
    [sub.body.id]
  )
  t.same(rows[0], { n: 1, attempts: 1 }, 'one delivery, one attempt')
})

t.test('a token revoked through one instance is refused by the other at once', async (t) => {
  const victim = await c.key('acme')
  // Both instances have resolved (and cached) the token.
  t.equal((await a.request('GET', '/api/v1/records?moduleKey=incident&limit=1', { token: victim.token })).status, 200)
  t.equal((await b.request('GET', '/api/v1/records?moduleKey=incident&limit=1', { token: victim.token })).status, 200)
  const revoked = await a.request('DELETE', `/api/v1/tokens/${victim.id}`, { token })
  t.equal(revoked.status, 200)
  // The NOTIFY is delivered at commit; the other instance's listener drops its cache entry on it.
  const refused = await c.until(
    'the other instance to refuse the token',
    async () => {
      const r = await b.request('GET', '/api/v1/records?moduleKey=incident&limit=1', { token: victim.token })
      return r.status !== 200 && r
    },
    5000
  )
  t.equal(refused.status, 401)
})

t.test('a module installed by another instance start-up is seen by both running instances', async (t) => {
  t.equal(
    (await a.request('GET', '/api/v1/records?moduleKey=inspection&limit=1', { token })).status,
    404,
    'not installed yet'
  )
  // What a third instance, started with the new configuration, does first (core/app.ts createPlatform).
  const config = loadConfig({
    tenants: { ...tenants, acme: { ...tenants.acme, modules: ['incident', 'inspection'] } },
    database: { url: c.db.url }
  })
  await syncTenants(c.pool, config, await loadModules(config.modules))
  for (const instance of [a, b]) {
    const seen = await c.until(
      `instance ${instance.name} to see the module`,
      async () => {
        const r = await instance.request('GET', '/api/v1/records?moduleKey=inspection&limit=1', { token })
        return r.status === 200 && r
      },
      5000
    )
    t.equal(seen.status, 200, `instance ${instance.name} serves the new module`)
  }
})

t.test(
  'SIGTERM to the instance delivering a webhook: the delivery in flight completes once, the rest goes to the other instance',
  async (t) => {
    // Each request is answered after 600 ms: the first is in flight when its instance is told to stop.
    const receiver = await startReceiver(() => 200, { delayMs: 600 })
    t.teardown(() => receiver.close())
    const sub = await a.request('POST', '/api/v1/webhooks', {
      token,
      body: { url: receiver.url, kinds: ['record.created'] }
    })
    const made: string[] = []
    for (let i = 0; i < 3; i++)
      made.push(
        (
          await a.request('POST', '/api/v1/records', {
            token,
            body: { moduleKey: 'incident', payload: incidentPayload({ title: `Handed over ${i}` }) }
          })
        ).body.id
      )
    await receiver.waitFor(1)
    const {
      rows: [lease]
    } = await c.pool.query(
      `SELECT leased_by FROM webhook_deliveries WHERE subscription_id = $1 AND leased_by IS NOT NULL LIMIT 1`,
      [sub.body.id]
    )
    const sender = [a, b].find((i) => lease && String(lease.leased_by).startsWith(`${i.process.pid}-`))!
    t.ok(sender, 'one instance holds the claim')
    const other = sender === a ? b : a
    sender.process.kill('SIGTERM')
    t.equal(await sender.exited, 0, `instance ${sender.name} stopped cleanly`)
    await c.until('every delivery to be recorded', async () => {
      const { rows } = await c.pool.query(
        `SELECT count(*)::int AS n FROM webhook_deliveries WHERE subscription_id = $1 AND status = 'succeeded'`,
        [sub.body.id]
      )
      return rows[0].n === 3
    })
    const ids = receiver.received.map((r) => r.json?.subject?.id)
    t.same(
      [...ids].sort(),
      [...made].sort(),
      'each record delivered once: the one in flight was answered and recorded before the instance stopped'
    )
    const { rows } = await c.pool.query(
      `SELECT sum(attempts)::int AS attempts FROM webhook_deliveries WHERE subscription_id = $1`,
      [sub.body.id]
    )
    t.equal(rows[0].attempts, 3, 'one attempt each')
    t.ok(other.process.exitCode === null, `instance ${other.name} delivered the rest`)
  }
)
