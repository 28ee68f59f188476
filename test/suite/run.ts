/**
 * `npm test`: tap over every test file, and nothing left running afterwards. Without
 * DATABASE_URL the files share one embedded PostgreSQL (test/suite/cluster.ts): it is
 * started here, before tap, so no two files race to start it, and stopped here when tap
 * ends, whether the tests passed, failed or were interrupted.
 *
 * With no arguments the files of each area (test/<area>/) run in one process, one
 * subtest per file (test/suite/grouped.ts), except a file that says on a line of its own
 * `// tap: own process` and why. Arguments go to tap as they are, one process per file
 * as `npx tap` runs them (`npm test -- test/records`).
 *
 * Every server of the run writes its whole log to test/.logs/<pid>.ndjson, and the tests
 * record every secret they create; after tap, a secret found in a log fails the run
 * (test/suite/log-check.ts).
 */
import { spawn } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { constants } from 'node:os'
import { dirname, join } from 'node:path'
import { startEmbedded, stopEmbedded } from '../../core/db/embedded.ts'
import { projectRoot } from '../../core/paths.ts'
import { testCluster } from './cluster.ts'
import { checkLogs, prepareLogs } from './log-check.ts'

const groupsDir = join(projectRoot, 'test', '.groups')

/** Test files to hand tap: one generated file per area with two or more files that can share a process, and the rest as they are. */
function suiteFiles(): string[] {
  const testDir = join(projectRoot, 'test')
  const areas = new Map<string, string[]>()
  const own: string[] = []
  for (const entry of readdirSync(testDir, { recursive: true, encoding: 'utf8' }).sort()) {
    if (!entry.endsWith('.test.ts') || entry.startsWith('.')) continue
    const file = join('test', entry)
    if (/^\/\/ tap: own process/m.test(readFileSync(join(projectRoot, file), 'utf8'))) own.push(file)
    else areas.set(dirname(entry), [...(areas.get(dirname(entry)) ?? []), file])
  }
  rmSync(groupsDir, { recursive: true, force: true })
  mkdirSync(groupsDir, { recursive: true })
  const files: string[] = []
  // Largest areas first, so the two jobs finish close together.
  for (const [area, members] of [...areas].sort((a, b) => b[1].length - a[1].length)) {
    if (members.length === 1) {
      files.push(members[0])
      continue
    }
    const group = join('test', '.groups', `${area.replaceAll('/', '-')}.test.ts`)
    writeFileSync(
      join(projectRoot, group),
      `import { runFiles } from '../suite/grouped.ts'\n\nawait runFiles(${JSON.stringify(members, null, 2)})\n`
    )
    files.push(group)
  }
  return [...files, ...own]
}

const embedded = !process.env.DATABASE_URL
if (embedded) await startEmbedded({ ...testCluster, database: 'postgres' })

const tap = join(dirname(createRequire(import.meta.url).resolve('tap/package.json')), 'dist/esm/run.mjs')
const args = process.argv.slice(2)
// Every server's log goes to test/.logs, and every secret the tests create to its secrets.txt: checked below.
const logEnv = prepareLogs()
const child = spawn(process.execPath, [tap, ...(args.length ? args : suiteFiles())], {
  stdio: 'inherit',
  cwd: projectRoot,
  env: { ...process.env, ...logEnv }
})
// An interrupted run (Ctrl-C reaches tap too, being in the same process group) still stops the cluster below.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => child.kill(signal))
// Killed by a signal: the shell's convention, 128 + its number.
const code = await new Promise<number>((resolve) =>
  child.on('exit', (c, s) => resolve(c ?? 128 + (s ? (constants.signals[s] ?? 1) : 1)))
)

if (
  embedded &&
  (await stopEmbedded(testCluster.dataDir).catch(
    (err) => (console.error(`could not stop the embedded test PostgreSQL: ${err.message}`), false)
  ))
) {
  console.log('# stopped the embedded test PostgreSQL')
}
if (!args.length) rmSync(groupsDir, { recursive: true, force: true })
process.exit(logsClean() ? code : code || 1)

/**
 * No secret the run created (nor anything shaped like one) is in any server's log, and
 * the logs are the run's: a whole run writes at least minRequestLines request lines.
 */
function logsClean(): boolean {
  const minRequestLines = args.length ? 0 : 2000
  const r = checkLogs()
  const summary = `${r.files} log files, ${Math.round(r.bytes / 1024 / 1024)} MiB, ${r.requestLines} request lines, ${r.secrets} secrets recorded`
  let clean = true
  if (r.findings.length) {
    clean = false
    console.error(
      `# log check FAILED: secrets in the logs (${summary}):\n${r.findings
        .slice(0, 50)
        .map((f) => `#   ${f}`)
        .join('\n')}`
    )
  }
  if (r.requestLines < minRequestLines) {
    clean = false
    console.error(
      `# log check FAILED: ${r.requestLines} request lines in test/.logs, fewer than the ${minRequestLines} a whole run writes: the logs were not captured`
    )
  }
  if (r.rotated.length)
    console.error(
      `# log check: ${r.rotated.join(', ')} reached the cap; only the last part of those processes' logs was checked`
    )
  if (clean) console.log(`# log check: no secret in the logs (${summary})`)
  return clean
}
