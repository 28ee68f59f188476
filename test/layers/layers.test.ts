import { execFile } from 'node:child_process'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import t from '../helpers/tap.ts'

/**
 * The layering of the plugin contract (.dependency-cruiser.cjs): core imports no plugin,
 * plugins meet only through `*.shared.ts`, module packages use only the module SDK, migrations
 * import no code of the service. The
 * project must pass; a fixture that breaks each rule once shows that the rules bite.
 */
t.setTimeout(120_000)
const root = resolve(import.meta.dirname, '..', '..')
const depcruise = join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs')

async function cruise(cwd: string, paths: string[]) {
  const run = promisify(execFile)(
    process.execPath,
    [depcruise, ...paths, '--config', join(root, '.dependency-cruiser.cjs'), '--output-type', 'json'],
    { cwd, maxBuffer: 64 * 1024 * 1024 }
  )
  // depcruise exits 1 when it finds violations; its report is on stdout either way.
  const { stdout } = await run.catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }))
  const report = JSON.parse(stdout) as {
    summary: { violations: Array<{ rule: { name: string }; from: string; to: string }>; totalCruised: number }
  }
  return {
    cruised: report.summary.totalCruised,
    violations: report.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort()
  }
}

t.test(
  'the project keeps its layers: core names no plugin, plugins meet through *.shared.ts, module packages use only the module SDK',
  async (t) => {
    const { cruised, violations } = await cruise(root, ['core', 'plugins', 'tenant-modules', 'bin'])
    t.same(violations, [], 'no violations')
    t.ok(cruised > 100, `${cruised} modules cruised`)
  }
)

t.test('each rule refuses the import it forbids and lets the allowed one pass', async (t) => {
  const { violations } = await cruise(join(root, 'test', 'layers', 'fixture'), ['core', 'plugins', 'tenant-modules'])
  t.same(violations, [
    'core-imports-no-plugin: core/app.ts -> plugins/alpha/alpha.ts',
    'migrations-stand-alone: core/db/migrations/001-core.ts -> core/app.ts',
    'migrations-stand-alone: plugins/beta/migrations/001-tables.ts -> plugins/beta/beta.shared.ts',
    'modules-import-only-the-module-api: tenant-modules/gamma/module.ts -> core/modules/define.ts',
    'modules-import-only-the-module-api: tenant-modules/gamma/module.ts -> plugins/beta/beta.shared.ts',
    'plugins-meet-through-shared: plugins/alpha/alpha.ts -> plugins/beta/beta.class.ts'
  ])
})
