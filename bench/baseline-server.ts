/**
 * The physical floor the records service is measured against: node:http + one pg Pool,
 * named prepared statements, no framework, no auth, no hooks. It answers the same three
 * requests with the same SQL as the service:
 *
 *   GET  /api/v1/records/:id                          selectLive (record + activity json_agg)
 *   GET  /api/v1/records?moduleKey=<key>&limit=<n>    live rows of the module by seq (LIMIT n + 1, as the service)
 *   POST /api/v1/records                              Ajv (the module's compiled payload schema) + the insert CTE
 *
 * The GET and create statements are the records plugin's own functions (selectLive,
 * createRecordRows of the write path), so the two servers cannot drift apart; the list statement is the text
 * knex builds for the service (same columns, filters, order and LIMIT n + 1), prepared
 * once here under a name.
 *
 * Usage: node --import tsx bench/baseline-server.ts [--port N] [--database-url URL] [--tenant ID]
 *   (or PORT, DATABASE_URL, BENCH_TENANT). Prints `listening <url>`; when forked, also
 *   sends { type: 'ready', url } over IPC and answers { type: 'cpu' } with process.cpuUsage().
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { loadConfig } from '../core/config.ts'
import { loadModules } from '../core/modules/registry.ts'
import { diffPayload } from '../plugins/records/records.payload.ts'
import { recordColumns, selectLive, toRecord, type RecordRow } from '../plugins/records/records.repository.ts'
import { createRecordRows } from '../plugins/records/records.write.ts'
import { serveAsChild } from './common.ts'

// Same type parsing as core/db/index.ts (bigint counters as numbers).
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => (v === null ? null : Number(v)))

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    'database-url': { type: 'string' },
    tenant: { type: 'string' },
    'pool-size': { type: 'string' }
  }
})
const databaseUrl = args['database-url'] ?? process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL
if (!databaseUrl) throw new Error('baseline-server: pass --database-url or set DATABASE_URL')
const port = Number(args.port ?? process.env.PORT ?? 0)
const tenantId = args.tenant ?? process.env.BENCH_TENANT ?? 'bench'

const config = loadConfig({ database: { url: databaseUrl } })
const poolSize = Number(args['pool-size'] ?? config.database.poolSize)
const registry = await loadModules(config.modules)
const pool = new pg.Pool({ connectionString: databaseUrl, max: poolSize, options: '-c TimeZone=UTC' })
pool.on('error', () => undefined)

const actor = { type: 'api-key' as const, id: '00000000-0000-4000-8000-000000000b5e', name: 'baseline' }
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const prefix = '/api/v1/records'

// The page size written into the statement, as the service's ShapedQuery does (one named statement per size).
const listSql = (rows: number) => ({
  name: `baseline-list-${rows}`,
  text: `SELECT ${recordColumns} FROM records AS r WHERE r.tenant_id = $1 AND r.module_key = $2 AND r.deleted_at IS NULL ORDER BY r.seq ASC LIMIT ${rows}`
})

function send(res: http.ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text)
  })
  res.end(text)
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}

async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
  const url = req.url ?? '/'
  const q = url.indexOf('?')
  const path = q === -1 ? url : url.slice(0, q)

  if (req.method === 'GET' && path.startsWith(prefix + '/')) {
    const id = path.slice(prefix.length + 1)
    if (!uuid.test(id)) return send(res, 404, { code: 'record.not_found' })
    const row = await selectLive(pool, tenantId, id)
    if (!row) return send(res, 404, { code: 'record.not_found' })
    return send(res, 200, toRecord(row))
  }

  if (req.method === 'GET' && path === prefix) {
    const params = new URLSearchParams(q === -1 ? '' : url.slice(q + 1))
    const moduleKey = params.get('moduleKey') ?? ''
    const limit = Math.min(
      Math.max(Number(params.get('limit') ?? config.pagination.defaultLimit) || 1, 1),
      config.pagination.maxLimit
    )
    const { rows } = await pool.query<RecordRow>({ ...listSql(limit + 1), values: [tenantId, moduleKey] })
    return send(res, 200, { items: rows.slice(0, limit).map(toRecord), nextCursor: null, limit })
  }

  if (req.method === 'POST' && path === prefix) {
    let body: { moduleKey?: string; payload?: Record<string, unknown> }
    try {
      body = JSON.parse(await readBody(req))
    } catch {
      return send(res, 400, { code: 'request.malformed_json' })
    }
    const module = typeof body?.moduleKey === 'string' ? registry.get(body.moduleKey) : undefined
    if (!module) return send(res, 404, { code: 'module.not_found' })
    const payload = body.payload ?? {}
    if (!module.validatePayload(payload))
      return send(res, 400, { code: 'field.invalid', errors: module.validatePayload.errors })
    const [row] = await createRecordRows(pool, { tenantId, actor }, module, [
      { payload, changes: diffPayload({}, payload) }
    ])
    return send(res, 201, toRecord(row))
  }

  send(res, 404, { code: 'route.not_found' })
}

const server = http.createServer((req, res) => {
  handle(req, res).catch((err) => {
    if (!res.headersSent) send(res, 500, { code: 'internal', detail: (err as Error).message })
    else res.destroy()
  })
})
server.listen(port, '127.0.0.1')
await new Promise((resolve) => server.once('listening', resolve))
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
process.stdout.write(process.send ? `baseline listening ${url}\n` : `listening ${url}\n`)

serveAsChild(
  async () => {
    server.closeAllConnections()
    server.close()
    await pool.end()
  },
  { url }
)
