/**
 * `npm run bench:openapi`: how long building an OpenAPI document takes (generic and for a
 * tenant with every bundled module) and how big it is. The service builds a document once
 * per tenant and module versions and then serves it from its cache; this is that first build.
 * A figure, never a failure.
 */
import { loadConfig } from '../core/config.ts'
import { loadModules } from '../core/modules/registry.ts'
import { buildDocument } from '../core/openapi/document.ts'
import { descriptionsOf } from '../core/plugin.ts'
import { plugins } from '../plugins/index.ts'
import { fmt, median, table } from './common.ts'

const describes = descriptionsOf(plugins)

const runs = 50
const config = loadConfig({})
const modules = (await loadModules(config.modules)).all()
const rows: string[][] = []
for (const [label, tenant] of [
  ['generic', undefined],
  [`tenant, ${modules.length} modules`, { id: 'bench', name: 'Bench', modules }]
] as const) {
  const ms: number[] = []
  let bytes = 0
  for (let i = 0; i < runs; i++) {
    const started = performance.now()
    const doc = buildDocument({
      config,
      describes,
      publicUrl: 'http://127.0.0.1:3030',
      errorsUrl: 'http://127.0.0.1:3030/errors',
      tenant
    })
    ms.push(performance.now() - started)
    bytes = JSON.stringify(doc).length
  }
  rows.push([label, fmt(median(ms), 2), fmt(Math.min(...ms), 2), fmt(bytes / 1024, 1)])
}
console.log(table([['document', 'build ms (median)', 'build ms (min)', 'size KiB'], ...rows]))
console.log(`${runs} builds each; node ${process.version}`)
