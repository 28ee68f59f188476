/**
 * Runs several test files in one process, one subtest each, one after the other: what
 * `npm test` does for the files of an area (test/suite/run.ts). Starting a process with
 * its imports, a database and a server costs about 2.5 s of CPU before the first
 * assertion, which on a busy 2-core machine was most of the suite's time. Each file keeps
 * its own server, its teardowns (run when its subtest ends, before the next file starts)
 * and its timeout (tap's per-file one, or what the file sets with `t.setTimeout`).
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import tap from 'tap'
import { projectRoot } from '../../core/paths.ts'
import { runningIn } from '../helpers/tap.ts'

/** `files`: paths from the project root. */
export async function runFiles(files: string[]) {
  const perFile = Number(process.env.TAP_TIMEOUT ?? 30) * 1000
  // The process may take as long as its files may together; tap stops it after that.
  tap.setTimeout(perFile * files.length)
  for (const file of files) {
    await tap.test(file, { timeout: perFile }, async (t) => {
      runningIn(t)
      await import(pathToFileURL(join(projectRoot, file)).href)
    })
  }
}
