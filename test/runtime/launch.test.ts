// tap: own process: it runs `npm start` (npm, then the service's node) and signals npm as a supervisor would.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from '../helpers/tap.ts'
import { projectRoot } from '../../core/paths.ts'
import { freshDatabase } from '../helpers/database.ts'
import { chooseRuntime } from '../../bin/runtime.js'

// `npm start` runs the build when it is current (bin/runtime.js): CI's `npm ci` made it
// (`prepare`); elsewhere this builds it, so what is tested is what an operator runs.
if (chooseRuntime().from !== 'build') {
  const built = spawnSync(process.execPath, [join(projectRoot, 'scripts/build.js')], { cwd: projectRoot, encoding: 'utf8' })
  if (built.status !== 0) throw new Error(`npm run build failed: ${built.stderr}`)
}

// A module package whose TypeScript Node does not strip (an enum): the build loads it through tsx.
const fixturesDir = join(projectRoot, 'test', 'fixtures')
mkdirSync(fixturesDir, { recursive: true })
const modulesDir = mkdtempSync(join(fixturesDir, 'launch-modules-'))
t.teardown(() => rmSync(modulesDir, { recursive: true, force: true }))
mkdirSync(join(modulesDir, 'with-enum'))
writeFileSync(join(modulesDir, 'with-enum', 'package.json'), JSON.stringify({ name: '@fixture/with-enum', version: '1.0.0', type: 'module', 'records-module': { entry: 'module.ts' } }))
writeFileSync(
  join(modulesDir, 'with-enum', 'module.ts'),
  `enum Level { Low = 'low', High = 'high' }
export default {
  key: 'launch-fixture', version: '1.0.0', title: 'Launch fixture', numberPattern: 'LF-{seq:4}',
  fields: [{ key: 'title', type: 'text', required: true }, { key: 'level', type: 'singleChoice', options: [Level.Low, Level.High] }],
  workflow: { initial: 'open', states: [{ key: 'open' }], transitions: [] },
  permissions: { admin: ['read', 'create'] }
}
`
)

const projectNode = realpathSync(join(projectRoot, 'node_modules/.bin/node'))

interface Started {
  npm: ChildProcess
  url: string
  out: () => string
  exited: Promise<void>
}

/** `npm start` on a fresh database and a free port, until its `Listening on` line. */
async function npmStart(t: Test, options: { detached?: boolean } = {}): Promise<Started> {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const npm = spawn('npm', ['start'], {
    cwd: projectRoot,
    env: {
      ...process.env,
      DATABASE_URL: db.url,
      PORT: '0',
      NODE_CONFIG: JSON.stringify({ modules: { directories: ['tenant-modules', modulesDir] } }),
      // npm's own PATH lookup must not find this test's node first: npm puts node_modules/.bin there itself.
      PATH: process.env.PATH!.split(':').filter((dir) => !dir.endsWith('node_modules/.bin')).join(':')
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A process group of its own, as a terminal gives the command it runs in the foreground.
    detached: options.detached
  })
  let out = ''
  let err = ''
  npm.stdout!.on('data', (c: Buffer) => (out += c))
  npm.stderr!.on('data', (c: Buffer) => (err += c))
  const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()))
  t.teardown(() => void npm.kill('SIGKILL'))
  const url = await new Promise<string>((resolve, reject) => {
    const seen = () => {
      const m = /^Listening on (\S+)/m.exec(out)
      if (m) resolve(m[1])
    }
    npm.stdout!.on('data', seen)
    npm.once('exit', (code) => reject(new Error(`npm start exited (${code}) before listening:\n${err.slice(-3000)}`)))
  })
  return { npm, url, out: () => out + err, exited }
}

/** The processes whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return Number(readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ')[1]) === pid
      } catch {
        return false
      }
    })
    .map(Number)
}

/** Gone, or a zombie waiting for whoever inherited it to reap it. */
const gone = (pid: number) => !existsSync(`/proc/${pid}`) || readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].startsWith('Z')

const portClosed = (url: string) =>
  new Promise<boolean>((resolve) => {
    const { hostname, port } = new URL(url)
    const socket = connect(Number(port), hostname)
    socket.once('connect', () => (socket.destroy(), resolve(false)))
    socket.once('error', () => resolve(true))
  })

async function until(what: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 200))) if (await what()) return true
  return what()
}

/** npm's only child is the service's node itself (the script execs it: no shell between to lose a signal), on the pinned Node, from the build. */
async function serviceOf(t: Test, s: Started): Promise<number> {
  const children = childrenOf(s.npm.pid!)
  t.equal(children.length, 1, 'npm has one child')
  const node = children[0]
  t.equal(readlinkSync(`/proc/${node}/exe`), projectNode, "the child is the project's Node (node_modules/.bin/node), not a shell")
  t.strictSame(readFileSync(`/proc/${node}/cmdline`, 'utf8').split('\0').slice(1, 3), ['--max-old-space-size=1024', 'bin/start.js'], 'running bin/start.js')
  // Logged once the service listens (bin/start.js).
  t.ok(await until(() => /"msg":"running from the build \(dist\/\)"/.test(s.out()), 10_000), 'from the build')
  return node
}

t.test('SIGTERM to the process `npm start` runs stops the service: no node left serving, the port closed, npm exits after it', async (t) => {
  const s = await npmStart(t)
  const res = await fetch(`${s.url}/api/v1/modules`)
  t.equal(res.status, 401, 'the service answers')
  const node = await serviceOf(t, s)
  s.npm.kill('SIGTERM')
  await s.exited
  t.ok(gone(node), 'node had stopped when npm exited')
  t.ok(await portClosed(s.url), 'nothing listens on the port')
  t.match(s.out(), /received SIGTERM/, 'npm forwarded the signal to the service, which shut down')
})

t.test('SIGKILL to npm (nothing forwarded): the service notices its parent is gone and stops itself', async (t) => {
  const s = await npmStart(t)
  const node = await serviceOf(t, s)
  s.npm.kill('SIGKILL')
  await s.exited
  t.ok(await until(() => gone(node), 20_000), 'node stopped')
  t.ok(await portClosed(s.url), 'nothing listens on the port')
})

t.test('Ctrl-C in a terminal (SIGINT to npm and node, which npm forwards again) shuts the service down once, cleanly', async (t) => {
  const s = await npmStart(t, { detached: true })
  const node = await serviceOf(t, s)
  // What a terminal does on Ctrl-C: the signal to every process of the foreground group.
  process.kill(-s.npm.pid!, 'SIGINT')
  await s.exited
  t.ok(await until(() => gone(node), 20_000), 'node stopped')
  t.ok(await portClosed(s.url), 'nothing listens on the port')
  t.match(s.out(), /received SIGINT/, 'the service shut down on the signal')
  t.notMatch(s.out(), /SIGINT again|exiting now/, "npm's forwarded copy of the same Ctrl-C is not taken for a second, impatient one")
})
