import { execFileSync } from 'node:child_process'
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { Writable } from 'node:stream'
import { GCProfiler } from 'node:v8'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import ExcelJS from 'exceljs'
import t from '../helpers/tap.ts'
import { parseCsv } from '../helpers/csv.ts'
import { loadConfig } from '../../core/config.ts'
import { render, type ExportFormat, type RenderInput } from '../../plugins/exports/exports.render.ts'
import { sheetName } from '../../plugins/exports/exports.xlsx.ts'
import { csvField, csvRows, isoUtcText } from '../../plugins/exports/exports.csv.ts'
import {
  exportColumns,
  summaryExportColumns,
  type ExportColumn,
  type ExportRecord
} from '../../core/modules/derive/columns.ts'
import { loadModules } from '../../core/modules/registry.ts'

const registry = await loadModules(loadConfig().modules)
const incident = registry.get('incident')!
const hidden = new Set(['medicalDetails'])
const columns = exportColumns(incident, { hidden })
const dir = mkdtempSync(join(tmpdir(), 'records-exports-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

const lead = '6f1c1a52-3d4e-4f3a-9a51-0c2b8e4d7f10'
const formulas = ['=HYPERLINK("http://evil")', '+1', '-2+3', '@SUM(A1)']
const records: ExportRecord[] = [
  {
    number: 'INC-2026-00001',
    state: 'investigating',
    createdAt: '2026-03-02T08:30:00.000Z',
    updatedAt: '2026-03-02T09:45:10.000Z',
    createdBy: { name: 'Ann Smith' },
    payload: {
      title: 'Slip, trip "and" fall',
      description: 'Wet floor by the canteen.\r\nNo sign was up.\nCleaner informed.',
      occurredAt: '2026-03-01T10:15:00Z',
      site: 'Leeds',
      location: { latitude: 53.7997, longitude: -1.5492, label: 'Gate 3' },
      category: 'injury',
      severity: 'medium',
      injuredPeople: 2,
      bodyParts: ['head', 'hands'],
      lostTimeDays: 1.5,
      medicalDetails: 'Fractured wrist, hospital visit',
      investigationLead: lead,
      regulatorNotified: true,
      regulatorNotifiedOn: '2026-03-03'
    }
  },
  {
    number: 'INC-2026-00002',
    state: 'reported',
    createdAt: '2026-03-04T12:00:00.000Z',
    updatedAt: '2026-03-04T12:00:00.000Z',
    createdBy: { name: 'Bob Jones' },
    payload: {
      title: formulas[0],
      description: formulas[1],
      occurredAt: '2026-03-04T11:00:00Z',
      site: formulas[2],
      category: 'near-miss',
      severity: 'low',
      immediateActions: formulas[3],
      rootCause: 'Ünïcødé — 東京 ✓',
      regulatorNotified: false
    }
  },
  {
    number: 'INC-2026-00003',
    state: 'closed',
    createdAt: '2026-03-05T07:00:00.000Z',
    updatedAt: '2026-03-06T16:20:00.000Z',
    createdBy: { name: 'Carla Díaz' },
    payload: {
      title: 'Spill at the loading bay',
      description: 'Diesel, about 5 litres.',
      occurredAt: '2026-03-05T06:40:00Z',
      site: 'Hull',
      category: 'environmental',
      severity: 'high'
    }
  }
]

async function* from<T>(items: Iterable<T>): AsyncGenerator<T> {
  for (const item of items) yield item
}

function input(overrides: Partial<RenderInput> = {}): RenderInput {
  return {
    title: 'Incident export',
    tenantName: 'Demo Ltd',
    moduleTitle: 'Incident',
    filters: [
      ['severity', 'medium, low, high'],
      ['site', 'Leeds']
    ],
    generatedAt: new Date('2026-03-07T09:00:00.000Z'),
    columns,
    rows: from(records),
    ...overrides
  }
}

async function renderTo(format: ExportFormat, name: string, overrides: Partial<RenderInput> = {}) {
  const file = join(dir, name)
  const result = await render(format, input(overrides), createWriteStream(file))
  return { file, result }
}

const col = (key: string) => columns.findIndex((c) => c.key === key)

t.test('CSV has a header row and one RFC 4180 record per row, values as written', async (t) => {
  const { file, result } = await renderTo('csv', 'plain.csv')
  t.same(result, { rows: 3 })
  const raw = readFileSync(file, 'utf8')
  t.notOk(raw.startsWith('\uFEFF'), 'no BOM unless asked for')
  const rows = parseCsv(raw)
  t.equal(rows.length, 4)
  t.same(
    rows[0],
    columns.map((c) => c.header)
  )
  t.ok(
    rows.every((r) => r.length === columns.length),
    'every record has every column'
  )

  const first = rows[1]
  t.equal(first[col('number')], 'INC-2026-00001')
  t.equal(first[col('state')], 'investigating')
  t.equal(first[col('createdAt')], '2026-03-02T08:30:00.000Z')
  t.equal(first[col('createdBy')], 'Ann Smith')
  t.equal(first[col('title')], 'Slip, trip "and" fall')
  t.equal(first[col('description')], 'Wet floor by the canteen.\r\nNo sign was up.\nCleaner informed.')
  t.equal(first[col('occurredAt')], '2026-03-01T10:15:00.000Z')
  t.equal(first[col('location')], '53.7997, -1.5492 (Gate 3)')
  t.equal(first[col('injuredPeople')], '2')
  t.equal(first[col('bodyParts')], 'head, hands')
  t.equal(first[col('lostTimeDays')], '1.5')
  t.equal(first[col('investigationLead')], lead)
  t.equal(first[col('regulatorNotified')], 'true')
  t.equal(first[col('regulatorNotifiedOn')], '2026-03-03')
  t.equal(rows[2][col('regulatorNotified')], 'false')
  t.equal(rows[2][col('rootCause')], 'Ünïcødé — 東京 ✓', 'UTF-8 text survives')
  t.equal(rows[3][col('lostTimeDays')], '', 'a missing value is an empty field')
  t.equal(rows[3][col('createdBy')], 'Carla Díaz')
})

t.test('CSV quotes fields with commas, quotes and line breaks and doubles the quotes', async (t) => {
  const raw = readFileSync((await renderTo('csv', 'quoting.csv')).file, 'utf8')
  t.ok(raw.includes(',"Slip, trip ""and"" fall",'))
  t.ok(raw.includes('"Wet floor by the canteen.\r\nNo sign was up.\nCleaner informed."'))
  t.ok(raw.includes(',Leeds,'), 'plain fields are not quoted')
})

t.test('CSV starts with a UTF-8 byte order mark only when asked for', async (t) => {
  const bytes = readFileSync((await renderTo('csv', 'bom.csv', { csvBom: true })).file)
  t.same([...bytes.subarray(0, 3)], [0xef, 0xbb, 0xbf])
  t.same(
    parseCsv(bytes.toString('utf8').slice(1))[0],
    columns.map((c) => c.header)
  )
})

t.test('CSV makes formula-looking text inert and leaves typed numbers alone', async (t) => {
  const delta: ExportColumn = {
    key: 'delta',
    header: 'Delta',
    kind: 'number',
    width: 8,
    value: () => -2,
    get: () => -2
  }
  const { file } = await renderTo('csv', 'formulas.csv', { columns: [...columns, delta] })
  const rows = parseCsv(readFileSync(file, 'utf8'))
  const second = rows[2]
  t.equal(second[col('title')], `'${formulas[0]}`)
  t.equal(second[col('description')], `'${formulas[1]}`)
  t.equal(second[col('site')], `'${formulas[2]}`)
  t.equal(second[col('immediateActions')], `'${formulas[3]}`)
  for (const r of rows.slice(1))
    t.notOk(
      r.slice(0, columns.length).some((f) => /^[=+\-@\t\r]/.test(f)),
      `no text field of ${r[0]} starts like a formula`
    )
  t.equal(second[columns.length], '-2', 'a typed negative number stays a number')
})

t.test('CSV writes a date-time stored as ISO text as its Date would, and leaves other text to Date', async (t) => {
  const stored = [
    '2026-03-01T10:15:00Z',
    '2026-03-01T10:15:00.123Z',
    '0999-12-28T23:59:59.999Z',
    '2026-02-29T10:00:00Z',
    '2026-01-31T10:00:00.000Z',
    '2026-03-01T24:00:00Z',
    '2026-03-01 10:15:00Z',
    '2026-03-01T10:15:00+02:00',
    'soon'
  ]
  for (const s of stored) {
    const d = new Date(s)
    const iso = isoUtcText(s)
    if (iso !== undefined) t.equal(iso, d.toISOString(), s)
    const column = columns.find((c) => c.key === 'occurredAt')!
    const record = { ...records[0], payload: { ...records[0].payload, occurredAt: s } }
    const line = csvRows([column], [record])
    t.equal(line, `${csvField(column.get(record), 'datetime')}\r\n`, `${s}: the same cell as through its Date`)
  }
  t.equal(isoUtcText('2026-02-29T10:00:00Z'), undefined, 'days past the 28th are left to Date')
})

t.test('hidden fields never reach any format', async (t) => {
  t.notOk(columns.some((c) => c.key === 'medicalDetails'))
  for (const format of ['csv', 'xlsx', 'pdf'] as const) {
    const { file } = await renderTo(format, `hidden.${format}`)
    const text =
      format === 'csv'
        ? readFileSync(file, 'utf8')
        : format === 'pdf'
          ? pdfText(file)
          : JSON.stringify(await sheetValues(file))
    t.notOk(text.includes('Fractured wrist'), `${format}: the hidden value is absent`)
    t.notOk(text.includes('Medical details'), `${format}: the hidden header is absent`)
  }
})

async function openSheet(file: string) {
  const workbook = new ExcelJS.Workbook()
  await workbook.xlsx.readFile(file)
  return workbook.getWorksheet('Incident')!
}

async function sheetValues(file: string) {
  const sheet = await openSheet(file)
  const out: unknown[][] = []
  sheet.eachRow((row) => out.push((row.values as unknown[]).slice(1)))
  return out
}

t.test('XLSX has a bold, frozen header row and typed cells', async (t) => {
  const { file, result } = await renderTo('xlsx', 'plain.xlsx')
  t.same(result, { rows: 3 })
  const sheet = await openSheet(file)
  t.ok(sheet, 'the worksheet is named after the module')
  t.equal(sheet.rowCount, 4)
  t.match(sheet.views[0], { state: 'frozen', ySplit: 1 })
  const header = sheet.getRow(1)
  t.same(
    (header.values as unknown[]).slice(1),
    columns.map((c) => c.header)
  )
  t.equal(header.getCell(1).font?.bold, true)
  t.equal(
    sheet.getColumn(col('description') + 1).width,
    columns[col('description')].width,
    'column widths come from the spec'
  )

  const first = sheet.getRow(2)
  const cell = (key: string) => first.getCell(col(key) + 1).value
  t.equal(cell('number'), 'INC-2026-00001')
  t.equal(cell('title'), 'Slip, trip "and" fall')
  // XML reads CRLF as LF (Excel does the same), so only the line breaks themselves survive.
  t.equal(cell('description'), 'Wet floor by the canteen.\nNo sign was up.\nCleaner informed.')
  t.equal(cell('injuredPeople'), 2)
  t.equal(cell('lostTimeDays'), 1.5)
  t.equal(cell('regulatorNotified'), true)
  t.ok(cell('occurredAt') instanceof Date, 'a date-time is a Date')
  t.equal((cell('occurredAt') as Date).toISOString(), '2026-03-01T10:15:00.000Z')
  t.ok(cell('regulatorNotifiedOn') instanceof Date, 'a date is a Date')
  t.equal((cell('regulatorNotifiedOn') as Date).toISOString(), '2026-03-03T00:00:00.000Z')
  t.equal(first.getCell(col('regulatorNotifiedOn') + 1).numFmt, 'yyyy-mm-dd')
  t.equal((sheet.getRow(2).getCell(col('createdAt') + 1).value as Date).toISOString(), '2026-03-02T08:30:00.000Z')
  t.equal(sheet.getRow(3).getCell(col('rootCause') + 1).value, 'Ünïcødé — 東京 ✓')
  t.equal(sheet.getRow(4).getCell(col('lostTimeDays') + 1).value, null, 'a missing value is an empty cell')
})

t.test('XLSX has an autofilter over the header row, on every column', async (t) => {
  const { file } = await renderTo('xlsx', 'filter.xlsx')
  const sheet = await openSheet(file)
  const last = sheet.getColumn(columns.length).letter
  t.same(sheet.autoFilter, `A1:${last}1`)
  t.match(sheet.views[0], { state: 'frozen', ySplit: 1 }, 'and the header stays frozen')
})

t.test('XLSX makes formula-looking text inert, as the CSV does', async (t) => {
  const sheet = await openSheet((await renderTo('xlsx', 'formulas.xlsx')).file)
  const second = sheet.getRow(3)
  t.equal(second.getCell(col('title') + 1).value, `'${formulas[0]}`)
  t.equal(second.getCell(col('description') + 1).value, `'${formulas[1]}`)
  t.equal(second.getCell(col('site') + 1).value, `'${formulas[2]}`)
  t.equal(second.getCell(col('immediateActions') + 1).value, `'${formulas[3]}`)
  t.equal(second.getCell(col('title') + 1).type, ExcelJS.ValueType.String, 'a string, not a formula')
})

t.test('XLSX drops the characters XML cannot carry, noncharacters included, and stays readable', async (t) => {
  const odd = [{ ...records[0], payload: { ...records[0].payload, title: 'Bay\uFFFE 4\uFFFF \u0001leak' } }]
  const sheet = await openSheet((await renderTo('xlsx', 'noncharacters.xlsx', { rows: from(odd) })).file)
  t.equal(sheet.getRow(2).getCell(col('title') + 1).value, 'Bay 4 leak')
})

t.test('worksheet names drop the characters Excel forbids and stop at 31 characters', async (t) => {
  t.equal(sheetName('Incident'), 'Incident')
  t.equal(sheetName('Q1/Q2 [draft]: checks*?'), 'Q1 Q2  draft   checks')
  t.equal(sheetName('A very long module title that Excel would refuse'), 'A very long module title that E')
  t.equal(sheetName("'[]'"), 'Records')
})

function pdfText(file: string): string {
  try {
    return execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' })
  } catch (err) {
    throw new Error(
      `pdftotext failed (install poppler-utils: apt-get install -y poppler-utils): ${(err as Error).message}`,
      { cause: err }
    )
  }
}

t.test('PDF is a readable report: heading, filters, cells, row count and page footers', async (t) => {
  const { file, result } = await renderTo('pdf', 'plain.pdf')
  t.same(result, { rows: 3 })
  t.equal(readFileSync(file).subarray(0, 5).toString(), '%PDF-')
  const text = pdfText(file)
  t.match(text, 'Incident export')
  t.match(text, 'Tenant: Demo Ltd')
  t.match(text, 'Module: Incident')
  t.match(text, 'Filters: severity: medium, low, high; site: Leeds')
  t.match(text, 'Generated: 2026-03-07 09:00:00 UTC')
  t.match(text, /Columns: 8 of \d+ shown .*the CSV and XLSX exports contain all columns/s)
  for (const v of [
    'INC-2026-00001',
    'INC-2026-00003',
    'investigating',
    'Carla Díaz',
    'Spill at the loading bay',
    '2026-03-02 08:30'
  ])
    t.match(text, v)
  t.match(text, '3 records')
  t.match(text, 'Page 1')
})

t.test('PDF says "none" without filters and shows a short column list in full', async (t) => {
  const few = exportColumns(incident, { hidden, only: ['number', 'title', 'severity', 'injuredPeople'] })
  const text = pdfText((await renderTo('pdf', 'few.pdf', { filters: [], columns: few })).file)
  t.match(text, 'Filters: none')
  t.notMatch(text, 'Columns:')
  t.match(text, /Number\s+Title\s+Severity\s+People injured/)
})

t.test('PDF footers number the pages "Page n of m"', async (t) => {
  const { file } = await renderTo('pdf', 'paged.pdf', { rows: generated(400, 200) })
  const pages = Number(/Pages:\s+(\d+)/.exec(execFileSync('pdfinfo', [file], { encoding: 'utf8' }))?.[1])
  t.ok(pages > 3, `${pages} pages`)
  const page = (n: number) =>
    execFileSync('pdftotext', ['-layout', '-f', String(n), '-l', String(n), file, '-'], { encoding: 'utf8' })
  t.match(page(1), new RegExp(`Page 1 of ${pages}\\b`))
  t.match(page(2), new RegExp(`Page 2 of ${pages}\\b`))
  t.match(page(pages), new RegExp(`Page ${pages} of ${pages}\\b`))
})

t.test('PDF default columns are Number, State, the module summary columns and Created', async (t) => {
  const text = pdfText(
    (
      await renderTo('pdf', 'summary.pdf', {
        columns: summaryExportColumns(incident, { hidden }),
        columnNote: "the module's summary columns"
      })
    ).file
  )
  t.match(text, /Number\s+State\s+Title\s+Site\s+Category\s+Severity\s+Occurred at\s+Created\n/)
  t.match(text, "Columns: the module's summary columns")
  t.match(
    text,
    /INC-2026-00003\s+closed\s+Spill at the loading bay\s+Hull\s+environmental\s+high\s+2026-03-05 06:40\s+2026-03-05\n/,
    'one line per short row'
  )
})

t.test('PDF columns are as wide as their content: names and dates never wrap, long text does', async (t) => {
  const people = ['Carla Díaz-Fernández', 'Bartholomew Okonkwo-Smith', 'Ann Smith']
  async function* rows() {
    let i = 0
    for await (const r of generated(30, 400)) yield { ...r, createdBy: { name: people[i++ % people.length] } }
  }
  const few = exportColumns(incident, { hidden, only: ['number', 'createdBy', 'createdAt', 'description', 'severity'] })
  const text = pdfText((await renderTo('pdf', 'widths.pdf', { columns: few, rows: rows() })).file)
  for (const name of people)
    t.match(
      text,
      new RegExp(`INC-2026-\\d{5}\\s+${name}\\s+2026-01-0\\d \\d\\d:\\d\\d\\s+\\d+: Lorem`),
      `${name} on one line with its row`
    )
})

t.test('a PDF stops at its row cap with export.too_many_rows and closes the output', async (t) => {
  const out = createWriteStream(join(dir, 'capped.pdf'))
  await t.rejects(render('pdf', input({ maxRows: 2 }), out), { code: 422, data: { code: 'export.too_many_rows' } })
  t.ok(out.destroyed, 'the output is destroyed')
  const { result } = await renderTo('pdf', 'at-cap.pdf', { maxRows: 3 })
  t.same(result, { rows: 3 }, 'a PDF of exactly the cap is rendered')
})

t.test('a failing row source rejects the render and closes the output', async (t) => {
  async function* broken(): AsyncGenerator<ExportRecord> {
    yield records[0]
    throw new Error('cursor lost')
  }
  for (const format of ['csv', 'xlsx', 'pdf'] as const) {
    const out = createWriteStream(join(dir, `broken.${format}`))
    await t.rejects(render(format, input({ rows: broken() }), out), /cursor lost/, format)
    t.ok(out.destroyed, `${format}: the output is destroyed`)
  }
})

t.test('a slow output is never flooded: what waits in it stays near its high-water mark', async (t) => {
  for (const format of ['csv', 'xlsx', 'pdf'] as const) {
    let written = 0
    let maxBuffered = 0
    const out = new Writable({
      highWaterMark: 16 * 1024,
      write(chunk: Buffer, _enc, done) {
        written += chunk.length
        maxBuffered = Math.max(maxBuffered, this.writableLength)
        setImmediate(done)
      }
    })
    const result = await render(format, input({ rows: generated(3000, 600) }), out)
    t.same(result, { rows: 3000 }, format)
    t.ok(written > 4 * maxBuffered, `${format}: ${written} bytes written, at most ${maxBuffered} waiting in the output`)
    t.ok(maxBuffered < 256 * 1024, `${format}: the output never holds more than one chunk past its high-water mark`)
  }
})

const bigRows = 20_000
/** XLSX and PDF stream the same way at a quarter of the rows (still 190 PDF pages): the suite must fit a busy 2-core machine. */
const manyRows = 5_000
async function* generated(n: number, textSize: number): AsyncGenerator<ExportRecord> {
  const filler = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '
    .repeat(Math.ceil(textSize / 57))
    .slice(0, textSize)
  for (let i = 1; i <= n; i++) {
    yield {
      number: `INC-2026-${String(i).padStart(5, '0')}`,
      state: i % 3 ? 'reported' : 'closed',
      createdAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
      updatedAt: new Date(Date.UTC(2026, 0, 2) + i * 60_000).toISOString(),
      createdBy: { name: `User ${i % 50}` },
      payload: {
        title: `Incident ${i}, generated`,
        description: `${i}: ${filler}`,
        occurredAt: '2026-03-01T10:15:00Z',
        site: ['Leeds', 'Hull', 'York'][i % 3],
        category: 'near-miss',
        severity: 'low',
        injuredPeople: i % 4,
        lostTimeDays: (i % 10) / 2,
        bodyParts: ['hands'],
        regulatorNotified: i % 2 === 0,
        regulatorNotifiedOn: '2026-03-03'
      }
    }
  }
}

t.test('20,000 rows stream to CSV without the heap growing with the file', async (t) => {
  // About 3.5 KB of text per row, ~75 MB of CSV: holding it all would show in the heap that
  // survives each collection. The heap just before a collection is mostly garbage, and how much
  // of it V8 lets pile up is its own choice (Node 24's young generation let it reach 59 MB).
  const before = process.memoryUsage().heapUsed
  const profiler = new GCProfiler()
  profiler.start()
  const { file, result } = await renderTo('csv', 'big.csv', { rows: generated(bigRows, 3500) })
  const collections = profiler.stop()?.statistics ?? []
  t.same(result, { rows: bigRows })
  t.ok(collections.length > 0, `the heap was collected while writing (${collections.length} times)`)
  const retained =
    Math.max(0, ...collections.map((gc) => gc.afterGC.heapStatistics.usedHeapSize - before)) / 1024 / 1024
  t.ok(retained < 30, `at most ${retained.toFixed(1)} MB of the heap survived a collection while writing`)
  const raw = readFileSync(file, 'utf8')
  t.ok(raw.length > 70_000_000, 'the file holds all the text')
  t.equal(raw.split('\r\n').length - 1, bigRows + 1, 'a header and one line per row')
  t.ok(raw.includes(`\r\nINC-2026-20000,`), 'the last row is there')
})

t.test('5,000 rows stream to XLSX', async (t) => {
  const { file, result } = await renderTo('xlsx', 'big.xlsx', { rows: generated(manyRows, 200) })
  t.same(result, { rows: manyRows })
  const sheet = await openSheet(file)
  t.equal(sheet.rowCount, manyRows + 1)
  t.equal(sheet.getRow(manyRows + 1).getCell(1).value, 'INC-2026-05000')
})

t.test('5,000 rows stream to a paginated PDF with the header on every page', async (t) => {
  const { file, result } = await renderTo('pdf', 'big.pdf', { rows: generated(manyRows, 200) })
  t.same(result, { rows: manyRows })
  const pages = Number(/Pages:\s+(\d+)/.exec(execFileSync('pdfinfo', [file], { encoding: 'utf8' }))?.[1])
  t.ok(pages > 100, `${pages} pages`)
  const page2 = execFileSync('pdftotext', ['-layout', '-f', '2', '-l', '2', file, '-'], { encoding: 'utf8' })
  t.match(page2, /Number\s+State\s+Created/, 'the header row repeats')
  t.match(page2, 'Page 2')
  const last = execFileSync('pdftotext', ['-layout', '-f', String(pages), '-l', String(pages), file, '-'], {
    encoding: 'utf8'
  })
  t.match(last, 'INC-2026-05000')
  t.match(last, '5000 records')
  t.match(last, `Page ${pages} of ${pages}`)
})
