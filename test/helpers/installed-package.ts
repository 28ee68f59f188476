import { randomUUID } from 'node:crypto'
import { cpSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { projectRoot } from '../../core/paths.ts'

/**
 * Installs the module package in `source` (a folder with package.json and its entry) into the checkout's
 * node_modules as `npm install` of its tarball leaves it: the files its manifest lists, under its name. The name
 * gets a suffix of its own per call, so test files running at the same time never share a folder; pass `name` to
 * the server's `modules.packages` as an operator lists a package they installed. `remove` takes it out again.
 */
export function installModulePackage(source: string): { name: string; remove(): void } {
  const manifest = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8')) as {
    name: string
    files?: string[]
  }
  const name = `${manifest.name}-${randomUUID().slice(0, 8)}`
  const target = join(projectRoot, 'node_modules', ...name.split('/'))
  mkdirSync(target, { recursive: true })
  for (const file of manifest.files ?? readdirSync(source)) cpSync(join(source, file), join(target, file))
  writeFileSync(join(target, 'package.json'), JSON.stringify({ ...manifest, name }, null, 2))
  return {
    name,
    remove() {
      rmSync(target, { recursive: true, force: true })
      // The scope's folder too, once no other run's package is in it (rmdir refuses a folder that is not empty).
      if (name.startsWith('@'))
        try {
          rmdirSync(dirname(target))
        } catch {
          /* another run's package is still there, or that run removed the folder first */
        }
    }
  }
}
