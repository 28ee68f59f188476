/**
 * The records service as the benchmark runs it, in its own process: createPlatform +
 * startServer from core/app.ts with authentication, tenancy and hooks on, and a real
 * tenant API key. Migrates the database and syncs the bench tenant as a normal start does.
 *
 * Usage: node --import tsx bench/service-server.ts [--database-url URL] [--tenant ID]
 *   (or BENCH_DATABASE_URL / DATABASE_URL, BENCH_TENANT). Run by hand it prints `listening <url>`
 *   and `token <api key>`; when forked, it sends { type: 'ready', url, token } over IPC and
 *   answers { type: 'cpu' } with process.cpuUsage().
 */
import { parseArgs } from 'node:util'
import { createPlatform, startServer } from '../core/app.ts'
import { loadConfig } from '../core/config.ts'
import { benchModules, serveAsChild } from './common.ts'

const { values: args } = parseArgs({ options: { 'database-url': { type: 'string' }, tenant: { type: 'string' } } })
const url = args['database-url'] ?? process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL
if (!url) throw new Error('service-server: pass --database-url or set DATABASE_URL')
const tenantId = args.tenant ?? process.env.BENCH_TENANT ?? 'bench'

const config = loadConfig({
  port: 0,
  jobs: { enabled: false },
  logLevel: 'error',
  // The limiter runs (its cost is part of the figure) with a ceiling the load never reaches.
  tenants: { [tenantId]: { name: 'Bench', modules: benchModules, limits: { requestsPerMinute: 1_000_000_000 } } },
  database: { url }
})
const platform = await createPlatform(config)
const running = await startServer(platform)
const { token } = await platform.credentials.create({ tenantId, kind: 'api_key', name: 'benchmark key' })
// Forked by run.ts the key travels over IPC only; run by hand it is printed for curl/autocannon.
process.stdout.write(process.send ? `service listening ${running.url}\n` : `listening ${running.url}\ntoken ${token}\n`)

serveAsChild(
  async () => {
    running.server.closeAllConnections()
    await running.close()
  },
  { url: running.url, token }
)
