import type { Writable } from 'node:stream'
import type { ExportColumn, ExportRecord } from '../modules/derive/columns.ts'
import { renderCsv } from './render-csv.ts'
import { renderPdf } from './render-pdf.ts'
import { renderXlsx } from './render-xlsx.ts'

export type ExportFormat = 'csv' | 'xlsx' | 'pdf'

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
  /** CSV only: start with a UTF-8 byte order mark, which older Excel needs to read UTF-8. */
  csvBom?: boolean
}

export type Renderer = (input: RenderInput, out: Writable) => Promise<{ rows: number }>

const renderers: Record<ExportFormat, Renderer> = { csv: renderCsv, xlsx: renderXlsx, pdf: renderPdf }

/**
 * Streams the rows into `out` in one format and ends `out`; resolves with the row count once
 * everything is handed to `out`. On failure `out` is destroyed (its content is unusable).
 */
export async function render(format: ExportFormat, input: RenderInput, out: Writable): Promise<{ rows: number }> {
  const renderer = renderers[format]
  if (!renderer) throw new Error(`Unknown export format "${String(format)}"; allowed: ${Object.keys(renderers).join(', ')}`)
  if (!input.columns.length) throw new Error('An export needs at least one column')
  try {
    return await renderer(input, out)
  } catch (err) {
    // No error argument: an 'error' event nobody listens to would crash the process.
    if (!out.destroyed) out.destroy()
    throw err
  }
}
