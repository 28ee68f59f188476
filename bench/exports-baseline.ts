/**
 * The floor of `npm run bench:exports`: a bare script that streams one module's live records
 * of one tenant from PostgreSQL into an RFC 4180 CSV file. One `pg` client, one named
 * prepared statement paging by keyset in `seq` order (the `records_live_seq` index), the
 * payload fields picked in SQL (`payload->>'key'`), cells formatted as the service's CSV
 * writes them (ISO 8601 dates, `, `-joined choices, a leading `'` on formula-like text,
 * quotes where needed) and written in ~64 KB chunks that wait for 'drain'. No framework,
 * no auth, no row rules, no job queue, no storage copy.
 *
 * bench/exports.ts runs it with forkBaseline: a child given one JSON argument (BaselineSpec)
 * that answers `{ type: 'result', ...BaselineResult }` over IPC and exits.
 */
import { fork } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { once } from 'node:events'
import { finished } from 'node:stream/promises'
import { fileURLToPath, pathToFileURL } from 'node:url'
import pg from 'pg'
import { pgBackendCpu } from './common.ts'

/** One CSV column: a system column (`number`, `state`, `createdAt`, `updatedAt`, `createdBy`, `updatedBy`, `externalRef`) or a payload field with its field type. */
export interface BaselineColumn {
  key: string
  system: boolean
  type: string
}

export interface BaselineSpec {
  url: string
  tenantId: string
  moduleKey: string
  /** The CSV file to write. */
  out: string
  /** The header line, written as it is (the service's, so both files have the same columns). */
  header: string
  columns: BaselineColumn[]
  pageSize: number
}

export interface BaselineResult {
  rows: number
  bytes: number
  /** From before connecting to the file being flushed and closed (disconnecting not included). */
  ms: number
  /** CPU microseconds (user + system) of this process during the export. */
  cpuUs: number
  /** CPU microseconds of its PostgreSQL backend (read before disconnecting: the parent cannot see it afterwards); NaN without /proc. */
  pgCpuUs: number
  maxRssKiB: number
}

const systemSql: Record<string, string> = {
  number: 'number',
  state: 'state',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  createdBy: "created_by->>'name'",
  updatedBy: "updated_by->>'name'",
  externalRef: 'external_ref'
}
// Field types whose value is a JSON array/object: selected as jsonb (parsed by pg), formatted in JS.
const jsonTypes = new Set(['multipleChoice', 'location', 'group'])

function selectList(columns: BaselineColumn[]): string {
  return columns
    .map((c, i) => {
      if (c.system) return `${systemSql[c.key]} AS c${i}`
      if (!/^[A-Za-z0-9_]+$/.test(c.key)) throw new Error(`baseline: unexpected field key ${c.key}`)
      return `payload${jsonTypes.has(c.type) ? '->' : '->>'}'${c.key}' AS c${i}`
    })
    .join(', ')
}

const quote = (s: string) => (/[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s)
const inert = (s: string) => (/^[=+\-@\t\r]/.test(s) ? `'${s}` : s)

/** A cell as the service's CSV writes it (see plugins/exports/exports.csv.ts and derive/columns.ts). */
function cell(v: unknown, c: BaselineColumn): string {
  if (v === null || v === undefined || v === '') return ''
  if (v instanceof Date) return v.toISOString()
  switch (c.type) {
    case 'integer':
    case 'number':
    case 'boolean':
      return String(v)
    case 'datetime':
      return new Date(v as string).toISOString()
    case 'date':
      return v as string
    case 'multipleChoice':
      return Array.isArray(v) ? (v.length ? quote(inert(v.join(', '))) : '') : quote(inert(String(v)))
    case 'location': {
      const l = v as { latitude: number; longitude: number; label?: string }
      return quote(`${l.latitude}, ${l.longitude}${l.label ? ` (${l.label})` : ''}`)
    }
    default:
      return quote(inert(typeof v === 'string' ? v : JSON.stringify(v)))
  }
}

export async function baselineCsv(spec: BaselineSpec): Promise<BaselineResult> {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const client = new pg.Client({ connectionString: spec.url })
  await client.connect()
  const database = new URL(spec.url).pathname.slice(1)
  const backend: number = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid
  const pg0 = pgBackendCpu(database).get(backend) ?? NaN
  const out = createWriteStream(spec.out)
  const text = `SELECT seq, ${selectList(spec.columns)} FROM records
    WHERE tenant_id = $1 AND module_key = $2 AND deleted_at IS NULL AND seq > $3 ORDER BY seq LIMIT $4`
  let rows = 0
  let pgCpuUs: number
  let ms: number
  let cpuUs: number
  let after = '0'
  let buffer = spec.header + '\r\n'
  const n = spec.columns.length
  try {
    for (;;) {
      const page = await client.query({
        name: 'baseline-page',
        text,
        values: [spec.tenantId, spec.moduleKey, after, spec.pageSize],
        rowMode: 'array'
      })
      for (const r of page.rows as unknown[][]) {
        let line = cell(r[1], spec.columns[0])
        for (let i = 1; i < n; i++) line += ',' + cell(r[i + 1], spec.columns[i])
        buffer += line + '\r\n'
        if (buffer.length >= 65_536) {
          const more = out.write(buffer)
          buffer = ''
          if (!more) await once(out, 'drain')
        }
      }
      rows += page.rows.length
      if (page.rows.length < spec.pageSize) break
      after = String((page.rows[page.rows.length - 1] as unknown[])[0])
    }
    out.end(buffer)
    await finished(out)
    ms = performance.now() - t0
    const cpu = process.cpuUsage(cpu0)
    cpuUs = cpu.user + cpu.system
    pgCpuUs = (pgBackendCpu(database).get(backend) ?? NaN) - pg0
  } finally {
    await client.end()
  }
  return { rows, bytes: out.bytesWritten, ms, cpuUs, pgCpuUs, maxRssKiB: process.resourceUsage().maxRSS }
}

/** Splits a CSV header line (labels may be quoted). */
function headerCells(line: string): string[] {
  const cells: string[] = []
  for (const m of line.matchAll(/(?:^|,)(?:"((?:[^"]|"")*)"|([^,]*))/g))
    cells.push(m[1] !== undefined ? m[1].replaceAll('""', '"') : m[2])
  return cells
}

/** The columns of a service CSV, from its header labels: the system columns, then payload fields by label (or key). */
export function baselineColumns(
  header: string,
  fields: ReadonlyArray<{ key: string; label?: string; type: string }>
): BaselineColumn[] {
  const system: Record<string, BaselineColumn> = {
    Number: { key: 'number', system: true, type: 'text' },
    State: { key: 'state', system: true, type: 'text' },
    Created: { key: 'createdAt', system: true, type: 'datetime' },
    Updated: { key: 'updatedAt', system: true, type: 'datetime' },
    'Created by': { key: 'createdBy', system: true, type: 'text' },
    'Updated by': { key: 'updatedBy', system: true, type: 'text' },
    'External ref': { key: 'externalRef', system: true, type: 'text' }
  }
  return headerCells(header).map((label) => {
    if (system[label]) return system[label]
    // A user field has two columns, its user's name and `<label> (id)`; the seeded records leave user fields empty,
    // so the baseline writes the stored value for both (it has no names to look up).
    const field = fields.find((f) => (f.label ?? f.key) === label || `${f.label ?? f.key} (id)` === label)
    if (!field) throw new Error(`service CSV header "${label}" matches no column the baseline knows`)
    return { key: field.key, system: false, type: field.type }
  })
}

/** Runs the baseline in a child process of its own (tsx), so that its RSS and CPU are its own. */
export function forkBaseline(spec: BaselineSpec): Promise<BaselineResult> {
  const child = fork(fileURLToPath(import.meta.url), [JSON.stringify(spec)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  return new Promise((resolve, reject) => {
    let result: BaselineResult | undefined
    child.on('message', (msg: { type?: string } & BaselineResult) => {
      if (msg?.type === 'result') result = msg
    })
    child.once('exit', (code) =>
      result ? resolve(result) : reject(new Error(`exports baseline exited with code ${code} and no result`))
    )
  })
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.send) {
  const spec = JSON.parse(process.argv[2]) as BaselineSpec
  baselineCsv(spec).then(
    (r) => process.send!({ type: 'result', ...r }, () => process.exit(0)),
    (err) => {
      process.stderr.write(`exports baseline failed: ${err?.stack ?? err}\n`)
      process.exit(1)
    }
  )
}
