/**
 * The floor of `npm run bench:bulk`: the same incident rows written by PostgreSQL's COPY
 * straight into `records`, text format generated on the fly. No validation, no
 * numbering counter, no activity rows, no outcomes: what it costs to get the bytes into
 * the table and its indexes.
 */
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'
import { bulkPayload } from './bulk-load.ts'

export interface CopyRows {
  tenantId: string
  moduleKey: string
  moduleVersion: string
  state: string
  /** created_by / updated_by, as JSON: the actor the service records for the bench API key. */
  actor: string
}

const columns = '(tenant_id, module_key, module_version, number, state, payload, created_by, updated_by)'

/** COPY text format: backslash, tab, newline and carriage return escaped. */
const field = (s: string) =>
  /[\\\t\n\r]/.test(s)
    ? s.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]!)
    : s

function* copyLines(r: CopyRows, tag: string, from: number, to: number, chunkRows = 250): Generator<string> {
  const fixed = `${field(r.tenantId)}\t${field(r.moduleKey)}\t${field(r.moduleVersion)}\t`
  const actor = field(r.actor)
  for (let start = from; start < to; start += chunkRows) {
    let chunk = ''
    for (let i = start; i < Math.min(to, start + chunkRows); i++) {
      chunk += `${fixed}CPY-${tag}-${i + 1}\t${field(r.state)}\t${field(JSON.stringify(bulkPayload(tag, i)))}\t${actor}\t${actor}\n`
    }
    yield chunk
  }
}

/** `rows` rows in COPY statements of `perCall` rows each (each its own transaction, as each bulk call is), one after another. */
export async function copyLoad(client: pg.Client, r: CopyRows, tag: string, rows: number, perCall: number) {
  const started = performance.now()
  let copied = 0
  for (let from = 0; from < rows; from += perCall) {
    const stream = client.query(copyFrom(`COPY records ${columns} FROM STDIN`))
    await pipeline(Readable.from(copyLines(r, tag, from, Math.min(rows, from + perCall))), stream)
    copied += stream.rowCount
  }
  if (copied !== rows) throw new Error(`COPY wrote ${copied} rows, expected ${rows}`)
  return { rows, ms: performance.now() - started }
}
