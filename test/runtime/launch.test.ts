// tap: own process: it runs `npm start` (npm, then the service's node) and signals npm as a supervisor would.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from '../helpers/tap.ts'
import { projectRoot } from '../../core/paths.ts'
import { freshDatabase } from '../helpers/database.ts'
import { chooseRuntime } from '../../bin/runtime.js'

// What `npm start` runs here: the build when current (CI's `npm ci` made it; `npm test` brings it
// up to date first), else the sources. test/runtime/build.test.ts is about the build itself.
const runtime = chooseRuntime()
const runtimeLine =
  runtime.from === 'build'
    ? /"msg":"running from the build \(dist\/\)"/
    : /"msg":"running from the TypeScript sources \(tsx\)"/

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
      // npm's own PATH lookup must not find this test's node first: npm puts node_modules/.bin there itself.
      PATH: process.env
        .PATH!.split(':')
        .filter((dir) => !dir.endsWith('node_modules/.bin'))
        .join(':')
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A process group of its own, as a terminal gives the command it runs in the foreground.
    detached: options.detached
  })
  let out = ''
  let err = ''
  npm.stdout.on('data', (c: Buffer) => (out += c.toString()))
  npm.stderr.on('data', (c: Buffer) => (err += c.toString()))
  const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()))
  t.teardown(() => void npm.kill('SIGKILL'))
  const url = await new Promise<string>((resolve, reject) => {
    const seen = () => {
      // A JSON line on stdout when it is not a terminal (core/main.ts, tellOperator).
      const m = /Listening on (http[^\s"]+)/.exec(out)
      if (m) resolve(m[1])
    }
    npm.stdout.on('data', seen)
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
const gone = (pid: number) =>
  !existsSync(`/proc/${pid}`) || readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].startsWith('Z')

const portClosed = (url: string) =>
  new Promise<boolean>((resolve) => {
    const { hostname, port } = new URL(url)
    const socket = connect(Number(port), hostname)
    socket.once('connect', () => (socket.destroy(), resolve(false)))
    socket.once('error', () => resolve(true))
  })

async function until(what: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 200)))
    if (await what()) return true
  return what()
}

/** npm's only child is the service's node itself (the script execs it: no shell between to lose a signal), on the pinned Node. */
async function serviceOf(t: Test, s: Started): Promise<number> {
  const children = childrenOf(s.npm.pid!)
  t.equal(children.length, 1, 'npm has one child')
  const node = children[0]
  t.equal(
    readlinkSync(`/proc/${node}/exe`),
    projectNode,
    "the child is the project's Node (node_modules/.bin/node), not a shell"
  )
  t.strictSame(
    readFileSync(`/proc/${node}/cmdline`, 'utf8').split('\0').slice(1, 4),
    ['--max-old-space-size=1024', '--max-semi-space-size=16', 'bin/start.js'],
    'running bin/start.js'
  )
  // Logged once the service listens (bin/start.js).
  t.ok(
    await until(() => runtimeLine.test(s.out()), 10_000),
    `from ${runtime.from === 'build' ? 'the build' : 'the sources'} (${runtime.why})`
  )
  return node
}

t.test(
  'SIGTERM to the process `npm start` runs stops the service: no node left serving, the port closed, npm exits after it',
  async (t) => {
    const s = await npmStart(t)
    const res = await fetch(`${s.url}/api/v1/modules`)
    t.equal(res.status, 401, 'the service answers')
    const node = await serviceOf(t, s)
    s.npm.kill('SIGTERM')
    await s.exited
    t.ok(gone(node), 'node had stopped when npm exited')
    t.ok(await portClosed(s.url), 'nothing listens on the port')
    t.match(s.out(), /received SIGTERM/, 'npm forwarded the signal to the service, which shut down')
  }
)

t.test(
  'SIGKILL to npm (nothing forwarded): the service sees its parent gone and stops itself as on SIGTERM',
  async (t) => {
    // bin/start.js follows npm with followParent(); shown here under a shell that stays its parent
    // (\`; true\` keeps sh from exec'ing), without a whole service start.
    const script = `import { followParent } from ${JSON.stringify(join(projectRoot, 'bin/runtime.js'))}
followParent()
process.on('SIGTERM', () => { console.log('SIGTERM'); process.exit(0) })
console.log('ready', process.pid)
setInterval(() => {}, 1000)`
    const parent = spawn('sh', ['-c', '"$0" --input-type=module -e "$1"; true', process.execPath, script], {
      stdio: ['ignore', 'pipe', 'inherit']
    })
    let out = ''
    parent.stdout.on('data', (c: Buffer) => (out += c.toString()))
    t.ok(await until(() => /^ready \d+/m.test(out), 20_000), 'the child runs')
    const child = Number(/^ready (\d+)/m.exec(out)![1])
    parent.kill('SIGKILL')
    t.ok(await until(() => gone(child), 10_000), 'the child stopped')
    t.match(out, /^SIGTERM$/m, 'through its SIGTERM handler (the service shuts down)')
  }
)

t.test(
  'Ctrl-C in a terminal (SIGINT to npm and node, which npm forwards again) shuts the service down once, cleanly',
  async (t) => {
    const s = await npmStart(t, { detached: true })
    const node = await serviceOf(t, s)
    // What a terminal does on Ctrl-C: the signal to every process of the foreground group.
    process.kill(-s.npm.pid!, 'SIGINT')
    await s.exited
    t.ok(await until(() => gone(node), 20_000), 'node stopped')
    t.ok(await portClosed(s.url), 'nothing listens on the port')
    t.match(s.out(), /received SIGINT/, 'the service shut down on the signal')
    t.notMatch(
      s.out(),
      /SIGINT again|exiting now/,
      "npm's forwarded copy of the same Ctrl-C is not taken for a second, impatient one"
    )
  }
)
