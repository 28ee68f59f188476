// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import { execFileSync, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import ExcelJS from 'exceljs'
import t from '../helpers/tap.ts'
import { parseCsv } from '../helpers/csv.ts'
import { createPlatform, startServer } from '../../core/app.ts'
import { loadConfig } from '../../core/config.ts'
import { projectRoot } from '../../core/paths.ts'
import { purgeExpiredExports } from '../../plugins/exports/exports.job.ts'
import { eventually, userWithToken } from '../helpers/identity.ts'
import { exportGate } from '../helpers/side-channel.ts'
import { exportKey } from '../../core/storage/driver.ts'
import { markSucceeded } from '../../plugins/exports/exports.repository.ts'
import { systemPrincipal } from '../../core/auth/principal.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer, type TestServer } from '../helpers/server.ts'
import { plugins } from '../../plugins/index.ts'

const server = await startTestServer({
  jobs: { enabled: true, processEverySeconds: 1 },
  exports: { lockSeconds: 3, pageSize: 50 }
})
t.teardown(async () => {
  await server.close()
  // Agenda leaves a referenced timer behind job runs (see test/idempotency/purge-job.test.ts).
  setTimeout(() => process.exit(), 200).unref()
})
const pool = server.platform.db.system
const work = mkdtempSync(join(tmpdir(), 'records-exports-'))

// 40 incidents: every fourth is high severity; one carries a formula; one has medical details.
const rows = Array.from({ length: 40 }, (_, i) => ({
  payload: incidentPayload({
    title: i === 3 ? '=HYPERLINK("http://evil.example","click")' : `Incident ${i + 1}, "quoted"`,
    severity: i % 4 === 3 ? 'high' : 'low',
    injuredPeople: i,
    ...(i === 7 ? { medicalDetails: 'Fractured wrist' } : {})
  })
}))
await bulkCall(server.url, '/api/modules/incident/bulk', server.keys.acme, ndjson(rows))

async function runExport(body: Record<string, unknown>, token = server.keys.acme, srv: TestServer = server) {
  const created = await srv.request('POST', '/api/v1/exports', { token, body })
  if (created.status !== 202) throw new Error(`export answered ${created.status} ${created.text}`)
  const deadline = Date.now() + 20_000
  for (;;) {
    const job = await srv.request('GET', `/api/v1/exports/${created.body.id}`, { token })
    if (['succeeded', 'failed'].includes(job.body.status) || Date.now() > deadline) return { created, job: job.body }
    await sleep(100)
  }
}
const download = async (job: any) => Buffer.from(await (await fetch(job.download.url)).arrayBuffer())

t.test('a CSV export with filters is produced, parsed back and matches the records', async (t) => {
  const { created, job } = await runExport({
    moduleKey: 'incident',
    format: 'csv',
    filters: { payload: { severity: 'high' } },
    csvBom: true
  })
  t.equal(created.status, 202)
  t.equal(created.headers.get('location'), `/api/v1/exports/${created.body.id}`)
  t.match(created.body, { status: 'queued', format: 'csv', moduleKey: 'incident' })
  t.equal(job.status, 'succeeded')
  t.same(job.progress, { rowsDone: 10, rowsTotal: 10 })
  t.match(job.file, { name: /^incident-export-\d{4}-\d{2}-\d{2}\.csv$/, contentType: 'text/csv; charset=utf-8' })
  t.ok(Date.parse(job.expiresAt) > Date.now())
  const bytes = await download(job)
  t.same([...bytes.subarray(0, 3)], [0xef, 0xbb, 0xbf], 'the BOM asked for')
  const table = parseCsv(bytes.subarray(3).toString('utf8'))
  const header = table[0]
  t.same(header.slice(0, 5), ['Number', 'State', 'Created', 'Updated', 'Created by'])
  t.equal(table.length - 1, 10, 'one line per matching record')
  const list = (await server.request('GET', '/api/v1/records?moduleKey=incident&payload[severity]=high&limit=200')).body
    .items
  t.same(
    table.slice(1).map((r) => r[0]),
    list.map((r: any) => r.number),
    'the same records, in the same order'
  )
  const title = header.indexOf('Title')
  const formula = table.find((r) => r[title].includes('HYPERLINK'))!
  t.equal(formula[title], `'=HYPERLINK("http://evil.example","click")`, 'a formula comes out inert')
  t.ok(table.slice(1).every((r) => r[header.indexOf('Severity')] === 'high'))
  const { rows: events } = await pool.query(
    'SELECT type, actor, data FROM events WHERE tenant_id = $1 AND subject_id = $2',
    ['acme', created.body.id]
  )
  t.match(
    events,
    [{ type: 'export.succeeded', actor: { type: 'api-key' }, data: { format: 'csv', rows: 10, size: bytes.length } }],
    'one event, by whoever asked for the export'
  )
  t.equal(events.length, 1)
})

t.test("another tenant's export counts none of the first tenant's records, while running or after", async (t) => {
  const title = 'Incident 5, "quoted"'
  const records = server.running.app.service('api/v1/records') as any
  const count = async (tenantId: string) =>
    (
      await records.find({
        principal: systemPrincipal(tenantId, 'test'),
        countOnly: true,
        query: { moduleKey: 'incident', payload: { title } }
      })
    ).total
  t.equal(await count('acme'), 1, 'the owner counts its record')
  t.equal(await count('globex'), 0, 'the count behind rowsTotal holds only the caller tenant')
  t.equal(await count('initech'), 0)
  const { job } = await runExport(
    { moduleKey: 'incident', format: 'pdf', filters: { payload: { title } } },
    server.keys.globex
  )
  t.equal(job.status, 'succeeded')
  t.same(job.progress, { rowsDone: 0, rowsTotal: 0 }, "rowsTotal does not reveal acme's title to globex")
})

t.test('hidden fields are never exported, and asking for them is refused', async (t) => {
  const manager = await userWithToken(server, 'acme', ['safety-manager'])
  const { job } = await runExport({ moduleKey: 'incident', format: 'csv' }, manager.token)
  const text = (await download(job)).toString('utf8')
  t.notMatch(text, /Medical details|Fractured wrist/, 'no column, no value')
  t.match(text, /Incident 8/)
  const asked = await server.request('POST', '/api/v1/exports', {
    token: manager.token,
    body: { moduleKey: 'incident', format: 'csv', columns: ['number', 'medicalDetails'] }
  })
  t.equal(asked.status, 403)
  t.equal(asked.body.code, 'field.forbidden')
  const unknownColumn = await server.request('POST', '/api/v1/exports', {
    token: manager.token,
    body: { moduleKey: 'incident', format: 'csv', columns: ['number', 'colour'] }
  })
  t.equal(unknownColumn.status, 400)
  t.match(unknownColumn.body.detail, /colour/)
  const health = await userWithToken(server, 'acme', ['health-officer'])
  const noExport = await server.request('POST', '/api/v1/exports', {
    token: health.token,
    body: { moduleKey: 'incident', format: 'csv' }
  })
  t.equal(noExport.status, 403, 'a role without the export action')
  t.equal(
    (await server.request('GET', `/api/v1/exports/${job.id}`, { token: server.keys.globex })).status,
    404,
    'another tenant'
  )
  const reporter = await userWithToken(server, 'acme', ['reporter'])
  t.equal(
    (await server.request('GET', `/api/v1/exports/${job.id}`, { token: reporter.token })).status,
    404,
    "someone else's export"
  )
  const bad = await server.request('POST', '/api/v1/exports', {
    body: { moduleKey: 'incident', format: 'csv', filters: { payload: { severity: 'huge' } } }
  })
  t.equal(bad.status, 400, 'filters are validated as for the list')
  const docx = await server.request('POST', '/api/v1/exports', { body: { moduleKey: 'incident', format: 'docx' } })
  t.equal(docx.status, 400)
})

t.test('an XLSX export opens in exceljs with typed cells and a frozen header', async (t) => {
  const { job } = await runExport({
    moduleKey: 'incident',
    format: 'xlsx',
    columns: ['number', 'createdAt', 'title', 'injuredPeople', 'severity']
  })
  t.equal(job.status, 'succeeded')
  const file = join(work, 'export.xlsx')
  writeFileSync(file, await download(job))
  const book = new ExcelJS.Workbook()
  await book.xlsx.readFile(file)
  const sheet = book.worksheets[0]
  t.same((sheet.getRow(1).values as unknown[]).slice(1), ['Number', 'Created', 'Title', 'People injured', 'Severity'])
  t.equal(sheet.rowCount, 41)
  t.match(sheet.views[0], { state: 'frozen', ySplit: 1 })
  const second = sheet.getRow(2)
  t.type(second.getCell(4).value, 'number', 'numbers are numbers')
  t.ok(second.getCell(2).value instanceof Date, 'dates are dates')
})

t.test('a PDF export is a readable report with its records', async (t) => {
  const { job } = await runExport({ moduleKey: 'incident', format: 'pdf', filters: { payload: { severity: 'high' } } })
  t.equal(job.status, 'succeeded')
  const file = join(work, 'export.pdf')
  writeFileSync(file, await download(job))
  const text = execFileSync('pdftotext', ['-layout', file, '-']).toString('utf8')
  t.match(text, /Incident export/)
  t.match(text, /Acme Chemicals/)
  t.match(text, /severity/)
  t.match(text, /Page 1 of 1\b/)
  const list = (await server.request('GET', '/api/v1/records?moduleKey=incident&payload[severity]=high&limit=200')).body
    .items
  for (const r of list) t.match(text, r.number, `lists ${r.number}`)
  if (process.env.EXPORT_PNG_DIR)
    execFileSync('pdftoppm', [
      '-png',
      '-r',
      '80',
      '-f',
      '1',
      '-l',
      '1',
      file,
      join(process.env.EXPORT_PNG_DIR, 'export-page')
    ])
})

t.test(
  'CSV and XLSX carry externalRef and user names with their ids; values: labels words states and choices',
  async (t) => {
    const sam = await server.platform.users.create('acme', {
      userName: 'sam.patel',
      displayName: 'Sam Patel',
      roles: ['safety-manager']
    })
    const made = await server.request('POST', '/api/v1/records', {
      body: {
        moduleKey: 'incident',
        externalRef: 'SRC-7781',
        payload: incidentPayload({ title: 'Named lead', category: 'property-damage' })
      }
    })
    t.equal(made.status, 201)
    const fired = await server.request('POST', `/api/v1/records/${made.body.id}:transition`, {
      body: { transition: 'start-investigation', payload: { investigationLead: sam.id } }
    })
    t.equal(fired.status, 200)
    const filters = { externalRef: 'SRC-7781' }
    const keysCsv = parseCsv(
      (await download((await runExport({ moduleKey: 'incident', format: 'csv', filters })).job)).toString('utf8')
    )
    const [header, row] = keysCsv
    const cell = (name: string) => row[header.indexOf(name)]
    t.equal(cell('External ref'), 'SRC-7781')
    t.equal(cell('Investigation lead'), 'Sam Patel', 'a user field reads as the name')
    t.equal(cell('Investigation lead (id)'), sam.id, 'and its id is beside it')
    t.equal(cell('Created by'), 'acme test key')
    t.equal(cell('Updated by'), 'acme test key')
    t.equal(cell('State'), 'investigating', 'keys by default')
    t.equal(cell('Category'), 'property-damage')

    const { job } = await runExport({
      moduleKey: 'incident',
      format: 'csv',
      filters,
      values: 'labels',
      columns: ['number', 'state', 'category', 'investigationLead', 'investigationLead.id']
    })
    t.equal(job.values, 'labels')
    const labelled = parseCsv((await download(job)).toString('utf8'))
    t.same(labelled[0], ['Number', 'State', 'Category', 'Investigation lead', 'Investigation lead (id)'])
    t.same(labelled[1].slice(1), ['Under investigation', 'Property damage', 'Sam Patel', sam.id])

    const xlsx = await runExport({ moduleKey: 'incident', format: 'xlsx', filters, values: 'labels' })
    const file = join(work, 'labels.xlsx')
    writeFileSync(file, await download(xlsx.job))
    const book = new ExcelJS.Workbook()
    await book.xlsx.readFile(file)
    const sheet = book.worksheets[0]
    const names = (sheet.getRow(1).values as unknown[]).slice(1)
    t.equal(sheet.getRow(2).getCell(names.indexOf('External ref') + 1).value, 'SRC-7781')
    t.equal(sheet.getRow(2).getCell(names.indexOf('Investigation lead') + 1).value, 'Sam Patel')
    t.equal(sheet.getRow(2).getCell(names.indexOf('State') + 1).value, 'Under investigation')
    t.match(sheet.autoFilter, /^A1:[A-Z]+1$/, 'filter buttons on the header row')
    const bad = await server.request('POST', '/api/v1/exports', {
      body: { moduleKey: 'incident', format: 'csv', values: 'names' }
    })
    t.equal(bad.status, 400, 'values is keys or labels')
  }
)

t.test(
  'a PDF export of more rows than exports.pdfMaxRows is refused when asked for; a CSV of the same rows is not',
  async (t) => {
    const o = server.platform.config.exports
    const cap = o.pdfMaxRows
    o.pdfMaxRows = 10
    t.teardown(() => void (o.pdfMaxRows = cap))
    const refused = await server.request('POST', '/api/v1/exports', {
      token: server.keys.acme,
      body: { moduleKey: 'incident', format: 'pdf' }
    })
    t.equal(refused.status, 422)
    t.match(refused.headers.get('content-type'), /^application\/problem\+json/)
    t.equal(refused.body.code, 'export.too_many_rows')
    t.equal(refused.body.maxRows, 10)
    t.match(refused.body.detail, /at most 10 rows and these filters select 4\d\b/)
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM export_jobs WHERE tenant_id = 'acme'`)
    const { job } = await runExport({
      moduleKey: 'incident',
      format: 'pdf',
      filters: { payload: { severity: 'high' } }
    })
    t.equal(job.status, 'succeeded', 'the ten high-severity incidents fit')
    t.equal(job.progress.rowsDone, 10)
    const csv = await runExport({ moduleKey: 'incident', format: 'csv' })
    t.equal(csv.job.status, 'succeeded', 'CSV takes every row')
    const after = await pool.query(`SELECT count(*)::int AS n FROM export_jobs WHERE tenant_id = 'acme'`)
    t.equal(after.rows[0].n, rows[0].n + 2, 'the refused request left no export behind')
  }
)

t.test('a PDF export shows the module summary columns by default and numbers its pages "Page n of m"', async (t) => {
  const module = await server.request('GET', '/api/v1/modules/incident')
  t.same(module.body.summaryColumns, ['title', 'site', 'category', 'severity', 'occurredAt'])
  const { job } = await runExport({ moduleKey: 'incident', format: 'pdf' })
  t.equal(job.status, 'succeeded')
  t.equal(job.values, 'labels', 'a PDF words states and choices by their labels by default')
  const file = join(work, 'summary.pdf')
  writeFileSync(file, await download(job))
  const pages = Number(/Pages:\s+(\d+)/.exec(execFileSync('pdfinfo', [file], { encoding: 'utf8' }))?.[1])
  const first = execFileSync('pdftotext', ['-layout', '-f', '1', '-l', '1', file, '-']).toString('utf8')
  t.match(first, /Number\s+State\s+Title\s+Site\s+Category\s+Severity\s+Occurred at\s+Created\n/)
  t.match(first, /Reported\s+Incident 1, "quoted"\s+Leeds DC\s+Near miss\s+Low/)
  t.match(first, new RegExp(`Page 1 of ${pages}\\b`))
  if (process.env.EXPORT_PNG_DIR)
    execFileSync('pdftoppm', [
      '-png',
      '-r',
      '80',
      '-f',
      '1',
      '-l',
      '1',
      file,
      join(process.env.EXPORT_PNG_DIR, 'export-summary')
    ])
})

t.test('an export file expires: the purge job removes it and the job says expired', async (t) => {
  const { job } = await runExport({ moduleKey: 'incident', format: 'csv', columns: ['number'] })
  const url = job.download.url
  t.equal((await fetch(url)).status, 200)
  await pool.query(
    "UPDATE export_jobs SET expires_at = now() - interval '1 minute' WHERE tenant_id = 'acme' AND id = $1",
    [job.id]
  )
  t.ok((await purgeExpiredExports(server.platform)) >= 1)
  const after = (await server.request('GET', `/api/v1/exports/${job.id}`)).body
  t.equal(after.status, 'expired')
  t.notOk('download' in after, 'no download any more')
  t.equal((await fetch(url)).status, 404, 'the file is gone')
})

t.test('a sixth concurrent export waits in the queue, with its position, then runs', async (t) => {
  const limiter = server.platform.limiter!
  const held = []
  for (let i = 0; i < 5; i++) held.push((await limiter.acquire('exports:acme', 5, 60_000)).lease!)
  const a = await server.request('POST', '/api/v1/exports', { body: { moduleKey: 'incident', format: 'csv' } })
  const b = await server.request('POST', '/api/v1/exports', { body: { moduleKey: 'incident', format: 'csv' } })
  t.equal(a.status, 202, 'queued, not refused')
  await sleep(800)
  const waitingA = (await server.request('GET', `/api/v1/exports/${a.body.id}`)).body
  const waitingB = (await server.request('GET', `/api/v1/exports/${b.body.id}`)).body
  t.match(waitingA, { status: 'queued', queuePosition: 1 })
  t.match(waitingB, { status: 'queued', queuePosition: 2 })
  await held[0].release()
  const deadline = Date.now() + 10_000
  let status = ''
  while (Date.now() < deadline && status !== 'succeeded') {
    status = (await server.request('GET', `/api/v1/exports/${a.body.id}`)).body.status
    await sleep(100)
  }
  t.equal(status, 'succeeded', 'the first in the queue ran once a slot was free')
  for (const l of held.slice(1)) await l.release()
  let statusB = ''
  while (Date.now() < deadline + 10_000 && statusB !== 'succeeded') {
    statusB = (await server.request('GET', `/api/v1/exports/${b.body.id}`)).body.status
    await sleep(100)
  }
  t.equal(statusB, 'succeeded')
})

t.test("one tenant's export backlog does not hold up another tenant's export", async (t) => {
  const limiter = server.platform.limiter!
  const held = []
  for (let i = 0; i < 5; i++) held.push((await limiter.acquire('exports:acme', 5, 60_000)).lease!)
  // More waiting exports than an instance has render workers (20).
  const backlog = []
  for (let i = 0; i < 25; i++)
    backlog.push(
      (
        await server.request('POST', '/api/v1/exports', {
          body: { moduleKey: 'incident', format: 'csv', columns: ['number'] }
        })
      ).body.id
    )
  const started = Date.now()
  const { job } = await runExport({ moduleKey: 'incident', format: 'csv' }, server.keys.globex)
  const waited = Date.now() - started
  t.equal(job.status, 'succeeded', "globex's export ran while acme's waited")
  t.ok(waited < 8000, `globex's export was done in ${waited} ms`)
  const last = (await server.request('GET', `/api/v1/exports/${backlog[24]}`)).body
  t.match(last, { status: 'queued', queuePosition: 25 }, "acme's backlog is still waiting, in order")
  for (const lease of held) await lease.release()
  const deadline = Date.now() + 60_000
  let done = 0
  while (Date.now() < deadline && done < backlog.length) {
    done = 0
    for (const id of backlog)
      if ((await server.request('GET', `/api/v1/exports/${id}`)).body.status === 'succeeded') done++
    await sleep(250)
  }
  t.equal(done, backlog.length, 'then the backlog drains')
})

t.test('an export survives the death of the process running it and finishes once', async (t) => {
  // An API instance that runs no jobs, a worker process that does, on a database of their own.
  const api = await startTestServer({ jobs: { enabled: false } })
  t.teardown(() => api.close())
  const many = Array.from({ length: 6000 }, (_, i) => ({ payload: incidentPayload({ title: `row ${i}` }) }))
  await bulkCall(api.url, '/api/modules/incident/bulk', api.keys.acme, ndjson(many))
  // Two rows a page: slow enough to be caught part-way.
  const config = {
    tenants: api.platform.config.tenants,
    exports: { lockSeconds: 3, pageSize: 2 },
    attachments: api.platform.config.attachments,
    jobs: { processEverySeconds: 1 }
  }
  const worker = spawn(process.execPath, ['--import', 'tsx', 'test/exports/fixtures/worker.ts'], {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: api.platform.db.url, WORKER_CONFIG: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  t.teardown(() => worker.kill('SIGKILL'))
  await new Promise<void>((resolve) => worker.stdout.on('data', (d) => String(d).includes('ready') && resolve()))

  const created = await api.request('POST', '/api/v1/exports', { body: { moduleKey: 'incident', format: 'csv' } })
  let job: any
  for (const until = Date.now() + 20_000; Date.now() < until; await sleep(50)) {
    job = (await api.request('GET', `/api/v1/exports/${created.body.id}`)).body
    if (job.status === 'running' && job.progress.rowsDone > 0 && job.progress.rowsDone < 5000) break
  }
  t.match(job, { status: 'running', attempts: 1 }, 'the worker is part-way through')
  t.ok(job.progress.rowsDone < 6000, `killed at ${job.progress.rowsDone} of ${job.progress.rowsTotal} rows`)
  const killedAt = job.progress.rowsDone
  worker.kill('SIGKILL')

  // A new instance with jobs on: once the dead worker's lock expires, it takes the job over.
  const next = await startServer(
    await createPlatform(
      loadConfig({
        ...config,
        port: 0,
        logLevel: 'error',
        jobs: { enabled: true, processEverySeconds: 1 },
        database: { url: api.platform.db.url }
      } as any),
      plugins
    ),
    plugins
  )
  for (const until = Date.now() + 30_000; Date.now() < until; await sleep(200)) {
    job = (await api.request('GET', `/api/v1/exports/${created.body.id}`)).body
    if (job.status === 'succeeded' || job.status === 'failed') break
  }
  t.match(
    job,
    { status: 'succeeded', attempts: 2, progress: { rowsDone: 6000, rowsTotal: 6000 } },
    'finished by the new instance, on its second attempt'
  )
  const {
    rows: [run]
  } = await api.platform.db.system.query('SELECT resumed_from FROM export_jobs WHERE id = $1', [created.body.id])
  t.ok(
    run.resumed_from >= killedAt && run.resumed_from > 0,
    `the new instance went on from row ${run.resumed_from} (${killedAt} committed when killed), not from the start`
  )
  const lines = parseCsv((await download(job)).toString('utf8'))
  t.equal(lines.length - 1, 6000, 'every record once')
  t.equal(new Set(lines.slice(1).map((l) => l[0])).size, 6000, 'no duplicates')
  // Agenda records a finish after the handler returns, and so after the export's own state is committed: on a busy
  // machine a moment after the API says "succeeded". Wait for that record, then count the finishes.
  const finishes = async () =>
    (
      await api.platform.db.system.query(
        "SELECT count(*)::int AS n FROM agenda_jobs WHERE name = 'exports.render' AND last_finished_at IS NOT NULL"
      )
    ).rows[0].n as number
  for (const until = Date.now() + 15_000; Date.now() < until && (await finishes()) === 0;) await sleep(100)
  t.equal(await finishes(), 1, 'the job finished once')
  const { rows: events } = await api.platform.db.system.query(
    'SELECT type, module_key, data FROM events WHERE subject_id = $1',
    [created.body.id]
  )
  t.same(
    events,
    [{ type: 'export.succeeded', module_key: 'incident', data: { format: 'csv', rows: 6000, size: job.file.size } }],
    'one export.succeeded event: the killed attempt wrote none'
  )
  // Before the database is dropped under it.
  await next.close()
})

t.test(
  'a run fenced out while it renders never overwrites the file of the run that took the export over',
  async (t) => {
    const storage = server.platform.storage
    const put = storage.putFile.bind(storage)
    const gate = exportGate(storage)
    t.teardown(() => {
      gate.releaseAll()
      storage.putFile = put
    })
    await bulkCall(
      server.url,
      '/api/modules/incident/bulk',
      server.keys.globex,
      ndjson([{ payload: incidentPayload({ title: 'Rendered by the run fenced out' }) }])
    )
    const folder = join((storage as unknown as { dir: string }).dir, 'globex', 'exports')
    const before = existsSync(folder) ? readdirSync(folder) : []
    gate.hold('globex')
    const created = await server.request('POST', '/api/v1/exports', {
      token: server.keys.globex,
      body: { moduleKey: 'incident', format: 'csv' }
    })
    t.equal(created.status, 202)
    const id = created.body.id
    // Run A has rendered its file and is about to store it, when run B (another instance, after A's lease
    // lapsed in a database stall) takes the export over, stores its file and marks the export succeeded.
    await gate.arrived('globex')
    const bRun = randomUUID()
    const bFile = join(work, 'run-b.csv')
    writeFileSync(bFile, 'the file of run B\r\n')
    const bKey = exportKey('globex', bRun)
    const { size } = await put(bKey, bFile, 'text/csv')
    await pool.query(`UPDATE export_jobs SET run_id = $3 WHERE tenant_id = $1 AND id = $2`, ['globex', id, bRun])
    t.ok(
      await markSucceeded(pool, 'globex', id, bRun, { rows: 1, key: bKey, size, fileHours: 1 }),
      'run B finished the export'
    )
    gate.release('globex')
    // Run A's job ends (it stores its file, learns it no longer holds the export, and stops).
    const ended = await eventually(async () => {
      const { rows } = await pool.query(
        `SELECT count(*)::int AS n FROM agenda_jobs WHERE name = 'exports.render' AND data->>'exportId' = $1 AND last_finished_at IS NOT NULL`,
        [id]
      )
      return rows[0].n > 0
    }, 20_000)
    t.ok(ended, "run A's job ended")
    const job = (await server.request('GET', `/api/v1/exports/${id}`, { token: server.keys.globex })).body
    t.equal(job.status, 'succeeded')
    t.equal(
      (await download(job)).toString('utf8'),
      'the file of run B\r\n',
      "the export's file is run B's, not overwritten by run A"
    )
    // Run A's file is not left behind either: the tenant's exports folder holds run B's alone.
    const added = readdirSync(folder).filter((f) => !before.includes(f))
    t.same(added, [bRun], 'run A removed the file it stored once it learned it no longer held the export')
  }
)
