// tap: own process: it may run the build (tsc) and starts the built service as a child process.
import { execFile, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from '../helpers/tap.ts'
import { projectRoot } from '../../core/paths.ts'
import { freshDatabase } from '../helpers/database.ts'
import { chooseRuntime } from '../../bin/runtime.js'

// `npm test` builds first when the build is stale (pretest); run alone, this does.
if (chooseRuntime({}).from !== 'build')
  await promisify(execFile)(process.execPath, [join(projectRoot, 'scripts/build.js')], { cwd: projectRoot })

// A module package whose TypeScript Node does not strip (an enum): the build loads it through tsx.
const fixturesDir = join(projectRoot, 'test', 'fixtures')
mkdirSync(fixturesDir, { recursive: true })
const modulesDir = mkdtempSync(join(fixturesDir, 'build-modules-'))
t.teardown(() => rmSync(modulesDir, { recursive: true, force: true }))
mkdirSync(join(modulesDir, 'with-enum'))
writeFileSync(
  join(modulesDir, 'with-enum', 'package.json'),
  JSON.stringify({
    name: '@fixture/with-enum',
    version: '1.0.0',
    type: 'module',
    'records-module': { entry: 'module.ts' }
  })
)
writeFileSync(
  join(modulesDir, 'with-enum', 'module.ts'),
  `enum Level { Low = 'low', High = 'high' }
export default {
  key: 'build-fixture', version: '1.0.0', title: 'Build fixture', numberPattern: 'BF-{seq:4}',
  fields: [{ key: 'title', type: 'text', required: true }, { key: 'level', type: 'singleChoice', options: [Level.Low, Level.High] }],
  workflow: { initial: 'open', states: [{ key: 'open' }], transitions: [] },
  permissions: { admin: ['read', 'create'] }
}
`
)

t.test(
  'the build runs the service: JavaScript in dist/, the console assets beside it, module packages left as TypeScript (an enum through tsx)',
  async (t) => {
    t.match(
      JSON.parse(readFileSync(join(projectRoot, 'dist/build.json'), 'utf8')),
      { startedAt: Number },
      'dist/build.json'
    )
    t.match(
      readFileSync(join(projectRoot, 'dist/core/main.js'), 'utf8'),
      /from "\.\/app\.js"/,
      '.ts import specifiers rewritten to .js'
    )
    t.ok(
      readFileSync(join(projectRoot, 'dist/plugins/graphql/graphql.console.css')).length,
      'the GraphQL console stylesheet is copied'
    )
    const db = await freshDatabase()
    t.teardown(() => db.drop())
    const child = spawn(process.execPath, ['bin/start.js'], {
      cwd: projectRoot,
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        PORT: '0',
        RECORDS_RUNTIME: '',
        NODE_CONFIG: JSON.stringify({ modules: { directories: ['tenant-modules', modulesDir] } })
      },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    t.teardown(() => void child.kill('SIGKILL'))
    let out = ''
    child.stdout.on('data', (c: Buffer) => (out += c.toString()))
    child.stderr.on('data', (c: Buffer) => (out += c.toString()))
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', () => {
        // A plain line on a terminal, a JSON line otherwise (core/main.ts).
        const m = /Listening on (http[^\s"]+)/.exec(out)
        if (m) resolve(m[1])
      })
      child.once('exit', (code) =>
        reject(new Error(`the built service exited (${code}) before listening:\n${out.slice(-3000)}`))
      )
    })
    const key = /svc_k_[0-9A-Za-z]{40}/.exec(out)![0]
    const res = await fetch(`${url}/api/v1/modules`, { headers: { authorization: `Bearer ${key}` } })
    t.equal(res.status, 200, 'the built service answers')
    const console = await fetch(`${url}/settings/graphql/assets/console.css`)
    t.equal(console.status, 200, 'and serves the copied console stylesheet')
    for (let i = 0; i < 50 && !/running from/.test(out); i++) await new Promise((r) => setTimeout(r, 200))
    t.match(out, /"msg":"running from the build \(dist\/\)"/, 'from dist/')
    child.kill('SIGTERM')
    await exited
  }
)
