import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createPlatform, startServer } from '../app.ts'
import { loadConfig } from '../config.ts'
import { startEmbedded } from '../db/embedded.ts'
import { scratchDatabase as newDatabase } from '../db/scratch.ts'
import { runConformance, type CheckResult } from '../modules/conformance/kit.ts'
import { platformTarget } from '../modules/conformance/target.ts'
import type { ModuleDefinition } from '../modules/types.ts'
import { projectRoot } from '../paths.ts'
import type { Plugin } from '../plugin.ts'

const scratchTenant = 'module-check'

/** What the scratch run needs of the command line: the plugins, the configuration overrides, where to write. */
export interface ScratchIo {
  out(line: string): void
  plugins: readonly Plugin[]
  config?: Record<string, unknown>
}

/**
 * A database of its own on the server DATABASE_URL names (database.url), else on the embedded cluster the CLI
 * uses (its data folder taken from the platform's folder, not the current one); drop() removes it (after any session still closing has had a moment) and stops a cluster started here.
 */
async function scratchDatabase(base: ReturnType<typeof loadConfig>): Promise<{ url: string; drop(): Promise<void> }> {
  // The platform's own cluster, wherever the command runs from (`npm test` in a module package's folder).
  const embedded = base.database.url
    ? undefined
    : await startEmbedded({
        ...base.database.embedded,
        dataDir: resolve(projectRoot, base.database.embedded.dataDir),
        database: 'postgres'
      })
  const serverUrl = base.database.url ?? embedded!.url
  const db = await newDatabase(serverUrl, 'records_module_check')
  return {
    url: db.url,
    async drop() {
      try {
        await db.drop()
      } finally {
        if (embedded?.startedHere) await embedded.stop()
      }
    }
  }
}

/** `module` and the modules its record references name, transitively, among `loaded`. */
function withReferences(module: ModuleDefinition, loaded: readonly ModuleDefinition[]): string[] {
  const byKey = new Map(loaded.map((d) => [d.key, d]))
  const keys = new Set<string>()
  const visit = (d: ModuleDefinition | undefined) => {
    if (!d || keys.has(d.key)) return
    keys.add(d.key)
    const refs = (fields: ModuleDefinition['fields']): string[] =>
      fields.flatMap((f) => (f.type === 'recordRef' ? [f.module] : f.type === 'group' ? refs(f.fields) : []))
    for (const key of refs(d.fields)) visit(byKey.get(key))
  }
  visit(module)
  return [...keys]
}

/**
 * The conformance kit for `module` (from the staged package folder `packageDir`; `loaded`: what loaded with it): a
 * scratch database, the platform started on it with the package beside the configured modules, one tenant with the
 * module and those it refers to, then the kit over HTTP. Everything is removed after. Prints one line per check;
 * true when all held.
 */
export async function runScratchConformance(
  io: ScratchIo,
  packageDir: string,
  module: ModuleDefinition,
  loaded: readonly ModuleDefinition[],
  options: { maxTransitions?: number } = {}
): Promise<boolean> {
  const base = loadConfig(io.config)
  const db = await scratchDatabase(base)
  const files = mkdtempSync(join(tmpdir(), 'records-module-check-'))
  let results: CheckResult[]
  try {
    const config = loadConfig({
      ...io.config,
      host: '127.0.0.1',
      port: 0,
      publicUrl: null,
      logLevel: process.env.LOG_LEVEL ? undefined : 'silent',
      database: { url: db.url },
      jobs: { enabled: true, processEverySeconds: 1 },
      metrics: { enabled: false },
      limits: { requestsPerMinute: 1_000_000 },
      attachments: { local: { dir: files } },
      tenants: { [scratchTenant]: { name: 'Module check', modules: [] } }
    })
    // The package under check loads first and wins its key (registry.ts), the configured modules beside it.
    config.modules = { ...config.modules, packageDirs: [packageDir] } as typeof config.modules
    config.tenants[scratchTenant].modules = withReferences(module, loaded)
    const platform = await createPlatform(config, io.plugins, { limiter: false })
    const running = await startServer(platform, io.plugins).catch(async (err) => {
      await platform.db.close()
      throw err
    })
    try {
      const target = await platformTarget(platform, running.url, scratchTenant)
      results = await runConformance(target, module.key, { maxTransitions: options.maxTransitions })
    } finally {
      await running.close()
    }
  } finally {
    await db.drop()
    rmSync(files, { recursive: true, force: true })
  }
  return printChecks(io, results)
}

/** One line per check (`ok` or `FAIL`, the name, what was seen), then the count; true when all held. */
export function printChecks(io: Pick<ScratchIo, 'out'>, results: readonly CheckResult[]): boolean {
  for (const r of results) io.out(`  ${r.ok ? 'ok  ' : 'FAIL'} ${r.name}${r.detail ? `: ${r.detail}` : ''}`)
  const failed = results.filter((r) => !r.ok).length
  io.out(failed ? `${failed} of ${results.length} checks failed` : `all ${results.length} checks passed`)
  return failed === 0
}
