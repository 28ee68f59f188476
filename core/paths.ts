import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Absolute path of the project root, whatever the current directory is: the nearest folder
 * above this file with a package.json. From the sources that is `core/..`; from the compiled
 * build (`dist/core/paths.js`, see tsconfig.build.json) it is `dist/..`, so the build reads
 * the project's package.json, config/ and tenant-modules/ as the sources do.
 */
export const projectRoot = findRoot(dirname(fileURLToPath(import.meta.url)))

function findRoot(from: string): string {
  for (let dir = resolve(from, '..'); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir
    if (dirname(dir) === dir) return resolve(from, '..')
  }
}
