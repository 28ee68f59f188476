import { spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import t from '../helpers/tap.ts'
import { createPlatform, startServer } from '../../core/app.ts'
import { loadConfig } from '../../core/config.ts'
import { projectRoot } from '../../core/paths.ts'
import { plugins } from '../../plugins/index.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from './receiver.ts'

t.test(
  'delivers every committed event after the instance is killed (SIGKILL) between commit and delivery',
  async (t) => {
    // This process only holds the database and the keys; the instance that writes and dispatches is a child.
    const base = await startTestServer(webhookTestConfig({ dispatch: false }))
    t.teardown(() => base.close())
    // The first request is held open and never answered: the child dies with that delivery in flight.
    const receiver = await startReceiver((n) => (n === 0 ? 0 : 200))
    const sub = (
      await base.request('POST', '/api/v1/webhooks', { body: { url: receiver.url, kinds: ['record.created'] } })
    ).body
    const config = { tenants: base.platform.config.tenants, ...webhookTestConfig({ timeoutMs: 1000 }) }
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/webhooks/fixtures/instance.ts'], {
      cwd: projectRoot,
      env: {
        ...process.env,
        DATABASE_URL: base.platform.db.url,
        INSTANCE_CONFIG: JSON.stringify({ ...config, webhooks: { ...config.webhooks, retryScheduleMs: [0, 60_000] } })
      },
      stdio: ['ignore', 'pipe', 'inherit']
    })
    t.teardown(() => child.kill('SIGKILL'))
    const url = await new Promise<string>((resolve) =>
      child.stdout.on('data', (d) => /ready (\S+)/.test(String(d)) && resolve(/ready (\S+)/.exec(String(d))![1]))
    )
    // Five records committed through the child; it is killed as soon as its first delivery reaches the receiver.
    const ids: string[] = []
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${url}/api/v1/records`, {
        method: 'POST',
        headers: { authorization: `Bearer ${base.keys.acme}`, 'content-type': 'application/json' },
        body: JSON.stringify({ moduleKey: 'incident', payload: incidentPayload({ title: `Crash ${i}` }) })
      })
      t.equal(res.status, 201)
      ids.push((await res.json()).id)
      if (i === 0) {
        await receiver.waitFor(1)
        child.kill('SIGKILL')
        await new Promise((r) => child.once('exit', r))
        break
      }
    }
    // The rest are committed with no instance running the dispatcher.
    for (let i = 1; i < 5; i++)
      ids.push(
        (
          await base.request('POST', '/api/v1/records', {
            body: { moduleKey: 'incident', payload: incidentPayload({ title: `Crash ${i}` }) }
          })
        ).body.id
      )
    const before = receiver.received.length
    const { rows } = await base.platform.db.system.query(
      `SELECT count(*)::int AS n FROM webhook_deliveries WHERE subscription_id = $1 AND status = 'succeeded'`,
      [sub.id]
    )
    t.ok(rows[0].n <= 1, `at most the one in flight counted as delivered before the restart (${rows[0].n})`)

    // A new instance: it fans out what the dead one did not, and takes over its claim once the lease lapses.
    const next = await startServer(
      await createPlatform(
        loadConfig({
          ...config,
          port: 0,
          logLevel: 'error',
          jobs: { enabled: false },
          database: { url: base.platform.db.url }
        } as any),
        plugins
      ),
      plugins
    )
    t.teardown(() => next.close())
    const seen = () => new Set(receiver.received.map((r) => r.json?.subject?.id))
    for (const until = Date.now() + 30_000; Date.now() < until && !ids.every((id) => seen().has(id));) await sleep(100)
    t.ok(
      ids.every((id) => seen().has(id)),
      `all 5 committed records delivered (${receiver.received.length} requests, ${before} before the restart)`
    )
    const byEvent = new Map<string, number>()
    for (const r of receiver.received)
      byEvent.set(String(r.headers['webhook-id']), (byEvent.get(String(r.headers['webhook-id'])) ?? 0) + 1)
    t.equal(byEvent.size, 5, 'five distinct webhook-ids')
    t.ok(
      [...byEvent.values()].filter((n) => n > 1).length <= 1,
      'only the delivery in flight at the crash may come twice, with the same webhook-id'
    )
    await receiver.close()
  }
)
