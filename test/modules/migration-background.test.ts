// tap: own process (it spawns service processes, kills one in the middle of a module migration and starts another)
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import { fixtureModules, writeModulePackage, permitMigrations } from '../helpers/fixture-modules.ts'
import { cluster, type Instance } from '../instances/instances.ts'

/**
 * Issue 28's upgrade under load: a tenant holds 50,000 records of version 1.0.0 of a module; 2.0.0 renames a field, a
 * choice value and a state and adds a required field, with the migration its package declares. An instance starts on
 * 2.0.0 and its job moves the records in the background while a client keeps reading and writing them; the instance is
 * killed (SIGKILL) in the middle of the run and another one finishes it. At the end every record is under 2.0.0,
 * moved once, with nothing of 1.0.0 left in it, and every write the client was answered for is there.
 */
const total = Number(process.env.MIGRATION_ROWS ?? 50_000)

const v1 = {
  key: 'permit',
  version: '1.0.0',
  title: 'Permit',
  numberPattern: 'PTW-{seq:6}',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'site', type: 'text' },
    { key: 'kind', type: 'singleChoice', options: ['hot-work', 'height'] },
    { key: 'notes', type: 'longText' }
  ],
  workflow: {
    initial: 'open',
    states: [{ key: 'open' }, { key: 'closed', final: true }],
    transitions: [{ key: 'close', from: ['open'], to: 'closed' }]
  },
  permissions: { admin: ['read', 'create', 'update', 'transition:close'] }
}
const v2 = {
  ...v1,
  version: '2.0.0',
  fields: [
    v1.fields[0],
    { key: 'location', type: 'text' },
    { key: 'kind', type: 'singleChoice', options: ['hot', 'height'] },
    v1.fields[3],
    { key: 'risk', type: 'singleChoice', options: ['low', 'high'], required: true }
  ],
  workflow: {
    initial: 'active',
    states: [{ key: 'active' }, { key: 'closed', final: true }],
    transitions: [{ key: 'close', from: ['active'], to: 'closed' }]
  }
}
const migrations = permitMigrations()

const fixtures = fixtureModules([])
t.teardown(() => fixtures.remove())
const install = (definition: Record<string, unknown> & { key: string }, source = '') =>
  writeModulePackage(join(fixtures.directory, 'permit'), definition, { source })

const c = await cluster({
  tenants: { acme: { name: 'Acme', modules: ['permit'] } },
  modules: { directories: ['tenant-modules', fixtures.directory] },
  jobs: { enabled: true, processEverySeconds: 1 },
  limits: { requestsPerMinute: 1_000_000 }
})
t.teardown(() => c.close())

install(v1)
const first = await c.start('on 1.0.0', { jobs: { enabled: false } })
const { token } = await c.key('acme')
const made = await first.request('POST', '/api/v1/records', {
  token,
  body: { moduleKey: 'permit', payload: { title: ' Permit 0 ', site: 'Site 0', kind: 'hot-work' } }
})
if (made.status !== 201) throw new Error(`version 1.0.0 did not serve: ${made.status}`)
first.process.kill('SIGTERM')
await first.exited
await c.pool.query(
  `INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by)
   SELECT r.tenant_id, r.module_key, r.module_version, 'PTW-S' || lpad(g::text, 6, '0'),
          CASE WHEN g % 10 = 0 THEN 'closed' ELSE 'open' END,
          jsonb_build_object('title', ' Permit ' || g || ' ', 'site', 'Site ' || (g % 50), 'kind', CASE WHEN g % 3 = 0 THEN 'height' ELSE 'hot-work' END),
          r.created_by, r.updated_by
     FROM records r, generate_series(1, $2::int - 1) g WHERE r.id = $1`,
  [made.body.id, total]
)
const ids: string[] = (
  await c.pool.query(`SELECT id FROM records WHERE module_key = 'permit' ORDER BY random() LIMIT 400`)
).rows.map((r) => r.id)

const progress = async () =>
  (
    await c.pool.query(
      `SELECT state, total::int, migrated::int, refused::int FROM record_migrations WHERE tenant_id = 'acme' AND module_key = 'permit' AND to_version = '2.0.0'`
    )
  ).rows[0] as { state: string; total: number; migrated: number; refused: number } | undefined

/** What the client was told it wrote: record id → the notes of its last answered PATCH. */
const written = new Map<string, string>()
const problems: string[] = []
let reads = 0
let writes = 0
let creates = 0

/** A client reading, changing and creating permits on `instance` until `stop` says so. */
async function client(instance: Instance, stop: () => boolean, seed: number) {
  // Each client its own records, so that the last answered write of a record is the last one made.
  const mine = ids.filter((_, k) => k % 4 === seed - 1)
  for (let i = seed; !stop(); i += 7) {
    const id = mine[i % mine.length]
    if (i % 3 === 0) {
      const notes = `note ${seed}-${i}`
      const r = await instance.request('PATCH', `/api/v1/records/${id}`, { token, body: { payload: { notes } } })
      if (r.status !== 200) problems.push(`PATCH ${id}: ${r.status} ${JSON.stringify(r.body)}`)
      else {
        written.set(id, notes)
        writes++
      }
    } else if (i % 11 === 0) {
      const r = await instance.request('POST', '/api/v1/records', {
        token,
        body: { moduleKey: 'permit', payload: { title: `New ${seed}-${i}`, location: 'Yard', risk: 'high' } }
      })
      if (r.status !== 201) problems.push(`POST: ${r.status} ${JSON.stringify(r.body)}`)
      else creates++
    } else {
      const r = await instance.request('GET', `/api/v1/records/${id}`, { token })
      const p = r.body?.payload ?? {}
      if (r.status !== 200) problems.push(`GET ${id}: ${r.status}`)
      else if (
        r.body.moduleVersion !== '2.0.0' ||
        'site' in p ||
        p.kind === 'hot-work' ||
        !p.risk ||
        r.body.state === 'open' ||
        p.title !== p.title.trim()
      )
        problems.push(`GET ${id}: not read as 2.0.0: ${JSON.stringify(r.body)}`)
      else reads++
    }
  }
}

t.test(
  `${total} records move to 2.0.0 in the background while a client reads and writes them; a killed run resumes`,
  async (t) => {
    install(v2, migrations)
    const second = await c.start('on 2.0.0, killed mid-run')
    let stopped = false
    const clients = [1, 2].map((seed) => client(second, () => stopped, seed))
    // The job's pace with the client busy, from its first batch to a fifth of the run (a figure for docs/modules.md).
    const began = await c.until(
      'the first batch',
      async () => {
        const p = await progress()
        return p && p.migrated > 0 && { ...p, at: Date.now() }
      },
      120_000
    )
    // Killed once the job is well into the run, with the client still busy.
    const mid = await c.until(
      'the job a fifth of the way',
      async () => {
        const p = await progress()
        return p && p.migrated >= total / 5 && p
      },
      120_000
    )
    t.comment(
      `moved ${Math.round(((mid.migrated - began.migrated) * 1000) / (Date.now() - began.at))} records/s with the client busy`
    )
    t.ok(mid.migrated < total, `killed in the middle of the run (${mid.migrated} of ${mid.total} moved)`)
    t.equal(mid.total, total, 'the run counted every record to move')
    stopped = true
    await Promise.all(clients)
    second.process.kill('SIGKILL')
    await second.exited

    const third = await c.start('on 2.0.0, resuming')
    stopped = false
    const more = [3, 4].map((seed) => client(third, () => stopped, seed))
    const done = await c.until(
      'the run to finish',
      async () => {
        const p = await progress()
        return p?.state === 'done' && p
      },
      240_000
    )
    stopped = true
    await Promise.all(more)
    t.same(problems, [], 'every read showed 2.0.0 and every write was answered 200 or 201')
    t.ok(
      reads > 100 && writes > 50 && creates > 5,
      `the client kept working (${reads} reads, ${writes} writes, ${creates} creates)`
    )
    t.equal(done.refused, 0, 'nothing refused')

    const { rows: versions } = await c.pool.query(
      `SELECT module_version, count(*)::int AS n,
              count(*) FILTER (WHERE payload ? 'site' OR payload->>'kind' = 'hot-work' OR NOT payload ? 'risk' OR state = 'open'
                                 OR payload->>'title' <> btrim(payload->>'title'))::int AS half
         FROM records WHERE module_key = 'permit' GROUP BY module_version`
    )
    t.same(
      versions,
      [{ module_version: '2.0.0', n: total + creates, half: 0 }],
      'every record under 2.0.0, none half-moved'
    )
    const { rows: moves } = await c.pool.query(
      `SELECT count(*)::int AS records, count(*) FILTER (WHERE n <> 1)::int AS not_once FROM (
         SELECT r.id, count(a.*) FILTER (WHERE a.action = 'migrated') AS n FROM records r
           LEFT JOIN record_activity a ON a.tenant_id = r.tenant_id AND a.record_id = r.id
          WHERE r.module_key = 'permit' AND r.module_version = '2.0.0' AND r.number LIKE 'PTW-S%' GROUP BY r.id) x`
    )
    t.same(moves, [{ records: total - 1, not_once: 0 }], 'each seeded record has exactly one migrated entry')
    const { rows: events } = await c.pool.query(`SELECT count(*)::int AS n FROM events WHERE type = 'record.migrated'`)
    t.equal(events[0].n, total, 'one record.migrated event per moved record')
    const { rows: notes } = await c.pool.query(
      `SELECT id, payload->>'notes' AS notes FROM records WHERE id = ANY($1::uuid[])`,
      [[...written.keys()]]
    )
    const lost = notes.filter((r) => written.get(r.id) !== r.notes)
    t.same(lost, [], `every answered write is there (${written.size} records written)`)
  }
)
