import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Absolute path of the project root, whatever the current directory is. */
export const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..')
