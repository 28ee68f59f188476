import pg from 'pg'
import t from '../helpers/tap.ts'
import { eventually } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from './receiver.ts'

// A poll far longer than the test: only the dispatcher's LISTEN can bring a delivery in time.
const server = await startTestServer(webhookTestConfig({ pollMs: 600_000 }))
const admin = new pg.Pool({ connectionString: server.platform.config.database.url!, max: 1 })
// Its idle connection is cut when the test database is dropped.
admin.on('error', () => undefined)
t.teardown(async () => {
  await admin.end()
  await server.close()
})

const listeners = async () =>
  (
    await admin.query(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN records_events'`
    )
  ).rows.map((r) => r.pid as number)

t.test(
  'the dispatcher listens again after its connection is cut, on one connection, and a new event is delivered at once',
  async (t) => {
    const receiver = await startReceiver()
    t.teardown(() => receiver.close())
    const sub = await server.request('POST', '/api/v1/webhooks', {
      body: { url: receiver.url, kinds: ['record.created'] }
    })
    t.equal(sub.status, 201)
    t.ok(await eventually(async () => (await listeners()).length === 1, 10_000), 'one connection listens')
    for (let round = 1; round <= 3; round++) {
      const [pid] = await listeners()
      await admin.query('SELECT pg_terminate_backend($1)', [pid])
      t.ok(
        await eventually(async () => {
          const now = await listeners()
          return now.length === 1 && now[0] !== pid
        }, 15_000),
        `round ${round}: listening again, on one new connection`
      )
      await server.request('POST', '/api/v1/records', {
        body: { moduleKey: 'incident', payload: incidentPayload({ title: `after cut ${round}` }) }
      })
      await receiver.waitFor(round, 15_000)
      t.pass(`round ${round}: the next event is delivered (the poll would have waited ten minutes)`)
    }
    const { totalCount } = server.platform.db.system
    t.ok(totalCount <= server.platform.config.database.poolSize, `the pool holds ${totalCount} connections`)
  }
)
