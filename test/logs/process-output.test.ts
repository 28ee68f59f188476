import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import { freshDatabase } from '../helpers/database.ts'
import { projectRoot } from '../../core/paths.ts'

interface Run {
  stdout: string
  stderr: string
  code: number | null
}

/** Runs `entry` as bin/server.ts runs; `until` says when to send SIGTERM (never: wait for the exit). */
async function run(entry: string, env: NodeJS.ProcessEnv, until?: (r: Run) => boolean): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const r: Run = { stdout: '', stderr: '', code: null }
  let signalled = false
  const check = () => !signalled && until?.(r) && (signalled = child.kill('SIGTERM'))
  child.stdout.on('data', (c) => ((r.stdout += c), check()))
  child.stderr.on('data', (c) => ((r.stderr += c), check()))
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
  r.code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  clearTimeout(timer)
  return r
}

const jsonLines = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))

t.test(
  'everything the service prints is JSON: a deprecation warning, the listening line, and the first API key on stdout only',
  async (t) => {
    const db = await freshDatabase()
    const dir = mkdtempSync(join(tmpdir(), 'records-process-output-'))
    t.teardown(async () => {
      await db.drop()
      rmSync(dir, { recursive: true, force: true })
    })
    const logFile = join(dir, 'service.ndjson')
    const env = {
      DATABASE_URL: db.url,
      PORT: '0',
      LOG_LEVEL: 'info',
      LOG_FILE: logFile,
      LOG_FORMAT: '',
      NODE_CONFIG: JSON.stringify({ jobs: { enabled: false }, metrics: { enabled: false } })
    }
    const r = await run('test/logs/fixtures/serve-with-deprecation.ts', env, (r) => r.stderr.includes('DEP0005'))
    t.equal(r.code, 0, 'stopped cleanly by SIGTERM')
    const stderr = jsonLines(r.stderr)
    t.ok(stderr.length > 2, 'log lines on stderr')
    t.notMatch(r.stderr, /^\(node:\d+\)/m, "nothing of Node's own warning printer")
    t.match(
      stderr.find((l) => l.code === 'DEP0005'),
      { level: 'warn', warning: 'DeprecationWarning', code: 'DEP0005', msg: /Buffer\(\) is deprecated/ },
      'the deprecation is a warn line'
    )
    t.match(
      stderr.find((l) => /listening on/.test(l.msg)),
      { level: 'info', url: /^http:\/\/127\.0\.0\.1:\d+$/ }
    )
    const stdout = jsonLines(r.stdout)
    const key = stdout.find((l) => l.apiKey)
    t.match(
      key,
      { level: 'info', tenant: 'demo', credentialId: String, apiKey: /^svc_k_[0-9A-Za-z]{40}$/ },
      'the first API key: one JSON line on stdout'
    )
    t.match(stdout.at(-1), { msg: /^Listening on http:\/\/127\.0\.0\.1:\d+$/ }, 'then the listening line')
    t.notOk(r.stderr.includes(key.apiKey), 'the key is not in the log on stderr')
    const file = readFileSync(logFile, 'utf8')
    t.ok(
      jsonLines(file).some((l) => l.code === 'DEP0005'),
      'the log file has the lines too'
    )
    t.notOk(file.includes(key.apiKey), 'nor in the log file')
  }
)

t.test('a start-up that fails is one JSON line on stderr, and exit 1', async (t) => {
  const r = await run('bin/server.ts', { NODE_CONFIG: JSON.stringify({ port: -1 }), LOG_FORMAT: '' })
  t.equal(r.code, 1)
  t.same(r.stdout, '', 'nothing on stdout')
  const lines = jsonLines(r.stderr)
  t.match(lines.at(-1), {
    level: 'fatal',
    msg: /^Start-up failed: Invalid configuration: \/port must be >= 0/,
    error: String
  })
})
