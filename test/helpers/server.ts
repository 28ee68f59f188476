import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { createPlatform, startServer, type RunningServer } from '../../core/app.ts'
import { loadConfig, type AppConfig, type DeepPartial } from '../../core/config.ts'
import type { Platform } from '../../core/declarations.ts'
import { freshDatabase } from './database.ts'
import { contractMiddleware, type Violation } from '../../core/openapi/contract.ts'
import { plugins } from '../../plugins/index.ts'
import { recordPlatformSecrets, recordResponseSecrets } from './secrets.ts'

export interface Reply<T = any> {
  status: number
  headers: Headers
  body: T
  text: string
}

export interface RequestOptions {
  token?: string | null
  body?: unknown
  /** Sent as is, with no JSON encoding (for malformed-body tests). */
  raw?: string | Buffer
  headers?: Record<string, string>
}

export interface TestServer {
  url: string
  platform: Platform
  running: RunningServer
  /** Tenant id -> an API key of that tenant, created at start. */
  keys: Record<string, string>
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<Reply<T>>
  /** Responses that broke the OpenAPI document; close() throws if there are any. */
  violations: Violation[]
  close(): Promise<void>
}

export const defaultTenants = {
  acme: { name: 'Acme Chemicals', modules: ['incident', 'corrective-action', 'inspection'] },
  globex: { name: 'Globex Logistics', modules: ['incident', 'corrective-action', 'inspection'] },
  initech: { name: 'Initech Offices', modules: ['incident'] }
}

/**
 * Starts the service with every response it sends checked against its OpenAPI document
 * (core/openapi/contract.ts); pass `violations` to assertContract() once done. The secrets
 * it creates are recorded for the suite's log check (test/helpers/secrets.ts).
 */
export async function startCheckedServer(platform: Platform): Promise<RunningServer & { violations: Violation[] }> {
  const violations: Violation[] = []
  // Every secret the server creates is recorded for the log check of `npm test` (test/suite/log-check.ts).
  recordPlatformSecrets(platform)
  const running = await startServer(platform, plugins, {
    outermost: (app) => [
      recordResponseSecrets,
      contractMiddleware(
        () => app.get('openapi'),
        (v) => violations.push(v)
      )
    ]
  })
  // The indexes modules declare are built in the background (plugins/records/records.indexes.ts): a test that runs
  // ANALYZE or DDL beside a build would meet its locks. On a test's empty tables the first pass takes a moment.
  await Promise.all((running.app.get('background') ?? []).flatMap((task) => (task.idle ? [task.idle()] : [])))
  return Object.assign(running, { violations })
}

/** Throws with the distinct violations, if any. */
export function assertContract(violations: Violation[]) {
  if (!violations.length) return
  const seen = new Set<string>()
  const lines = violations
    .map((v) => `${v.method} ${v.path} → ${v.status}: ${v.message}`)
    .filter((l) => !seen.has(l) && seen.add(l))
  throw new Error(`${violations.length} response(s) broke the OpenAPI document:\n${lines.slice(0, 40).join('\n')}`)
}

/** Starts the real service on a fresh database, listening on a free loopback port. */
export async function startTestServer(
  overrides: DeepPartial<AppConfig> & Record<string, unknown> = {}
): Promise<TestServer> {
  const db = await freshDatabase()
  const attachmentsDir = mkdtempSync(join(tmpdir(), 'records-test-files-'))
  const config = loadConfig({
    port: 0,
    jobs: { enabled: false },
    logLevel: 'error',
    tenants: defaultTenants,
    // No metrics listener (many servers share a process); a test that scrapes sets `metrics: { enabled: true, port: 0 }`.
    metrics: { enabled: false },
    ...overrides,
    // Suites send thousands of requests with one key; the rate-limit tests set their own limit.
    limits: { requestsPerMinute: 1_000_000, ...(overrides.limits ?? {}) },
    // Each server counts in its own Redis namespace unless a test shares one on purpose.
    redis: { prefix: `test:${randomUUID()}:`, ...(overrides.redis ?? {}) },
    // And keeps attachment files in its own folder, removed with it.
    attachments: {
      ...((overrides as any).attachments ?? {}),
      local: { dir: attachmentsDir, ...((overrides as any).attachments?.local ?? {}) }
    },
    database: { url: db.url, ...(overrides.database ?? {}) }
  } as any)
  const platform = await createPlatform(config, plugins)
  const running = await startCheckedServer(platform)
  const { violations } = running
  const keys: Record<string, string> = {}
  for (const tenantId of Object.keys(config.tenants)) {
    keys[tenantId] = (
      await platform.credentials.create({ tenantId, kind: 'api_key', name: `${tenantId} test key` })
    ).token
  }
  const firstKey = Object.values(keys)[0]
  return {
    url: running.url,
    platform,
    running,
    keys,
    async request(method, path, options = {}) {
      const headers: Record<string, string> = { ...(options.headers ?? {}) }
      const token = options.token === undefined ? firstKey : options.token
      if (token) headers.authorization = `Bearer ${token}`
      let body: string | Buffer | undefined = options.raw
      if (options.body !== undefined) {
        body = JSON.stringify(options.body)
        headers['content-type'] ??= 'application/json'
      }
      const res = await fetch(running.url + path, {
        method,
        headers,
        body: typeof body === 'string' || body === undefined ? body : new Uint8Array(body)
      })
      const text = await res.text()
      let parsed: unknown = text
      try {
        parsed = text ? JSON.parse(text) : undefined
      } catch {
        /* not JSON: leave the text */
      }
      return { status: res.status, headers: res.headers, body: parsed as any, text }
    },
    violations,
    async close() {
      await running.close()
      await db.drop()
      rmSync(attachmentsDir, { recursive: true, force: true })
      assertContract(violations)
    }
  }
}

/** A valid incident payload; override any field. */
export function incidentPayload(overrides: Record<string, unknown> = {}) {
  return {
    title: 'Forklift clipped racking',
    description: 'A reversing forklift struck the end of aisle 4 racking; no one was hurt.',
    occurredAt: '2026-11-20T08:30:00Z',
    site: 'Leeds DC',
    category: 'near-miss',
    severity: 'medium',
    ...overrides
  }
}
