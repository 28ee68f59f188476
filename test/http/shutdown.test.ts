import { spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import t from '../helpers/tap.ts'
import { CredentialStore } from '../../core/auth/credentials.ts'
import { stopEmbedded } from '../../core/db/embedded.ts'
import { repeatWindowMs } from '../../core/shutdown.ts'
import { projectRoot } from '../../core/paths.ts'
import { freshDatabase } from '../helpers/database.ts'
import { openBulk } from '../helpers/ndjson.ts'
import { childLines, type ChildLine } from '../helpers/child-lines.ts'
import { incidentPayload } from '../helpers/server.ts'

// Each instance is a `node --import tsx bin/server.ts` child, as an operator runs it, signalled as a supervisor
// would. Every wait is on a line the process prints or an HTTP event, never on a clock.

interface Server {
  url: string
  lines: Array<Record<string, any>>
  /** The first log line (printed or to come) `match` accepts; rejects if the process exits first. */
  line(match: (l: Record<string, any>) => boolean): Promise<Record<string, any>>
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  signal(s: NodeJS.Signals): void
}

const msg = (pattern: RegExp) => (l: Record<string, any>) => typeof l.msg === 'string' && pattern.test(l.msg)

const tenants = { acme: { name: 'Acme Chemicals', modules: ['incident'] } }

async function startServer(
  config: Record<string, unknown>,
  env: Record<string, string | undefined>,
  o: { listening: boolean } = { listening: true }
): Promise<Server> {
  const childEnv: Record<string, string | undefined> = {
    ...process.env,
    NODE_ENV: 'test',
    NODE_CONFIG: JSON.stringify({ port: 0, logLevel: 'info', tenants, metrics: { enabled: false }, ...config }),
    ...env
  }
  for (const [k, v] of Object.entries(childEnv)) if (v === undefined) delete childEnv[k]
  const child = spawn(process.execPath, ['--import', 'tsx', 'bin/server.ts'], {
    cwd: projectRoot,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const out = childLines(child, { name: 'the server' })
  // A log line as its JSON; a plain one as its text in `msg`.
  const record = (l: ChildLine): Record<string, any> => l.json ?? { msg: l.text, plain: true }
  const exited = out.exited
  const line = async (match: (l: Record<string, any>) => boolean) => record(await out.waitFor((l) => match(record(l))))
  const alive = () => child.exitCode === null && child.signalCode === null
  // A server on the embedded PostgreSQL must stop it: it gets signals, never SIGKILL (which would leave the cluster running).
  const embedded = (config.database as { url?: unknown } | undefined)?.url === null
  // If tap ends this process (its timeout), no teardown runs: the server must not outlive it.
  const orphaned = () => alive() && child.kill(embedded ? 'SIGTERM' : 'SIGKILL')
  process.once('exit', orphaned)
  t.teardown(async () => {
    process.off('exit', orphaned)
    if (alive() && !embedded) child.kill('SIGKILL')
    if (alive()) {
      // Twice: a second, different signal exits at once (and stops the embedded PostgreSQL), once the
      // first was heard (the same signal again within a second would be taken for the first delivered twice).
      child.kill('SIGTERM')
      await Promise.race([line(msg(/^received SIGTERM/)).catch(() => undefined), exited])
      if (alive()) child.kill('SIGINT')
    }
    await exited
  })
  const listening = o.listening ? await line((l) => typeof l.url === 'string' && /listening/i.test(l.msg)) : undefined
  return {
    url: listening?.url,
    get lines() {
      return out.lines.map(record)
    },
    line,
    exited,
    signal: (s) => child.kill(s)
  }
}

/** GET without keep-alive, so the probe's connection is no reason for the server to stay up. */
async function get(url: string) {
  const res = await fetch(url, { headers: { connection: 'close' } })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers }
}

/**
 * A record create whose body is held back: resolves `accepted` once the server has read the
 * request head (its 100 Continue), so the request is under way; `finish()` sends the body.
 */
function slowCreate(url: string, token: string, payload: Record<string, unknown>) {
  const body = JSON.stringify({ moduleKey: 'incident', payload })
  const u = new URL(`${url}/api/v1/records`)
  const req = http.request({
    hostname: u.hostname,
    port: u.port,
    path: u.pathname,
    method: 'POST',
    agent: false,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      expect: '100-continue'
    }
  })
  const accepted = new Promise<void>((resolve) => req.once('continue', resolve))
  const response = new Promise<{ status: number; body: any; connection?: string }>((resolve, reject) => {
    req.once('error', reject)
    req.once('response', (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (d) => (text += d))
      res.on('end', () =>
        resolve({ status: res.statusCode!, body: JSON.parse(text), connection: res.headers.connection })
      )
    })
  })
  req.flushHeaders()
  return { accepted, response, finish: () => req.end(body) }
}

function refusedConnection(url: string): Promise<string> {
  const u = new URL(url)
  return new Promise((resolve) => {
    const socket = net.connect(Number(u.port), u.hostname)
    socket.once('connect', () => {
      socket.destroy()
      resolve('connected')
    })
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
  })
}

const db = await freshDatabase()
const pool = new pg.Pool({ connectionString: db.url, max: 2 })
t.teardown(async () => {
  await pool.end()
  await db.drop()
})
// A small pool each: the PostgreSQL server's connections are shared with every other test running.
const onDatabase = { database: { url: db.url, poolSize: 10 } }
const env = { DATABASE_URL: db.url }
let token: string | undefined
const keyFor = async () =>
  (token ??= (await new CredentialStore(pool).create({ tenantId: 'acme', kind: 'api_key', name: 'shutdown test key' }))
    .token)

t.test(
  'readiness turns 503 the moment SIGTERM arrives while a slow request is still under way, which still completes; a second SIGTERM exits at once',
  async (t) => {
    // A long readiness delay keeps the listener open for the probes; the second signal cuts it short.
    const server = await startServer(
      {
        ...onDatabase,
        jobs: { enabled: true, processEverySeconds: 1 },
        shutdown: { deadlineSeconds: 600, readinessDelaySeconds: 600 }
      },
      env
    )
    t.equal((await get(`${server.url}/livez`)).status, 200)
    const ready = await get(`${server.url}/readyz`)
    t.equal(ready.status, 200)
    t.same(
      Object.keys(ready.body.checks).sort(),
      ['database', 'jobs', ...(process.env.REDIS_URL ? ['redis'] : [])].sort(),
      'the database, the job scheduler and Redis when configured'
    )

    const slow = slowCreate(server.url, await keyFor(), incidentPayload({ title: 'sent across a SIGTERM' }))
    await slow.accepted
    server.signal('SIGTERM')
    await server.line(msg(/^draining/))
    const draining = await get(`${server.url}/readyz`)
    t.equal(draining.status, 503, 'readiness is 503 while the request is still under way')
    t.equal(draining.body.code, 'service.shutting_down')
    t.equal((await get(`${server.url}/healthz`)).status, 503, 'its alias too')
    t.equal((await get(`${server.url}/livez`)).status, 200, 'the process is still alive')

    const signalledAt = Date.now()
    slow.finish()
    const created = await slow.response
    t.equal(created.status, 201, 'the request under way completes')
    t.equal(created.connection, 'close', 'and its connection closes')
    t.equal(
      (await pool.query("SELECT count(*)::int AS n FROM records WHERE payload->>'title' = 'sent across a SIGTERM'"))
        .rows[0].n,
      1
    )

    // Past the window in which the same signal again is the first one delivered twice (Ctrl-C reaches npm and node).
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, repeatWindowMs + 100 - (Date.now() - signalledAt))))
    server.signal('SIGTERM')
    const exit = await server.exited
    t.equal(exit.code, 1, 'the second signal exits at once, non-zero, 600 s before the drain would have ended')
    t.ok(server.lines.some(msg(/received SIGTERM again/)), 'and says why')
  }
)

t.test(
  'SIGTERM mid-bulk: the call answers for every row it took and says where to resume, nothing acknowledged is lost, the request under way completes after the listener closed, and the process exits 0',
  async (t) => {
    const server = await startServer(
      {
        ...onDatabase,
        jobs: { enabled: true, processEverySeconds: 1 },
        bulk: { batchSize: 10, flushAfterMs: 25 },
        shutdown: { deadlineSeconds: 60, readinessDelaySeconds: 0 }
      },
      env
    )
    const token = await keyFor()
    const row = (n: number) => ({ externalRef: `drain-${n}`, payload: incidentPayload({ title: `bulk row ${n}` }) })
    const bulk = openBulk(server.url, '/api/modules/incident/bulk', token, { 'idempotency-key': 'shutdown-mid-bulk' })
    bulk.write(Array.from({ length: 25 }, (_, i) => row(i + 1)))
    await bulk.waitFor(25, 60_000)
    t.same(
      bulk.lines.map((l) => l.status),
      Array(25).fill('created'),
      'the first 25 rows are acknowledged, the upload still open'
    )
    const slow = slowCreate(server.url, token, incidentPayload({ title: 'under way at SIGTERM' }))
    await slow.accepted

    server.signal('SIGTERM')
    await server.line(msg(/^draining/))
    // Rows sent once the drain began are not taken.
    bulk.write(Array.from({ length: 15 }, (_, i) => row(i + 26)))
    await bulk.finished
    const outcomes = bulk.lines.filter((l) => typeof l.line === 'number')
    const problem = bulk.lines.find((l) => l.problem)
    const summary = bulk.lines.at(-1).summary
    t.same(
      outcomes.map((l) => l.line),
      Array.from({ length: 25 }, (_, i) => i + 1),
      'one outcome for every row it took, each once'
    )
    t.match(problem, { problem: { status: 503, code: 'service.shutting_down' } }, 'the call says why it stopped')
    t.match(summary, { rows: 25, created: 25, complete: false, resumeAtLine: 26 }, 'and where to resume')
    const stored = (
      await pool.query("SELECT external_ref FROM records WHERE external_ref LIKE 'drain-%' ORDER BY external_ref")
    ).rows.map((r) => r.external_ref)
    t.same(
      stored.sort(),
      outcomes.map((o) => o.externalRef).sort(),
      'the rows in the database are exactly those acknowledged'
    )

    t.equal(await refusedConnection(server.url), 'ECONNREFUSED', 'the listener is closed')
    slow.finish()
    t.equal((await slow.response).status, 201, 'the request under way still completes')

    const exit = await server.exited
    t.same(exit, { code: 0, signal: null }, 'a clean drain exits 0')
    for (const step of [
      /^listener closed; every request under way finished/,
      /^jobs stopped/,
      /^stopped/,
      /^shut down cleanly/
    ])
      t.ok(server.lines.some(msg(step)), `the log says: ${step.source}`)
    t.same(
      server.lines.filter((l) => l.level === 'error' || l.level === 'fatal' || l.plain),
      [],
      'no error and nothing but JSON lines on the way out'
    )
  }
)

t.test(
  'on the embedded PostgreSQL, SIGTERM stops it too: the process exits 0 and leaves nothing running',
  async (t) => {
    // A cluster of its own (the postgres user must enter the folder for it to live there); its port is a free one.
    const dataDir = mkdtempSync(join(tmpdir(), 'records-shutdown-'))
    chmodSync(dataDir, 0o755)
    // Stopped first if a failure left it running: a cluster whose folder is gone runs on.
    t.teardown(async () => {
      await stopEmbedded(dataDir)
      rmSync(dataDir, { recursive: true, force: true })
    })
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as net.AddressInfo
        probe.close(() => resolve(port))
      })
    })
    const embeddedEnv = {
      DATABASE_URL: undefined,
      EMBEDDED_PG_PORT: undefined,
      RECORDS_DATA_DIR: undefined,
      PORT: undefined
    }
    const onEmbedded = {
      database: { url: null, poolSize: 10, embedded: { dataDir, port } },
      jobs: { enabled: true, processEverySeconds: 1 }
    }

    // A start-up that fails once the cluster runs (its HTTP port taken) stops the cluster too.
    const taken = net.createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const failed = await startServer(
      { ...onEmbedded, host: '127.0.0.1', port: (taken.address() as net.AddressInfo).port },
      embeddedEnv,
      { listening: false }
    )
    t.equal((await failed.exited).code, 1, 'a start-up that fails exits 1')
    taken.close()
    t.ok(
      failed.lines.some((l) => l.level === 'fatal' && /EADDRINUSE/.test(l.msg)),
      'saying why'
    )
    t.ok(existsSync(join(dataDir, 'pg', 'PG_VERSION')), 'after the cluster had been made and started')
    t.notOk(existsSync(join(dataDir, 'pg', 'postmaster.pid')), 'and the embedded PostgreSQL is stopped')

    const server = await startServer(onEmbedded, embeddedEnv)
    t.ok(existsSync(join(dataDir, 'pg', 'postmaster.pid')), 'the embedded PostgreSQL runs in the folder')
    t.equal((await get(`${server.url}/readyz`)).status, 200)
    server.signal('SIGTERM')
    t.same(await server.exited, { code: 0, signal: null }, 'a clean drain exits 0')
    t.notOk(existsSync(join(dataDir, 'pg', 'postmaster.pid')), 'the embedded PostgreSQL stopped')
    t.equal(await refusedConnection(`http://127.0.0.1:${port}`), 'ECONNREFUSED', 'nothing listens on its port')
    t.match(server.lines.find(msg(/^stopped/)), { embeddedDatabase: 'stopped' })
    t.same(
      server.lines.filter((l) => l.level === 'error' || l.level === 'fatal' || l.plain),
      [],
      'no error and nothing but JSON lines on the way out'
    )
  }
)
