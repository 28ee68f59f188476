import type { Writable } from 'node:stream'
import type { CellValue, ColumnSpec, ExportColumn, ExportRecord } from '../../core/modules/derive/columns.ts'
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
  // Strings first: most cells are.
  if (typeof c === 'string') return csvText(c)
  if (c === null || c === undefined) return ''
  if (c instanceof Date) return kind === 'date' ? c.toISOString().slice(0, 10) : c.toISOString()
  if (typeof c === 'number') return String(c)
  if (typeof c === 'boolean') return c ? 'true' : 'false'
  return csvText(String(c))
}

const needsQuotes = /[",\r\n]/

/** `inertText`, then quoted when it holds a quote, comma or line break. */
function csvText(s: string): string {
  if (s === '') return s
  const c = s.charCodeAt(0)
  // = + - @ TAB CR, as inertText: tested on the first character instead of a regular expression per cell.
  if (c === 61 || c === 43 || c === 45 || c === 64 || c === 9 || c === 13) s = `'${s}`
  return needsQuotes.test(s) ? `"${s.replaceAll('"', '""')}"` : s
}

const isDigit = (s: string, i: number) => {
  const c = s.charCodeAt(i)
  return c >= 48 && c <= 57
}
/** Where the digits of `YYYY-MM-DDTHH:MM:SS` are. */
const isoDigits = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
const twoDigits = (s: string, i: number) => (s.charCodeAt(i) - 48) * 10 + s.charCodeAt(i + 1) - 48

/**
 * What `new Date(s).toISOString()` gives for a date-time stored as ISO text in UTC
 * (`YYYY-MM-DDTHH:MM:SS.sssZ`, or without the milliseconds), without a Date; undefined for anything
 * else, and for days past the 28th (whether they exist depends on the month: left to Date).
 */
export function isoUtcText(s: string): string | undefined {
  const n = s.length
  if (n !== 24 && n !== 20) return undefined
  if (s[4] !== '-' || s[7] !== '-' || s[10] !== 'T' || s[13] !== ':' || s[16] !== ':' || s[n - 1] !== 'Z')
    return undefined
  for (const i of isoDigits) if (!isDigit(s, i)) return undefined
  if (n === 24 && (s[19] !== '.' || !isDigit(s, 20) || !isDigit(s, 21) || !isDigit(s, 22))) return undefined
  const month = twoDigits(s, 5)
  const day = twoDigits(s, 8)
  if (month < 1 || month > 12 || day < 1 || day > 28) return undefined
  if (twoDigits(s, 11) > 23 || twoDigits(s, 14) > 59 || twoDigits(s, 17) > 59) return undefined
  return n === 24 ? s : `${s.slice(0, 19)}.000Z`
}

type CellText = (record: ExportRecord) => string

/** One column's cell as CSV text, specialised once per export: date-times stored as ISO text go through as they are. */
function cellText(c: ExportColumn): CellText {
  const kind = c.kind
  if (kind === 'datetime' && c.read) {
    const column = c as ExportColumn & Required<Pick<ExportColumn, 'read'>>
    return (r) => {
      const v = column.read(r)
      const iso = typeof v === 'string' ? isoUtcText(v) : undefined
      return iso ?? csvField(column.value(v), kind)
    }
  }
  return (r) => csvField(c.get(r), kind)
}

const compiled = new WeakMap<readonly ExportColumn[], CellText[]>()

/** The columns' cell writers, made once per columns array (an export encodes every page with the same one). */
function cellsOf(columns: readonly ExportColumn[]): CellText[] {
  let cells = compiled.get(columns)
  if (!cells) compiled.set(columns, (cells = columns.map(cellText)))
  return cells
}

const flushAt = 64 * 1024

/** Data rows as CSV lines (CRLF after each): what an export chunk stores of them. */
export function csvRows(columns: RenderInput['columns'], records: Iterable<ExportRecord>): string {
  let text = ''
  const cells = cellsOf(columns)
  const n = cells.length
  for (const record of records) {
    // Concatenated in place (no array of cells and join per row): a million rows make a million fewer arrays.
    text += cells[0](record)
    for (let i = 1; i < n; i++) text += ',' + cells[i](record)
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
      if (piece.bytes) {
        // Already UTF-8 (the chunk's bytes): written whole after what waits, not encoded a second time.
        if (buffer) out.write(buffer, 'utf8')
        buffer = ''
        if (!out.write(piece.bytes)) await drained(out)
        return
      }
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
