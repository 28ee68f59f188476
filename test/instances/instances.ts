import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { CredentialStore } from '../../core/auth/credentials.ts'
import { projectRoot } from '../../core/paths.ts'
import { freshDatabase } from '../helpers/database.ts'
import { childLines, type ChildLine } from '../helpers/child-lines.ts'

/** A line an instance printed, and its JSON when it was a log line. */
export type Line = ChildLine

export interface Instance {
  name: string
  url: string
  process: ChildProcess
  lines: Line[]
  /** Resolves with the first line (already printed or to come) that `match` accepts; rejects after `ms` or if the process exits first. */
  waitForLine(match: (l: Line) => boolean, ms?: number): Promise<Line>
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<number | string | null>
  request<T = any>(
    method: string,
    path: string,
    o?: { token?: string; body?: unknown; headers?: Record<string, string> }
  ): Promise<{ status: number; headers: Headers; body: T }>
}

/** Every instance process this test process started: killed with it, however it ends (a failed start-up, tap's timeout). */
const children = new Set<ChildProcess>()
const killAll = () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}
process.on('exit', killAll)
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    killAll()
    process.exit(1)
  })
}

/**
 * Several instances of the service as an operator runs them: `node --import tsx bin/server.ts`
 * processes with their configuration in NODE_CONFIG, all on one fresh database, one Redis
 * namespace and one attachments folder. `keys` are API keys made straight in the database.
 */
export async function cluster(config: Record<string, any>) {
  const db = await freshDatabase()
  const files = mkdtempSync(join(tmpdir(), 'records-instances-'))
  const prefix = `test:${randomUUID()}:`
  const pool = new pg.Pool({ connectionString: db.url, max: 4 })
  const started: Instance[] = []

  const base: Record<string, any> = {
    port: 0,
    logLevel: 'info',
    // Several instances share the test server's connections with other suites: a small pool each.
    database: { url: db.url, poolSize: 8 },
    redis: { url: process.env.REDIS_URL ?? null, prefix },
    attachments: { local: { dir: files } },
    ...config
  }

  async function start(name: string, more: Record<string, any> = {}): Promise<Instance> {
    const merged = {
      ...base,
      ...more,
      jobs: { ...base.jobs, ...more.jobs },
      exports: { ...base.exports, ...more.exports }
    }
    const child = spawn(process.execPath, ['--import', 'tsx', 'bin/server.ts'], {
      cwd: projectRoot,
      env: { ...process.env, NODE_ENV: 'test', NODE_CONFIG: JSON.stringify(merged), DATABASE_URL: db.url },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    children.add(child)
    child.once('exit', () => children.delete(child))
    const out = childLines(child, { name: `instance ${name}`, echo: !!process.env.INSTANCE_LOGS })
    const lines: Line[] = out.lines
    const exited = out.exited.then(({ code, signal }) => code ?? signal)
    const waitForLine = (match: (l: Line) => boolean, ms = 30_000) => out.waitFor(match, ms)
    const listening = await waitForLine((l) => /listening on (http:\/\/\S+)/i.test(l.text), 60_000)
    const url = /listening on (http:\/\/[^\s"]+)/i.exec(listening.text)![1]
    const instance: Instance = {
      name,
      url,
      process: child,
      lines,
      waitForLine,
      exited,
      async request(method, path, o = {}) {
        const headers: Record<string, string> = { ...(o.headers ?? {}) }
        if (o.token) headers.authorization = `Bearer ${o.token}`
        if (o.body !== undefined) headers['content-type'] = 'application/json'
        const res = await fetch(url + path, {
          method,
          headers,
          body: o.body === undefined ? undefined : JSON.stringify(o.body)
        })
        const text = await res.text()
        let body: any = text
        try {
          body = text ? JSON.parse(text) : undefined
        } catch {
          /* not JSON */
        }
        return { status: res.status, headers: res.headers, body }
      }
    }
    started.push(instance)
    return instance
  }

  return {
    db,
    pool,
    start,
    /** An API key of `tenantId`, made in the database as the CLI makes one. */
    async key(tenantId: string): Promise<{ token: string; id: string }> {
      const { token, credential } = await new CredentialStore(pool).create({
        tenantId,
        kind: 'api_key',
        name: `${tenantId} test key`
      })
      return { token, id: credential.id }
    },
    /** Polls `fn` until it returns a truthy value (progress in the database, a status): no fixed sleeps. */
    async until<T>(what: string, fn: () => Promise<T | undefined | null | false>, ms = 30_000): Promise<T> {
      const until = Date.now() + ms
      for (;;) {
        const v = await fn()
        if (v) return v
        if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
        await new Promise((r) => setTimeout(r, 50))
      }
    },
    async close() {
      const ending = [...children].map((child) => new Promise((resolve) => child.once('exit', resolve)))
      killAll()
      await Promise.all(ending)
      await pool.end()
      await db.drop()
      rmSync(files, { recursive: true, force: true })
    }
  }
}
