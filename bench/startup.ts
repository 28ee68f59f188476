/**
 * `npm run bench:startup`: how long the service takes to start (spawn to its `Listening on`
 * line, wall clock and the process's own CPU) and how much memory it holds once idle (VmRSS
 * 5 s after that line), from the compiled build and from the sources through tsx, each on a
 * database of its own (benchDatabase: DATABASE_URL's server, else the bench cluster). The
 * first start of each variant migrates its fresh database and creates the demo tenant; it is
 * reported apart and left out of the medians, which are of restarts (what an operator waits for).
 *
 *   npm run bench:startup -- [--runs N] [--only build,sources] [--variant 'label|dir|node|arg,arg']
 *
 * `--variant` adds a start command of another checkout (e.g. an older commit, run by another
 * node): `'before|/tmp/before|/usr/bin/node|--max-old-space-size=1024,--import,tsx,bin/server.ts'`.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { projectRoot } from '../core/paths.ts'
import { benchDatabase, median } from './common.ts'

interface Variant {
  label: string
  cwd: string
  node: string
  args: string[]
  env?: Record<string, string>
}
interface Sample {
  wallMs: number
  cpuMs: number
  rssMiB: number
}

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    only: { type: 'string' },
    variant: { type: 'string', multiple: true, default: [] }
  }
})
const runs = Number(values.runs)
const ticks = 100 // USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s on Linux
const idleMs = 5000

const here: Variant[] = [
  {
    label: 'build',
    cwd: projectRoot,
    node: process.execPath,
    args: ['--max-old-space-size=1024', 'bin/start.js'],
    env: { RECORDS_RUNTIME: 'build' }
  },
  {
    label: 'sources (tsx)',
    cwd: projectRoot,
    node: process.execPath,
    args: ['--max-old-space-size=1024', 'bin/start.js'],
    env: { RECORDS_RUNTIME: 'sources' }
  }
]
const only = values.only?.split(',')
const variants = [
  ...here.filter((v) => !only || only.some((o) => v.label.startsWith(o))),
  ...values.variant.map((spec): Variant => {
    const [label, cwd, node, args] = spec.split('|')
    return { label, cwd, node, args: args.split(',') }
  })
]

function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticks // utime, stime
}
const rssMiBOf = (pid: number): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024

/** One start: spawn, wait for `Listening on`, idle, measure, SIGTERM, wait for the exit. */
async function start(v: Variant, databaseUrl: string): Promise<Sample> {
  const t0 = performance.now()
  const child = spawn(v.node, v.args, {
    cwd: v.cwd,
    env: { ...process.env, ...v.env, DATABASE_URL: databaseUrl, PORT: '0', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stderr = ''
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const { wallMs, cpuMs } = await new Promise<{ wallMs: number; cpuMs: number }>((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString()
      if (/Listening on /.test(out)) resolve({ wallMs: performance.now() - t0, cpuMs: cpuMsOf(child.pid!) })
    })
    child.once('exit', (code) =>
      reject(new Error(`${v.label} exited (${code}) before listening: ${stderr.slice(-2000)}`))
    )
  })
  await new Promise((r) => setTimeout(r, idleMs))
  const rssMiB = rssMiBOf(child.pid!)
  child.kill('SIGTERM')
  await exited
  return { wallMs, cpuMs, rssMiB }
}

const row = (label: string, s: Sample) =>
  `${label.padEnd(34)} ${s.wallMs.toFixed(0).padStart(8)} ${s.cpuMs.toFixed(0).padStart(8)} ${s.rssMiB.toFixed(0).padStart(8)}`
const lines: string[] = [
  `${'variant'.padEnd(34)} ${'start ms'.padStart(8)} ${'CPU ms'.padStart(8)} ${'RSS MiB'.padStart(8)}`
]
for (const v of variants) {
  const db = await benchDatabase()
  try {
    const first = await start(v, db.url)
    const samples: Sample[] = []
    for (let i = 0; i < runs; i++) samples.push(await start(v, db.url))
    const vers = await nodeVersion(v.node)
    process.stdout.write(
      `${v.label} (${vers}): ${samples.map((s) => `${s.wallMs.toFixed(0)} ms/${s.cpuMs.toFixed(0)} ms CPU/${s.rssMiB.toFixed(0)} MiB`).join(', ')}\n`
    )
    lines.push(row(`${v.label}, first start`, first))
    lines.push(
      row(`${v.label}, median of ${runs}`, {
        wallMs: median(samples.map((s) => s.wallMs)),
        cpuMs: median(samples.map((s) => s.cpuMs)),
        rssMiB: median(samples.map((s) => s.rssMiB))
      })
    )
  } finally {
    await db.close()
  }
}
process.stdout.write(`\n${lines.join('\n')}\n`)

async function nodeVersion(node: string): Promise<string> {
  const child = spawn(node, ['-v'], { stdio: ['ignore', 'pipe', 'ignore'] })
  let out = ''
  child.stdout.on('data', (c: Buffer) => (out += c.toString()))
  await new Promise((r) => child.once('exit', r))
  return `node ${out.trim()}`
}
