import t from '../helpers/tap.ts'
import { migrateLatest } from '../../core/db/migrate.ts'
import { freshDatabase } from '../helpers/database.ts'

t.test('instances starting together on a new database migrate it once, and none fails', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const results = await Promise.allSettled([migrateLatest(db.url), migrateLatest(db.url), migrateLatest(db.url)])
  t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled'], results.map((r) => (r.status === 'rejected' ? String(r.reason?.message) : 'ok')).join('; '))
  const ran = results.map((r) => (r.status === 'fulfilled' ? r.value.length : -1)).sort((a, b) => b - a)
  t.ok(ran[0] > 0, 'one of them ran the migrations')
  t.same(ran.slice(1), [0, 0], 'the others found nothing left to run')
})
