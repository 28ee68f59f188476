/**
 * The export renderers alone, without the service or the database: `--rows` records shaped as
 * `bench/seed.ts` seeds them, through `render()` into a file, for each format. It tells a
 * renderer's cost per row apart from the job's reading and chunking (`npm run bench:exports`).
 *
 *   node --import tsx bench/exports-render.ts --rows 100000 --formats csv,xlsx [--repeats N]
 *   node --cpu-prof --cpu-prof-dir DIR --import tsx bench/exports-render.ts --rows 30000 --formats xlsx
 *
 * A PDF's line adds its page count and pages/s.
 */
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../core/config.ts'
import { exportColumns, type ExportRecord } from '../core/modules/derive/columns.ts'
import { loadModules } from '../core/modules/registry.ts'
import { render } from '../plugins/exports/exports.render.ts'
import type { ExportFormat } from '../plugins/exports/exports.shared.ts'

const { values: opt } = parseArgs({
  options: { rows: { type: 'string' }, formats: { type: 'string' }, repeats: { type: 'string' } }
})
const rows = Number(opt.rows ?? 100_000)
const repeats = Number(opt.repeats ?? 1)
const formats = (opt.formats ?? 'csv,xlsx').split(',') as ExportFormat[]

const titles = ['forklift clipped racking', 'slip on wet floor', 'chemical drum leak', 'door left unlocked']
const sites = ['Leeds DC', 'Bristol Plant', 'Glasgow Yard', 'Dublin Office', 'Rotterdam Hub']
const categories = ['injury', 'near-miss', 'property-damage', 'environmental', 'security', 'quality']
const severities = ['low', 'medium', 'high', 'critical']
const sentence = 'Reported during the shift by the area supervisor; the area was made safe and the team briefed. '
const pad2 = (n: number) => String(n).padStart(2, '0')

/** The records as the export job encodes them (as records.find gives them). */
async function* records(n: number): AsyncGenerator<ExportRecord> {
  const actor = { name: 'Bench Key' }
  for (let g = 1; g <= n; g++) {
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
    yield {
      number: `INC-2026-${String(g).padStart(6, '0')}`,
      state: 'reported',
      createdAt: ts,
      updatedAt: ts,
      createdBy: actor,
      updatedBy: actor,
      externalRef: null,
      payload
    }
  }
}

const module = (await loadModules(loadConfig().modules)).get('incident')!
const columns = exportColumns(module, { hidden: new Set() })
const dir = mkdtempSync(join(tmpdir(), 'bench-exports-render-'))
try {
  for (const format of formats) {
    for (let rep = 0; rep < repeats; rep++) {
      const file = join(dir, `out.${format}`)
      const cpu0 = process.cpuUsage()
      const t0 = performance.now()
      const result = await render(
        format,
        {
          title: 'Incident export',
          tenantName: 'Bench',
          moduleTitle: module.definition.title,
          filters: [],
          generatedAt: new Date(),
          columns,
          rows: records(rows)
        },
        createWriteStream(file)
      )
      const ms = performance.now() - t0
      const cpu = process.cpuUsage(cpu0)
      // A PDF's pages: pdfkit writes one `/Type /Page` object per page (and one `/Type /Pages`).
      const pages = format === 'pdf' ? readFileSync(file, 'latin1').match(/\/Type \/Page\b(?!s)/g)?.length : undefined
      process.stdout.write(
        `${format} ${result.rows} rows in ${ms.toFixed(0)} ms: ${Math.round((result.rows * 1000) / ms)} rows/s, ` +
          `CPU ${((cpu.user + cpu.system) / result.rows).toFixed(1)} µs/row, ${(statSync(file).size / 1e6).toFixed(1)} MB, ` +
          `maxRSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB` +
          (pages ? `, ${pages} pages: ${((pages * 1000) / ms).toFixed(1)} pages/s` : '') +
          '\n'
      )
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
