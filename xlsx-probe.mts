import { createWriteStream } from 'node:fs'
import { render } from './core/exports/render.ts'
import { loadModules } from './core/modules/registry.ts'
import { loadConfig } from './core/config.ts'
import { exportColumns } from './core/modules/derive/columns.ts'
const fmt = process.argv[2] as any
const mods = await loadModules(loadConfig({}).modules)
const module = mods.get('incident')!
const columns = exportColumns(module, { hidden: new Set() })
let peak = 0
const t = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 20)
const m0 = process.memoryUsage().rss
async function* rows() {
  for (let i = 0; i < 100000; i++) {
    if (i % 200 === 0) await new Promise((r) => setImmediate(r))
    yield { number: `INC-${i}`, state: 'open', createdAt: new Date().toISOString(), updatedAt: new Date().toISOString(), createdBy: { name: 'Alice' }, payload: { title: `Spill number ${i} near tank`, description: 'Some description text '.repeat(5), occurredAt: new Date().toISOString(), severity: 'high', location: 'Site A' } }
  }
}
const t0 = Date.now()
await render(fmt, { title: 'x', tenantName: 't', moduleTitle: 'Incidents', filters: [], generatedAt: new Date(), columns, rows: rows() }, createWriteStream('/tmp/probe.' + fmt))
clearInterval(t)
console.log(fmt, Date.now() - t0, 'ms', 'start', (m0 / 1048576).toFixed(0), 'peak', (peak / 1048576).toFixed(0), 'maxRSS', (process.resourceUsage().maxRSS / 1024).toFixed(0))
