// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import t from '../helpers/tap.ts'
import { loadConfig } from '../../core/config.ts'
import { referenceOrder } from '../../core/modules/derive/sample.ts'
import { runConformance } from '../../core/modules/conformance/kit.ts'
import { platformTarget } from '../../core/modules/conformance/target.ts'
import { loadModules } from '../../core/modules/registry.ts'
import { startTestServer } from '../helpers/server.ts'

/**
 * The module conformance kit (core/modules/conformance/, the one `records module check` runs) for every
 * module this repository ships, on one tenant that has them all: records, every transition with its guards,
 * roles and four eyes, row and field rules, bulk, exports in three formats, OpenAPI and GraphQL, over HTTP.
 * Each check is an assertion named by its sentence; a failing one carries the kit's detail.
 */
t.setTimeout(300_000)
const shipped = (await loadModules(loadConfig().modules)).all().map((m) => m.definition)
const server = await startTestServer({
  jobs: { enabled: true, processEverySeconds: 1 },
  tenants: { conformance: { name: 'Conformance', modules: shipped.map((m) => m.key) } }
})
// Agenda leaves a referenced timer behind job runs (see test/idempotency/purge-job.test.ts): end the process once done.
// One teardown: the server closes before the timer ends the process (a second teardown's timer fired first under load).
t.teardown(async () => {
  await server.close()
  setTimeout(() => process.exit(), 200).unref()
})
const target = await platformTarget(server.platform, server.url, 'conformance')

t.ok(shipped.length >= 3, `the repository ships ${shipped.map((m) => m.key).join(', ')}`)
for (const m of referenceOrder(shipped)) {
  t.test(`module ${m.key} passes the conformance kit`, async (t) => {
    const results = await runConformance(target, m.key)
    t.ok(results.length > 10, `${results.length} checks ran`)
    for (const r of results) t.ok(r.ok, `${r.name}: ${r.detail}`)
  })
}
