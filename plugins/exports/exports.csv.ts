import type { Writable } from 'node:stream'
import type { CellValue, ColumnSpec, ExportRecord } from '../../core/modules/derive/columns.ts'
import {
  assembleWith,
  piecesOf,
  type ChunkFormat,
  type FileInput,
  type FileWriter,
  type RenderInput
} from './exports.render.ts'

/**
 * Text a spreadsheet would read as a formula gets a leading `'` (OWASP CSV injection guidance).
 * Only strings pass through here, so typed numbers such as -2 stay as they are.
 */
export function inertText(s: string): string {
  return /^[=+\-@\t\r]/.test(s) ? `'${s}` : s
}

/** Resolves once `out` wants more data; rejects when it has failed or closed. */
export function drained(out: Writable): Promise<void> {
  if (out.errored || out.destroyed) return Promise.reject(out.errored ?? new Error('The export output was closed'))
  if (!out.writableNeedDrain) return Promise.resolve()
  return waitFor(out, 'drain')
}

/** Resolves when `out` has flushed everything after its end ('finish'), whoever ends it. */
export function outputFinished(out: Writable): Promise<void> {
  if (out.writableFinished) return Promise.resolve()
  if (out.errored || out.destroyed) return Promise.reject(out.errored ?? new Error('The export output was closed'))
  return waitFor(out, 'finish')
}

function waitFor(out: Writable, event: 'drain' | 'finish'): Promise<void> {
  return new Promise((resolve, reject) => {
    const settle = (err?: Error) => {
      out.off(event, onEvent)
      out.off('error', onError)
      out.off('close', onClose)
      if (err) reject(err)
      else resolve()
    }
    const onEvent = () => settle()
    const onError = (err: Error) => settle(err)
    const onClose = () =>
      event === 'finish' && out.writableFinished
        ? settle()
        : settle(new Error(`The export output closed before '${event}'`))
    out.on(event, onEvent)
    out.on('error', onError)
    out.on('close', onClose)
  })
}

/** A cell as RFC 4180 text: ISO dates, `true`/`false`, plain numbers, inert and quoted strings. */
export function csvField(c: CellValue, kind: ColumnSpec['kind']): string {
  if (c === null || c === undefined) return ''
  let s: string
  if (c instanceof Date) s = kind === 'date' ? c.toISOString().slice(0, 10) : c.toISOString()
  else if (typeof c === 'number') s = String(c)
  else if (typeof c === 'boolean') s = c ? 'true' : 'false'
  else s = inertText(String(c))
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s
}

const flushAt = 64 * 1024

/** Data rows as CSV lines (CRLF after each): what an export chunk stores of them. */
export function csvRows(columns: RenderInput['columns'], records: Iterable<ExportRecord>): string {
  let text = ''
  const n = columns.length
  for (const record of records) {
    // Concatenated in place (no array of cells and join per row): a million rows make a million fewer arrays.
    for (let i = 0; i < n; i++) {
      const c = columns[i]
      if (i) text += ','
      text += csvField(c.get(record), c.kind)
    }
    text += '\r\n'
  }
  return text
}

/**
 * RFC 4180 CSV (CRLF, UTF-8, optional BOM) from rows already written as lines (`csvRows`), in
 * order: the header, then each piece as it is, in ~64 KB writes that wait for 'drain'.
 */
export function openCsv(input: FileInput, out: Writable): FileWriter {
  let buffer = (input.csvBom ? '\uFEFF' : '') + input.columns.map((c) => csvField(c.header, 'text')).join(',') + '\r\n'
  let rows = 0
  return {
    async write(piece) {
      rows += piece.rows
      buffer += piece.data
      // A chunk's text (hundreds of KB) goes out in ~64 KB writes, each waiting for 'drain'.
      let at = 0
      while (buffer.length - at >= flushAt) {
        let end = at + flushAt
        // Never between the two halves of a surrogate pair: each write is encoded to UTF-8 on its own.
        const last = buffer.charCodeAt(end - 1)
        if (last >= 0xd800 && last <= 0xdbff) end--
        const more = out.write(buffer.slice(at, end), 'utf8')
        at = end
        if (!more) await drained(out)
      }
      buffer = at ? buffer.slice(at) : buffer
    },
    async end() {
      const done = outputFinished(out)
      out.end(buffer, 'utf8')
      await done
      return { rows }
    }
  }
}

export const assembleCsv = assembleWith(openCsv)

export const csvFormat: ChunkFormat = {
  encode: (columns, records) => csvRows(columns, records),
  assemble: assembleCsv,
  open: openCsv
}

/** RFC 4180 CSV of records: their lines (`csvRows`) assembled as an export's chunks are. */
export function renderCsv(input: RenderInput, out: Writable): Promise<{ rows: number }> {
  return assembleCsv(
    input,
    piecesOf(input.rows, (records) => csvRows(input.columns, records)),
    out
  )
}
