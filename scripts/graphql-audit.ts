/**
 * `npm run audit:graphql`: graphql-http's GraphQL-over-HTTP conformance audit
 * (`auditServer`) against a started instance of the service, as CI runs it.
 *
 * Starts the service on a throwaway database (on DATABASE_URL's server, else on the
 * tests' embedded cluster, data/test), mints an API key of a tenant of its own and sends
 * every audit request with it: the endpoint answers 401 to anyone without a credential,
 * which is not what the audits examine. One check of its own follows the audits (86EE+,
 * below). Prints each result (ok / notice for a MAY / warn for a SHOULD / error for a
 * MUST, and for the rest the reason, the request and the response's status and body),
 * then `N ok, N warnings, N errors`. Exits 1 when a result is an error, or when a
 * response broke the service's OpenAPI document (the tests' contract check runs too).
 * A warning does not fail the run: fix it, or say in the commit why the service answers
 * otherwise. Whatever happens, it stops what it started: server, database, embedded PostgreSQL.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { auditServer, type AuditResult } from 'graphql-http'
import { createPlatform } from '../core/app.ts'
import { loadConfig } from '../core/config.ts'
import { graphqlPath } from '../plugins/graphql/graphql.shared.ts'
import { plugins } from '../plugins/index.ts'
import { freshDatabase } from '../test/helpers/database.ts'
import { startCheckedServer } from '../test/helpers/server.ts'
import { testCluster } from '../test/suite/cluster.ts'
import { contractBroken, databaseServer, onCleanUp, runScript, say } from './harness.ts'

const tenantId = 'audit'

/**
 * What graphql-http's 86EE means to check and, in 1.23.1, does not: its document never uses the
 * variable it sends, so validation (NoUnusedVariables) refuses it before any coercion. Here
 * the variable is used, so the value's coercion fails; shaped as an audit result.
 */
async function coercionAudit(url: string, fetchFn: typeof fetch): Promise<AuditResult> {
  const id = '86EE+'
  const name =
    'SHOULD use a status code of 400 on variable coercion failure when accepting application/graphql-response+json (a variable the operation uses)'
  const res = await fetchFn(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    body: JSON.stringify({
      query: 'query CoerceFailure($name: String!) { __type(name: $name) { name } }',
      variables: { name: null }
    })
  })
  return res.status === 400
    ? { id, name, status: 'ok' }
    : { id, name, status: 'warn', reason: `Status code ${res.status} is not 400`, response: res }
}

/** What was sent and received for each response the audits got, to show with a failure. */
interface Exchange {
  request: string
  status: number
  contentType: string
  body: Promise<string>
}

async function main(): Promise<number> {
  const where = await databaseServer()
  const db = await freshDatabase(testCluster)
  onCleanUp(() => db.drop())
  const attachmentsDir = mkdtempSync(join(tmpdir(), 'records-audit-files-'))
  onCleanUp(() => rmSync(attachmentsDir, { recursive: true, force: true }))

  const config = loadConfig({
    port: 0,
    jobs: { enabled: false },
    logLevel: 'error',
    tenants: { [tenantId]: { name: 'GraphQL audit', modules: ['incident', 'corrective-action', 'inspection'] } },
    // The audits send their ~70 requests at once; they are not what the rate limit is for.
    limits: { requestsPerMinute: 1_000_000 },
    redis: { prefix: `audit:${randomUUID()}:` },
    attachments: { local: { dir: attachmentsDir } },
    database: { url: db.url }
  })
  const platform = await createPlatform(config, plugins)
  // The tests' server: every response checked against the service's OpenAPI document too.
  const running = await startCheckedServer(platform).catch(async (err) => {
    await platform.db.close()
    throw err
  })
  onCleanUp(() => running.close())
  const { token } = await platform.credentials.create({ tenantId, kind: 'api_key', name: 'graphql-http audit' })

  const url = `${running.url}/${graphqlPath}`
  const exchanges = new WeakMap<Response, Exchange>()
  const fetchFn = async (input: string | URL | Request, init: RequestInit = {}) => {
    const headers = new Headers(init.headers)
    headers.set('authorization', `Bearer ${token}`)
    const res = await fetch(input, { ...init, headers })
    const shown = [...headers].filter(([name]) => name !== 'authorization').map(([name, value]) => `${name}: ${value}`)
    const body = typeof init.body === 'string' ? ` ${init.body}` : ''
    exchanges.set(res, {
      request: `${init.method ?? 'GET'} ${(input instanceof Request ? input.url : String(input)).slice(running.url.length)}${shown.length ? ` [${shown.join('; ')}]` : ''}${body}`,
      status: res.status,
      contentType: res.headers.get('content-type') ?? '(none)',
      // A copy: the audit may read the body itself.
      body: res.clone().text()
    })
    return res
  }

  say(`graphql-http auditServer against ${url} (tenant ${tenantId}, ${where})`)
  const results: AuditResult[] = [...(await auditServer({ url, fetchFn })), await coercionAudit(url, fetchFn)]
  const order = { error: 0, warn: 1, notice: 2, ok: 3 }
  const counts = { ok: 0, notice: 0, warn: 0, error: 0 }
  for (const result of [...results].sort((a, b) => order[a.status] - order[b.status])) {
    counts[result.status]++
    say(`${result.status.padEnd(6)} ${result.id} ${result.name}`)
    if (result.status === 'ok') continue
    say(`         reason: ${result.reason}`)
    const exchange = exchanges.get(result.response)
    if (exchange) {
      const text = (await exchange.body).replace(/\s+/g, ' ')
      say(`         request: ${exchange.request}`)
      say(
        `         response: ${exchange.status} ${exchange.contentType} ${text.length > 300 ? `${text.slice(0, 300)}…` : text}`
      )
    }
  }
  say(
    `${counts.ok} ok, ${counts.warn} warnings, ${counts.error} errors${counts.notice ? `, ${counts.notice} notices` : ''}`
  )

  const broken = await contractBroken(running.violations)
  return counts.error > 0 || broken ? 1 : 0
}

await runScript('graphql audit', main)
