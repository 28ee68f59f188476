/**
 * The CSV encoder alone (`csvFormat.encode`, what the export job runs on each page): `--rows` records shaped as
 * bench/seed.ts seeds them, built once, encoded in pages of 1,000 `--repeats` times; prints CPU per row and a
 * hash of the text so two checkouts can be compared byte for byte.
 *
 *   node --import tsx bench/exports-csv-micro.ts --rows 200000 --repeats 5
 */
import { createHash } from 'node:crypto'
import { parseArgs } from 'node:util'
import { loadConfig } from '../core/config.ts'
import { exportColumns, type ExportRecord } from '../core/modules/derive/columns.ts'
import { loadModules } from '../core/modules/registry.ts'
import { csvFormat } from '../plugins/exports/exports.csv.ts'

const { values: opt } = parseArgs({ options: { rows: { type: 'string' }, repeats: { type: 'string' } } })
const rows = Number(opt.rows ?? 200_000)
const repeats = Number(opt.repeats ?? 5)

const titles = ['forklift clipped racking', 'slip on wet floor', 'chemical drum leak', 'door left unlocked']
const sites = ['Leeds DC', 'Bristol Plant', 'Glasgow Yard', 'Dublin Office', 'Rotterdam Hub']
const categories = ['injury', 'near-miss', 'property-damage', 'environmental', 'security', 'quality']
const severities = ['low', 'medium', 'high', 'critical']
const sentence = 'Reported during the shift by the area supervisor; the area was made safe and the team briefed. '
const pad2 = (n: number) => String(n).padStart(2, '0')

const records: ExportRecord[] = []
for (let g = 1; g <= rows; g++) {
  const ts = new Date(Date.UTC(2026, 0, 1) + g * 1000).toISOString()
  const payload: Record<string, unknown> = {
    title: `Seeded incident ${g}: ${titles[g % 4]}`,
    description: sentence.repeat(1 + (g % 4)),
    occurredAt: `2026-${pad2(1 + (g % 12))}-${pad2(1 + (g % 28))}T${pad2(g % 24)}:${pad2(g % 60)}:00Z`,
    site: sites[g % 5],
    category: categories[g % 6],
    severity: severities[g % 4]
  }
  if (g % 6 === 0) Object.assign(payload, { injuredPeople: 1 + (g % 3), bodyParts: ['hands'] })
  if (g % 7 === 0) Object.assign(payload, { regulatorNotified: g % 2 === 0, regulatorNotifiedOn: '2026-02-03' })
  if (g % 11 === 0) Object.assign(payload, { rootCause: '=cmd "quoted", and\r\nmore', lostTimeDays: 1.5 })
  if (g % 13 === 0) Object.assign(payload, { location: { latitude: 51.5, longitude: -0.12, label: 'Yard' } })
  records.push({
    number: `INC-2026-${String(g).padStart(6, '0')}`,
    state: 'reported',
    createdAt: ts,
    updatedAt: ts,
    createdBy: { name: 'Bench Key' },
    updatedBy: { name: 'Bench Key' },
    externalRef: g % 5 === 0 ? `EXT-${g}` : null,
    payload
  })
}

const module = (await loadModules(loadConfig().modules)).get('incident')!
const columns = exportColumns(module, { hidden: new Set() })
const page = 1000
for (let rep = 0; rep < repeats; rep++) {
  const hash = createHash('sha256')
  const cpu0 = process.cpuUsage()
  for (let i = 0; i < rows; i += page) hash.update(await csvFormat.encode(columns, records.slice(i, i + page), i))
  const cpu = process.cpuUsage(cpu0)
  process.stdout.write(
    `csv encode ${rows} rows: CPU ${((cpu.user + cpu.system) / rows).toFixed(2)} µs/row, sha256 ${hash.digest('hex').slice(0, 16)}\n`
  )
}
