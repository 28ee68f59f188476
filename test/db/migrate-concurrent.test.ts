import pg from 'pg'
import t from '../helpers/tap.ts'
import { startJobs } from '../../core/jobs/index.ts'
import { migrateLatest } from '../../core/db/migrate.ts'
import { plugins } from '../../plugins/index.ts'
import { freshDatabase } from '../helpers/database.ts'

t.test('instances starting together on a new database migrate it once, and none fails', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const results = await Promise.allSettled([
    migrateLatest(db.url, plugins),
    migrateLatest(db.url, plugins),
    migrateLatest(db.url, plugins)
  ])
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'fulfilled'],
    results.map((r) => (r.status === 'rejected' ? String(r.reason?.message) : 'ok')).join('; ')
  )
  const ran = results.map((r) => (r.status === 'fulfilled' ? r.value.length : -1)).sort((a, b) => b - a)
  t.ok(ran[0] > 0, 'one of them ran the migrations')
  t.same(ran.slice(1), [0, 0], 'the others found nothing left to run')
})

t.test(
  'job schedulers starting together on a new database all connect (the backend creates its table once)',
  async (t) => {
    const db = await freshDatabase()
    t.teardown(() => db.drop())
    await migrateLatest(db.url, plugins)
    const pools = [0, 1, 2].map(() => new pg.Pool({ connectionString: db.url, max: 3 }))
    t.teardown(() => Promise.all(pools.map((p) => p.end())))
    const started = await Promise.allSettled(pools.map((pool) => startJobs(pool, [], { process: false })))
    t.same(
      started.map((r) => r.status),
      ['fulfilled', 'fulfilled', 'fulfilled'],
      started.map((r) => (r.status === 'rejected' ? String(r.reason?.message) : 'ok')).join('; ')
    )
    const { rows } = await pools[0].query(`SELECT count(*)::int AS n FROM pg_class WHERE relname = 'agenda_jobs'`)
    t.equal(rows[0].n, 1)
  }
)
