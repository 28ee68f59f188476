// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { PostgresBackend } from '@agendajs/postgres-backend'
import { Agenda } from 'agenda'
import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

// Its own file: the other idempotency tests run on a server without the job scheduler.
const server = await startTestServer({ jobs: { enabled: true } })
t.teardown(async () => {
  await server.close()
  // Agenda 6 leaves a referenced lock-check timer (up to 5 minutes) behind every job run,
  // even after drain(); the service exits explicitly on shutdown, and so does this file.
  setTimeout(() => process.exit(), 200).unref()
})

const pool = server.platform.db.system

async function waitFor<T>(probe: () => Promise<T | undefined>, ms = 8000): Promise<T | undefined> {
  const until = Date.now() + ms
  for (;;) {
    const v = await probe()
    if (v || Date.now() > until) return v
    await sleep(50)
  }
}

t.test('the idempotency.purge job is scheduled hourly in agenda_jobs and has run at start', async (t) => {
  const row = await waitFor(
    async () =>
      (await pool.query("SELECT * FROM agenda_jobs WHERE name = 'idempotency.purge' AND last_finished_at IS NOT NULL"))
        .rows[0]
  )
  t.ok(row, 'the job row exists and has finished a run')
  t.equal(row.repeat_interval, '1 hour')
  t.equal(row.disabled, false)
  t.equal(row.fail_reason, null, 'no failure recorded')
  t.ok(row.next_run_at.getTime() > Date.now() + 50 * 60_000, 'the next run is about an hour away')
  const { rows } = await pool.query(
    "SELECT count(*)::int AS n FROM agenda_jobs WHERE name = 'idempotency.purge' AND repeat_interval IS NOT NULL"
  )
  t.equal(rows[0].n, 1, 'scheduled once, not once per start-up call')
})

t.test('a run of the job removes expired keys and keeps live ones', async (t) => {
  const expired = randomUUID()
  const live = randomUUID()
  for (const key of [expired, live]) {
    const r = await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload() },
      headers: { 'idempotency-key': key }
    })
    t.equal(r.status, 201)
  }
  await pool.query("UPDATE idempotency_keys SET expires_at = now() - interval '1 minute' WHERE key = $1", [expired])
  // A second Agenda on the same table asks for a run now; the server's scheduler,
  // which alone defines the job, is told by NOTIFY and runs it.
  const trigger = new Agenda({ backend: new PostgresBackend({ pool, tableName: 'agenda_jobs' }) })
  await trigger.start()
  try {
    await trigger.now('idempotency.purge', {})
    const gone = await waitFor(
      async () =>
        (await pool.query('SELECT count(*)::int AS n FROM idempotency_keys WHERE key = $1', [expired])).rows[0].n ===
          0 || undefined
    )
    t.ok(gone, 'the expired key was purged by the job')
  } finally {
    await trigger.stop(false)
  }
  const { rows } = await pool.query('SELECT count(*)::int AS n FROM idempotency_keys WHERE key = $1', [live])
  t.equal(rows[0].n, 1, 'the live key is kept')
  const done = await waitFor(
    async () =>
      (
        await pool.query(
          "SELECT last_finished_at FROM agenda_jobs WHERE name = 'idempotency.purge' AND repeat_interval IS NULL AND last_finished_at IS NOT NULL"
        )
      ).rows[0]
  )
  t.ok(done, 'the one-off run is recorded as finished')
})
