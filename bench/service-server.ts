/**
 * The records service as the benchmark runs it, in its own process: createPlatform +
 * startServer from core/app.ts with authentication, tenancy and hooks on, and a real
 * tenant API key. Migrates the database and syncs the bench tenant as a normal start does.
 *
 * Usage: node --import tsx bench/service-server.ts [--database-url URL] [--tenant ID] [--jobs] [--attachments-dir DIR] [--local-webhooks]
 *   (or BENCH_DATABASE_URL / DATABASE_URL, BENCH_TENANT, BENCH_JOBS=1, BENCH_ATTACHMENTS_DIR, BENCH_LOCAL_WEBHOOKS=1).
 *   --other-tenant adds a second tenant (`bench-other`) and sends its API key as `otherToken`
 *   (bench/validation.ts times that tenant's requests while the first one's run).
 *   Jobs stay off unless --jobs is given (bench/exports.ts needs the export jobs to run here);
 *   with it Agenda processes jobs in this process, scanning every second. --attachments-dir
 *   moves the local file store (export files) out of data/attachments. --local-webhooks lets webhook
 *   subscriptions target plain http on 127.0.0.1 (bench/webhooks.ts's receiver), with the dispatcher
 *   on; without it the webhooks config is the default one. Run by hand it prints `listening <url>`
 *   and `token <api key>`; when forked, it sends { type: 'ready', url, token } over IPC and
 *   answers { type: 'cpu' } with process.cpuUsage().
 *   --tracing (BENCH_TRACING=1) traces every request as production would with OTEL_TRACES_EXPORTER
 *   set (the SDK, its HTTP, Koa and pg instrumentations, the span hooks, a batch span processor),
 *   exporting to memory (spans are counted, then dropped: no collector's network or OTLP encoding
 *   in the figure); without it tracing starts as bin/server.ts starts it, from OTEL_* (off unless set).
 */
import { parseArgs } from 'node:util'
import { startTracing } from '../core/telemetry/start.ts'

const { values: args } = parseArgs({
  options: {
    'database-url': { type: 'string' },
    tenant: { type: 'string' },
    jobs: { type: 'boolean', default: false },
    'attachments-dir': { type: 'string' },
    'local-webhooks': { type: 'boolean', default: false },
    'other-tenant': { type: 'boolean', default: false },
    tracing: { type: 'boolean', default: false }
  }
})
const url = args['database-url'] ?? process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL
if (!url) throw new Error('service-server: pass --database-url or set DATABASE_URL')
const tenantId = args.tenant ?? process.env.BENCH_TENANT ?? 'bench'
const jobs = args.jobs || process.env.BENCH_JOBS === '1'
const attachmentsDir = args['attachments-dir'] ?? process.env.BENCH_ATTACHMENTS_DIR
const localWebhooks = args['local-webhooks'] || process.env.BENCH_LOCAL_WEBHOOKS === '1'
const tracing = args.tracing || process.env.BENCH_TRACING === '1'

/** Tracing on, to an in-memory exporter that counts each batch and lets it go (memory stays flat over a long run). */
async function traceToMemory(): Promise<() => number> {
  const { BatchSpanProcessor, InMemorySpanExporter } = await import('@opentelemetry/sdk-trace')
  let exported = 0
  const exporter = new InMemorySpanExporter()
  const keep = exporter.export.bind(exporter)
  exporter.export = (spans, done) => {
    exported += spans.length
    keep(spans, done)
    exporter.reset()
  }
  await startTracing({ spanProcessors: [new BatchSpanProcessor({ exporter })] })
  return () => exported
}
// Before the app (and pg, which common.ts loads) is imported, as in bin/server.ts.
let spansExported: (() => number) | undefined
if (tracing) spansExported = await traceToMemory()
else await startTracing()
const { createPlatform, startServer } = await import('../core/app.ts')
const { loadConfig } = await import('../core/config.ts')
const { benchModules, serveAsChild } = await import('./common.ts')
const { plugins } = await import('../plugins/index.ts')

const config = loadConfig({
  port: 0,
  jobs: jobs ? { enabled: true, processEverySeconds: 1 } : { enabled: false },
  ...(attachmentsDir ? { attachments: { local: { dir: attachmentsDir } } } : {}),
  ...(localWebhooks ? { webhooks: { dispatch: true, allowHttp: true, allowedCidrs: ['127.0.0.1/32'] } } : {}),
  logLevel: 'error',
  // The limiter runs (its cost is part of the figure) with a ceiling the load never reaches.
  tenants: {
    [tenantId]: { name: 'Bench', modules: benchModules, limits: { requestsPerMinute: 1_000_000_000 } },
    ...(args['other-tenant'] ? { 'bench-other': { name: 'Bench (other tenant)', modules: benchModules } } : {})
  },
  database: { url }
})
const platform = await createPlatform(config, plugins)
const running = await startServer(platform, plugins)
const { token } = await platform.credentials.create({ tenantId, kind: 'api_key', name: 'benchmark key' })
const otherToken = args['other-tenant']
  ? (await platform.credentials.create({ tenantId: 'bench-other', kind: 'api_key', name: 'benchmark key' })).token
  : undefined
// Forked by run.ts the key travels over IPC only; run by hand it is printed for curl/autocannon.
process.stdout.write(
  process.send
    ? `service listening ${running.url}${tracing ? ' (tracing to memory)' : ''}\n`
    : `listening ${running.url}\ntoken ${token}\n`
)

serveAsChild(
  async () => {
    if (spansExported) process.stderr.write(`service: ${spansExported()} spans exported\n`)
    running.server.closeAllConnections()
    await running.close()
  },
  { url: running.url, token, otherToken }
)
