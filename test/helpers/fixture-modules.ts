import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { projectRoot } from '../../core/paths.ts'

/**
 * Module packages written for one test file into a folder of their own (removed by the
 * returned `remove`), as a module author publishes them: a package.json naming the entry
 * and the host versions, and a module.ts exporting the definition. Pass `directory` to
 * the server's `modules.directories` beside 'tenant-modules'.
 */
export function fixtureModules(definitions: Array<Record<string, unknown> & { key: string }>): {
  directory: string
  remove(): void
} {
  const directory = mkdtempSync(join(projectRoot, 'test', 'fixtures-modules-'))
  for (const d of definitions) {
    const dir = join(directory, d.key)
    mkdirSync(dir)
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({
        name: `@fixture/${d.key}`,
        version: '1.0.0',
        type: 'module',
        'records-module': { entry: 'module.ts', host: '>=0.1.0 <1.0.0' }
      })
    )
    writeFileSync(join(dir, 'module.ts'), `export default ${JSON.stringify(d, null, 2)}\n`)
  }
  return { directory, remove: () => rmSync(directory, { recursive: true, force: true }) }
}
