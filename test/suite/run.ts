/**
 * `npm test`: tap over every test file, and nothing left running afterwards. Without
 * DATABASE_URL the files share one embedded PostgreSQL (test/suite/cluster.ts): it is
 * started here, before tap, so no two files race to start it, and stopped here when tap
 * ends, whether the tests passed, failed or were interrupted. Arguments go to tap
 * (`npm test -- test/records`).
 */
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { constants } from 'node:os'
import { dirname, join } from 'node:path'
import { startEmbedded, stopEmbedded } from '../../core/db/embedded.ts'
import { testCluster } from './cluster.ts'

const embedded = !process.env.DATABASE_URL
if (embedded) await startEmbedded({ ...testCluster, database: 'postgres' })

const tap = join(dirname(createRequire(import.meta.url).resolve('tap/package.json')), 'dist/esm/run.mjs')
const child = spawn(process.execPath, [tap, ...process.argv.slice(2)], { stdio: 'inherit' })
// An interrupted run (Ctrl-C reaches tap too, being in the same process group) still stops the cluster below.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => child.kill(signal))
// Killed by a signal: the shell's convention, 128 + its number.
const code = await new Promise<number>((resolve) => child.on('exit', (c, s) => resolve(c ?? 128 + (s ? (constants.signals[s] ?? 1) : 1))))

if (embedded && (await stopEmbedded(testCluster.dataDir).catch((err) => (console.error(`could not stop the embedded test PostgreSQL: ${err.message}`), false)))) {
  console.log('# stopped the embedded test PostgreSQL')
}
process.exit(code)
