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

/** What the file is made of besides its rows. */
export type FileInput = Omit<RenderInput, 'rows'>

/** Rows as one export chunk stores them (`data`), and how many. */
export interface RenderedPiece {
  data: string
  rows: number
  /** `data` as UTF-8, when the caller has it already (the job encodes a chunk once for PostgreSQL): written as it is. */
  bytes?: Buffer
}

/**
 * One format's two halves, which the export job runs apart: `encode` writes rows as the format
 * stores them in a chunk (CSV lines, SpreadsheetML rows; the PDF keeps its records as JSON, its
 * layout needs them all), numbered from `first` (0 is the first data row); `assemble` writes the
 * whole file from the pieces in order and ends `out`. `render` is the two in one pass.
 */
export interface ChunkFormat {
  encode(columns: ExportColumn[], records: readonly ExportRecord[], first: number): string | Promise<string>
  assemble(input: FileInput, pieces: AsyncIterable<RenderedPiece>, out: Writable): Promise<{ rows: number }>
  /**
   * The file written piece by piece as they come (CSV, XLSX; not the PDF, laid out once it has every
   * row): what `assemble` does, driven by the caller. The export job writes a run's pieces straight
   * to the file when the run read every row itself, and assembles from the chunks after a resume.
   */
  open?(input: FileInput, out: Writable): FileWriter
  /** Its encoded text is compressed already (XLSX: deflated segments), so a chunk stores it as it is, not deflated again. */
  compressed?: boolean
}

export interface FileWriter {
  write(piece: RenderedPiece): Promise<void>
  /** Ends the file and `out`; resolves once `out` has flushed, with the rows written. */
  end(): Promise<{ rows: number }>
}

/** `assemble` of a format that writes piece by piece. */
export function assembleWith(open: (input: FileInput, out: Writable) => FileWriter): ChunkFormat['assemble'] {
  return async (input, pieces, out) => {
    const file = open(input, out)
    for await (const piece of pieces) await file.write(piece)
    return file.end()
  }
}

/** Rows a piece holds when `render` runs both halves in one pass. */
const pieceRows = 500

/** Records as rendered pieces of up to 500 rows, numbered on from 0 (`render` in one pass). */
export async function* piecesOf(
  records: AsyncIterable<ExportRecord>,
  encode: (records: ExportRecord[], first: number) => string | Promise<string>
): AsyncGenerator<RenderedPiece> {
  let batch: ExportRecord[] = []
  let first = 0
  for await (const record of records) {
    batch.push(record)
    if (batch.length < pieceRows) continue
    yield { data: await encode(batch, first), rows: batch.length }
    first += batch.length
    batch = []
  }
  if (batch.length) yield { data: await encode(batch, first), rows: batch.length }
}

interface FormatModule {
  render: Renderer
  chunks: ChunkFormat
}

/**
 * Each renderer is loaded on its first use: pdfkit and its fonts hold tens of MiB,
 * which a service that never renders that format should not carry.
 */
const renderers: Record<ExportFormat, () => Promise<FormatModule>> = {
  csv: async () => {
    const m = await import('./exports.csv.ts')
    return { render: m.renderCsv, chunks: m.csvFormat }
  },
  xlsx: async () => {
    const m = await import('./exports.xlsx.ts')
    return { render: m.renderXlsx, chunks: m.xlsxFormat }
  },
  pdf: async () => {
    const m = await import('./exports.pdf.ts')
    return { render: m.renderPdf, chunks: m.pdfFormat }
  }
}

function loader(format: ExportFormat): () => Promise<FormatModule> {
  const load = renderers[format]
  if (!load) throw new Error(`Unknown export format "${String(format)}"; allowed: ${Object.keys(renderers).join(', ')}`)
  return load
}

/** The format's chunk halves (the export job: rows encoded as they are read, the file assembled from the chunks). */
export async function chunkFormat(format: ExportFormat): Promise<ChunkFormat> {
  return (await loader(format)()).chunks
}

/**
 * Writes the file from stored pieces (`chunkFormat(format).encode`'s) and ends `out`; on failure
 * `out` is destroyed, as with `render`.
 */
export async function assemble(
  format: ExportFormat,
  input: FileInput,
  pieces: AsyncIterable<RenderedPiece>,
  out: Writable
): Promise<{ rows: number }> {
  if (!input.columns.length) throw new Error('An export needs at least one column')
  try {
    return await (await loader(format)()).chunks.assemble(input, pieces, out)
  } catch (err) {
    if (!out.destroyed) out.destroy()
    throw err
  }
}

/**
 * Streams the rows into `out` in one format and ends `out`; resolves with the row count once
 * everything is handed to `out`. On failure `out` is destroyed (its content is unusable).
 */
export async function render(format: ExportFormat, input: RenderInput, out: Writable): Promise<{ rows: number }> {
  const load = loader(format)
  if (!input.columns.length) throw new Error('An export needs at least one column')
  try {
    const { render } = await load()
    return await render(input, out)
  } catch (err) {
    // No error argument: an 'error' event nobody listens to would crash the process.
    if (!out.destroyed) out.destroy()
    throw err
  }
}
