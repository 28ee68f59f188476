// tap: own process (it spawns three service processes, signals two of them and waits for a takeover)
import ExcelJS from 'exceljs'
import t from '../helpers/tap.ts'
import { incidentPayload } from '../helpers/server.ts'
import { cluster } from './instances.ts'

const total = Number(process.env.TAKEOVER_ROWS ?? 20_000)
const c = await cluster({
  tenants: { acme: { name: 'Acme Chemicals', modules: ['incident'] } },
  // A dead instance's export is taken over within seconds; small pages make many chunks.
  jobs: { enabled: true, processEverySeconds: 1 },
  exports: { lockSeconds: 3, pageSize: 100 },
  limits: { requestsPerMinute: 100_000 }
})
t.teardown(() => c.close())
// Started together: one migrates the new database while the others wait for it (core/db/migrate.ts).
const instances = await Promise.all([c.start('a'), c.start('b'), c.start('c')]).catch(async (err) => {
  await c.close()
  throw err
})
const { token } = await c.key('acme')

// The records, seeded in one statement from one made through the API (same module version and author).
const first = await instances[0].request('POST', '/api/v1/records', {
  token,
  body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Seed 0' }) }
})
await c.pool.query(
  `INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by)
   SELECT r.tenant_id, r.module_key, r.module_version, 'SEED-' || lpad(g::text, 6, '0'), r.state, r.payload || jsonb_build_object('title', 'Seed ' || g, 'injuredPeople', g % 7), r.created_by, r.updated_by
     FROM records r, generate_series(1, $2::int - 1) g WHERE r.id = $1`,
  [first.body.id, total]
)

const runOf = (id: string) => (l: { json?: Record<string, any> }) =>
  l.json?.msg === 'export run' && l.json.exportId === id
const progress = async (id: string) =>
  (
    await c.pool.query(
      'SELECT status, rows_done, rows_total, attempts, resumed_from, handed_back, problem FROM export_jobs WHERE id = $1',
      [id]
    )
  ).rows[0]
/** Run `n` (1-based) of the export as the instances' logs show it (one `export run` line per run), and where it runs. */
const nthRun = (id: string, n: number) =>
  c.until(
    `run ${n} of the export`,
    async () => {
      const runs = instances.flatMap((instance) =>
        instance.lines.filter(runOf(id)).map((l) => ({ instance, line: l.json! }))
      )
      runs.sort((x, y) => Date.parse(x.line.time) - Date.parse(y.line.time))
      return runs.length >= n && runs[n - 1]
    },
    30_000
  )

t.test(
  'an XLSX export survives SIGTERM to one instance and SIGKILL to another, and finishes without starting over',
  async (t) => {
    const created = await instances[0].request('POST', '/api/v1/exports', {
      token,
      body: { moduleKey: 'incident', format: 'xlsx' }
    })
    t.equal(created.status, 202)
    const id = created.body.id

    // Run 1: SIGTERM once it has committed a few chunks. It hands the export back at once, with its chunks.
    const one = await nthRun(id, 1)
    t.equal(one.line.fromRow, 0, `run 1 (instance ${one.instance.name}) starts at row 0`)
    await c.until('run 1 to commit some chunks', async () => (await progress(id)).rows_done >= 1000)
    one.instance.process.kill('SIGTERM')
    const handedBack = await one.instance.waitForLine(
      (l) => l.json?.msg === 'export handed back' && l.json.exportId === id,
      20_000
    )
    const handedAt: number = handedBack.json!.rowsDone
    t.ok(handedAt > 0 && handedAt < total, `run 1 handed the export back at ${handedAt} of ${total} rows`)

    // Run 2, on another instance at once, goes on from what run 1 committed; SIGKILL it part-way.
    const two = await nthRun(id, 2)
    t.equal(two.line.fromRow, handedAt, `run 2 (instance ${two.instance.name}) resumes at row ${two.line.fromRow}`)
    t.equal(two.line.attempt, 1, 'a hand-back is not an attempt')
    await c.until('run 2 to commit a chunk', async () => (await progress(id)).rows_done > two.line.fromRow)
    two.instance.process.kill('SIGKILL')
    await two.instance.exited
    const killed = await progress(id)
    t.ok(killed.rows_done < total, `killed at ${killed.rows_done} of ${total} rows`)

    // Run 3, on the last instance once run 2's lease lapses, goes on from run 2's last committed chunk.
    const three = await nthRun(id, 3)
    t.ok(
      three.line.fromRow >= killed.rows_done,
      `run 3 (instance ${three.instance.name}) resumes at row ${three.line.fromRow}`
    )
    const done = await c.until(
      'the export to finish',
      async () => {
        const p = await progress(id)
        return ['succeeded', 'failed'].includes(p.status) && p
      },
      45_000
    )
    t.match(
      done,
      { status: 'succeeded', rows_done: total, rows_total: total, attempts: 2 },
      'finished; the kill counted as an attempt, the hand-back not'
    )
    t.ok(
      total - done.resumed_from < total,
      `the last run read ${total - done.resumed_from} of ${total} rows, not all of them`
    )
    t.equal(three.line.fromRow, done.resumed_from, 'the fact kept with the export: the row its last run began at')

    // Nothing committed was lost or doubled: the file holds every record once.
    const job = (await three.instance.request('GET', `/api/v1/exports/${id}`, { token })).body
    const book = new ExcelJS.Workbook()
    await book.xlsx.load(Buffer.from(await (await fetch(job.download.url)).arrayBuffer()) as any)
    const sheet = book.worksheets[0]
    const numbers = new Set<string>()
    sheet.eachRow((row, n) => n > 1 && numbers.add(String(row.getCell(1).value)))
    t.equal(sheet.actualRowCount - 1, total, 'one row per record')
    t.equal(numbers.size, total, 'no record twice')
    const { rows: events } = await c.pool.query(
      `SELECT count(*)::int AS n FROM events WHERE type = 'export.succeeded' AND subject_id = $1`,
      [id]
    )
    t.equal(events[0].n, 1, 'one export.succeeded event')
    const { rows: chunks } = await c.pool.query('SELECT count(*)::int AS n FROM export_chunks WHERE export_id = $1', [
      id
    ])
    t.equal(chunks[0].n, 0, 'the chunks are gone')
    const code = await one.instance.exited
    t.equal(
      code,
      0,
      code === 0
        ? 'the instance sent SIGTERM stopped cleanly'
        : `the instance sent SIGTERM exited ${code}; its last lines:\n${one.instance.lines
            .slice(-8)
            .map((l) => l.text)
            .join('\n')}`
    )
  }
)
