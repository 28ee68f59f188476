import type { Writable } from 'node:stream'
import type { ExportColumn, ExportRecord } from '../../core/modules/derive/columns.ts'
import { ApiError } from '../../core/errors/index.ts'
import type { ExportFormat } from './exports.shared.ts'

export type { ExportFormat }

export interface RenderInput {
  title: string
  tenantName: string
  moduleTitle: string
  /** Human-readable filter descriptions, `[name, value]`, shown in the PDF heading. */
  filters: Array<[string, string]>
  generatedAt: Date
  columns: ExportColumn[]
  /** Read once, in order, one record at a time: pass a generator over database pages, never an array of everything. */
  rows: AsyncIterable<ExportRecord>
  /** PDF only: what the heading says of the columns shown (e.g. that they are the module's summary). */
  columnNote?: string
  /** CSV only: start with a UTF-8 byte order mark, which older Excel needs to read UTF-8. */
  csvBom?: boolean
  /** PDF only: the rows it may hold (`exports.pdfMaxRows`); one more fails the render with `tooManyPdfRows`. */
  maxRows?: number
}

/**
 * The refusal of a PDF past `exports.pdfMaxRows`, the same when the request is checked, when the
 * job starts and if the rows grew while it read them. A PDF renders at a few thousand rows a second
 * into pages nobody reads to the end; CSV streams any number of rows and XLSX up to a worksheet's 1,048,575, at tens of thousands a second.
 */
export function tooManyPdfRows(rows: number | string, maxRows: number): ApiError {
  return new ApiError(
    'unprocessable',
    'export.too_many_rows',
    `A PDF export holds at most ${maxRows} rows and these filters select ${rows}. Narrow the filters, choose fewer rows, or export CSV (any number of rows) or XLSX (up to 1,048,575 rows, a worksheet's limit).`,
    { maxRows }
  )
}

export type Renderer = (input: RenderInput, out: Writable) => Promise<{ rows: number }>

/**
 * Each renderer is loaded on its first use: pdfkit and its fonts hold tens of MiB,
 * which a service that never renders that format should not carry.
 */
const renderers: Record<ExportFormat, () => Promise<Renderer>> = {
  csv: async () => (await import('./exports.csv.ts')).renderCsv,
  xlsx: async () => (await import('./exports.xlsx.ts')).renderXlsx,
  pdf: async () => (await import('./exports.pdf.ts')).renderPdf
}

/**
 * Streams the rows into `out` in one format and ends `out`; resolves with the row count once
 * everything is handed to `out`. On failure `out` is destroyed (its content is unusable).
 */
export async function render(format: ExportFormat, input: RenderInput, out: Writable): Promise<{ rows: number }> {
  const load = renderers[format]
  if (!load) throw new Error(`Unknown export format "${String(format)}"; allowed: ${Object.keys(renderers).join(', ')}`)
  if (!input.columns.length) throw new Error('An export needs at least one column')
  try {
    const renderer = await load()
    return await renderer(input, out)
  } catch (err) {
    // No error argument: an 'error' event nobody listens to would crash the process.
    if (!out.destroyed) out.destroy()
    throw err
  }
}
