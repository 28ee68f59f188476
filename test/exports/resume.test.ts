// tap: own process (the test server's pool and timers end with it)
import { inflateRawSync } from 'node:zlib'
import t from '../helpers/tap.ts'
import { inTenant } from '../../core/db/tenant-scope.ts'
import { renderExport } from '../../plugins/exports/exports.job.ts'
import { recordsPath } from '../../plugins/records/records.shared.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

// Jobs off: the test runs each export's job itself, stopping one part-way as a shutdown would.
const server = await startTestServer({ jobs: { enabled: false }, exports: { lockSeconds: 3, pageSize: 50 } })
t.teardown(() => server.close())
const { app } = server.running
const pool = server.platform.db.system

// Text that needs care: quotes, commas, line breaks, markup, a formula, and characters outside the BMP.
const rows = Array.from({ length: 1234 }, (_, i) => ({
  payload: incidentPayload({
    title: i % 97 === 0 ? `=SUM(A${i}) "quoted", <b>&</b>` : `Incident ${i} 🦺 naïve`,
    description: `line one\nline two of ${i}`,
    injuredPeople: i % 5,
    severity: ['low', 'medium', 'high', 'critical'][i % 4]
  })
}))
await bulkCall(server.url, '/api/modules/incident/bulk', server.keys.acme, ndjson(rows))

/** Pages the records service has answered; the run in progress is told to stop after `stopAfter` of them. */
let pages = 0
let stopAfter = Infinity
let stop: AbortController | undefined
app.service(recordsPath).hooks({
  after: {
    find: [
      async (context) => {
        if (context.params.pageLimit && ++pages === stopAfter) stop?.abort()
      }
    ]
  }
})

/** Runs the export's job once; `stopPages`: told to stop (as on SIGTERM) once that many pages have been read. */
async function runJob(exportId: string, stopPages = Infinity) {
  pages = 0
  stopAfter = stopPages
  stop = new AbortController()
  // In the tenant's scope, as the job runner runs a job whose data names a tenant.
  const result = await inTenant('acme', () =>
    renderExport(
      app,
      server.platform,
      { tenantId: 'acme', exportId },
      { touch: async () => undefined, signal: stop!.signal }
    )
  )
  stop = undefined
  return result
}

async function startExport(format: string) {
  const created = await server.request('POST', '/api/v1/exports', { body: { moduleKey: 'incident', format } })
  if (created.status !== 202) throw new Error(`export answered ${created.status} ${created.text}`)
  return created.body.id as string
}

async function file(id: string): Promise<Buffer> {
  const job = (await server.request('GET', `/api/v1/exports/${id}`)).body
  if (job.status !== 'succeeded') throw new Error(`export ${id} is ${job.status}: ${JSON.stringify(job.problem)}`)
  return Buffer.from(await (await fetch(job.download.url)).arrayBuffer())
}

/** An XLSX's worksheet part as stored: its deflated bytes and data descriptor (the parts before carry the time of the export). */
function storedSheet(xlsx: Buffer): Buffer {
  const name = Buffer.from('xl/worksheets/sheet1.xml')
  const at = xlsx.indexOf(Buffer.concat([name]))
  const central = xlsx.readUInt32LE(xlsx.length - 22 + 16)
  return xlsx.subarray(at + name.length, central)
}

for (const format of ['csv', 'xlsx'] as const) {
  t.test(
    `a ${format.toUpperCase()} export stopped part-way and resumed is byte for byte the export run in one go`,
    async (t) => {
      const whole = await startExport(format)
      t.match(await runJob(whole), { rows: 1234 }, 'the export run in one go')

      const resumed = await startExport(format)
      // Stopped after 12 pages of 50: the first chunk (500 rows) and the 100 rows read since are committed.
      const first = await runJob(resumed, 12)
      t.match(
        first,
        { reason: /handed back after 600 rows/ },
        'the first run commits what it read and hands the export back'
      )
      const { rows: chunks } = await pool.query(
        'SELECT seq, rows, encoded FROM export_chunks WHERE export_id = $1 ORDER BY seq',
        [resumed]
      )
      t.same(
        chunks,
        [
          { seq: 0, rows: 500, encoded: true },
          { seq: 1, rows: 100, encoded: true }
        ],
        'two chunks hold the rows as the format writes them'
      )
      t.match(await runJob(resumed), { rows: 1234, resumedFrom: 600 }, 'the next run goes on from row 600')

      const [a, b] = [await file(whole), await file(resumed)]
      if (format === 'csv') {
        t.ok(a.equals(b), `the CSV files are identical (${a.length} bytes)`)
        t.equal(a.toString('utf8').split('\r\n').length, 1234 + 2, 'a header, 1,234 rows and the final line break')
      } else {
        const [sa, sb] = [storedSheet(a), storedSheet(b)]
        t.ok(sa.equals(sb), `the worksheets are identical as stored, deflated bytes and CRC (${sa.length} bytes)`)
        const xml = inflateRawSync(sa.subarray(0, sa.length - 16)).toString('utf8')
        t.ok(xml.endsWith('</worksheet>'), 'and inflate to a whole worksheet')
        t.equal(xml.match(/<row /g)?.length, 1235, 'with the header row and 1,234 rows')
        t.ok(xml.includes('<row r="1235">'), 'numbered on across the runs')
      }
    }
  )
}

t.test(
  'chunks committed before chunks held encoded rows (records as JSON) are encoded when the file is assembled',
  async (t) => {
    const whole = await startExport('csv')
    await runJob(whole)
    const resumed = await startExport('csv')
    t.match(await runJob(resumed, 12), { reason: /handed back after 600 rows/ })
    // As the version before wrote them: each chunk's records as JSON, and the names its users had.
    const {
      rows: [{ principal }]
    } = await pool.query('SELECT principal FROM export_jobs WHERE id = $1', [resumed])
    const records = await inTenant('acme', () =>
      app.service(recordsPath).find({ principal, pageLimit: 600, query: { moduleKey: 'incident' } })
    )
    const items = records.items.slice(0, 600)
    await pool.query(
      `UPDATE export_chunks SET encoded = false, data = CASE seq WHEN 0 THEN $2 ELSE $3 END WHERE export_id = $1`,
      [resumed, JSON.stringify(items.slice(0, 500)), JSON.stringify(items.slice(500))]
    )
    t.match(await runJob(resumed), { rows: 1234, resumedFrom: 600 })
    t.ok((await file(whole)).equals(await file(resumed)), 'the file is the same as the export run in one go')
  }
)

t.test('chunks committed before chunks were deflated (their text in data) are assembled as they are', async (t) => {
  const whole = await startExport('csv')
  await runJob(whole)
  const resumed = await startExport('csv')
  t.match(await runJob(resumed, 12), { reason: /handed back after 600 rows/ })
  const { rows } = await pool.query('SELECT seq, deflated FROM export_chunks WHERE export_id = $1 ORDER BY seq', [
    resumed
  ])
  t.equal(rows.length, 2, 'two chunks, stored deflated')
  // As the version before wrote them: the text itself, in data.
  for (const r of rows)
    await pool.query('UPDATE export_chunks SET data = $3, deflated = NULL WHERE export_id = $1 AND seq = $2', [
      resumed,
      r.seq,
      inflateRawSync(r.deflated).toString('utf8')
    ])
  t.match(await runJob(resumed), { rows: 1234, resumedFrom: 600 })
  t.ok((await file(whole)).equals(await file(resumed)), 'the file is the same as the export run in one go')
})
