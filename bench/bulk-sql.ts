/**
 * `node --import tsx bench/bulk-sql.ts`: what a batch costs PostgreSQL, without HTTP or the
 * service. One client on a fresh database writes batches of the bench's incident rows, one
 * transaction each, in turns:
 *
 *   copy          COPY into `records` only (the floor of `npm run bench:bulk`);
 *   records only  INSERT … SELECT FROM jsonb_to_recordset into `records` only;
 *   write path    createRecords with reserved numbers (records.write.ts: records, their
 *                 activity entries and events in one statement: what a bulk batch runs);
 *   numbered      createRecords numbering in the statement (a single create, an upsert batch).
 *
 * Reported per variant: median over the rounds of the PostgreSQL backend's CPU per row
 * (Linux /proc) and rows/s. The gap between `records only` and `write path` is the activity
 * row and the event row of each record (the activity row had a foreign-key check per row
 * until records migration 003, bench/README.md).
 *
 * Options: --rounds N (3), --batches N per variant and round (10), --batch N rows (1000).
 */
import { parseArgs } from 'node:util'
import pg from 'pg'
import { loadConfig } from '../core/config.ts'
import { migrateLatest } from '../core/db/migrate.ts'
import { plugins } from '../plugins/index.ts'
import { loadModules } from '../core/modules/registry.ts'
import { diffPayload } from '../plugins/records/records.payload.ts'
import { createRecords, reserveNumbers } from '../plugins/records/records.write.ts'
import { copyLoad } from './bulk-copy.ts'
import { bulkPayload } from './bulk-load.ts'
import { benchDatabase, cpuDelta, fmt, median, pgBackendCpu, table } from './common.ts'

const { values: opt } = parseArgs({
  options: { rounds: { type: 'string' }, batches: { type: 'string' }, batch: { type: 'string' } }
})
const rounds = Number(opt.rounds ?? 3)
const batches = Number(opt.batches ?? 10)
const size = Number(opt.batch ?? 1000)

const db = await benchDatabase()
try {
  await migrateLatest(db.url, plugins)
  const pool = new pg.Pool({ connectionString: db.url, max: 1 })
  const client = await pool.connect()
  const tenantId = 'bench'
  await client.query("INSERT INTO tenants (id, name) VALUES ($1, 'Bench')", [tenantId])
  const module = (await loadModules(loadConfig({ database: { url: db.url } }).modules)).get('incident')!
  const actor = { type: 'api-key' as const, id: '00000000-0000-4000-8000-000000000b5e', name: 'bench' }
  const writer = { tenantId, actor }
  let n = 0
  const ops = () =>
    Array.from({ length: size }, () => {
      const payload = bulkPayload('sql', n++)
      return { payload, changes: diffPayload({}, payload) }
    })
  const inTransaction = async (fn: () => Promise<unknown>) => {
    await client.query('BEGIN')
    await fn()
    await client.query('COMMIT')
  }
  const variants: Record<string, () => Promise<unknown>> = {
    copy: () =>
      copyLoad(
        client,
        {
          tenantId,
          moduleKey: 'incident',
          moduleVersion: module.definition.version,
          state: module.definition.workflow.initial,
          actor: JSON.stringify(actor)
        },
        `sql${n++}`,
        size,
        size
      ),
    'records only': () =>
      inTransaction(async () => {
        const numbers = await reserveNumbers(client, writer, module, size)
        await client.query({
          name: 'bench-records-only',
          text: `INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by)
                 SELECT $1, $2, $3, t.number, $4, t.payload, $6, $6 FROM jsonb_to_recordset($5::jsonb) AS t(number text, payload jsonb)`,
          values: [
            tenantId,
            'incident',
            module.definition.version,
            module.definition.workflow.initial,
            JSON.stringify(ops().map((o, i) => ({ number: numbers[i], payload: o.payload }))),
            actor
          ]
        })
      }),
    'write path': async () => {
      const numbers = await reserveNumbers(client, writer, module, size)
      await inTransaction(() => createRecords(client, writer, module, ops(), { numbers }))
    },
    numbered: () => inTransaction(() => createRecords(client, writer, module, ops()))
  }
  const results = new Map<string, Array<{ pgUsPerRow: number; rowsPerSec: number }>>()
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of Object.entries(variants)) {
      await run() // warm: plans, caches
      const cpu0 = pgBackendCpu(db.name)
      const t0 = performance.now()
      for (let b = 0; b < batches; b++) await run()
      const ms = performance.now() - t0
      const rows = batches * size
      const r = { pgUsPerRow: cpuDelta(cpu0, pgBackendCpu(db.name)) / rows, rowsPerSec: (rows * 1000) / ms }
      results.set(name, [...(results.get(name) ?? []), r])
      process.stderr.write(
        `  #${round + 1} ${name.padEnd(12)} pg ${fmt(r.pgUsPerRow, 1)} µs/row  ${fmt(r.rowsPerSec)} rows/s\n`
      )
    }
  }
  client.release()
  await pool.end()
  process.stdout.write(
    `\nmedians of ${rounds} round(s) of ${batches} x ${size} rows, one backend (${db.where})\n\n` +
      table([
        ['variant', 'pg CPU/row', 'rows/s'],
        ...[...results].map(([name, r]) => [
          name,
          `${fmt(median(r.map((x) => x.pgUsPerRow)), 1)} µs`,
          fmt(median(r.map((x) => x.rowsPerSec)))
        ])
      ]) +
      '\n'
  )
} finally {
  await db.close()
}
