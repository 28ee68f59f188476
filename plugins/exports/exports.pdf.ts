import type { Writable } from 'node:stream'
import PDFDocument from 'pdfkit'
import type { CellValue, ColumnSpec, ExportColumn, ExportRecord } from '../../core/modules/derive/columns.ts'
import { pageTotal, printable, rgb, utcText } from './pdf-kit.ts'
import { drained, outputFinished } from './exports.csv.ts'
import {
  tooManyPdfRows,
  type ChunkFormat,
  type FileInput,
  type RenderedPiece,
  type RenderInput
} from './exports.render.ts'

/** More columns than this make an unreadable A4 page; the CSV and XLSX exports carry them all. */
export const maxPdfColumns = 8

const margin = 36
const footerSpace = 18
const fontSize = 8
const cellPad = 3
/** Longer cells are cut with an ellipsis, so a row never outgrows a page. */
const maxCellLines = 4
const colours = { header: '#d9dee5', stripe: '#f2f4f7', rule: '#b8c0cc', text: '#111111', muted: '#555555' }
/** Rows measured before the columns are laid out: enough to see typical cells, bounded memory. */
const sampleRows = 100
/** No cell is measured past this many characters: it wraps anyway. */
const measureChars = 200
/** A column narrower than this cannot show a word. */
const minColumn = 36

function cellText(c: CellValue, kind: ColumnSpec['kind']): string {
  if (c === null || c === undefined) return ''
  if (c instanceof Date) return kind === 'date' ? c.toISOString().slice(0, 10) : utcText(c)
  if (typeof c === 'boolean') return c ? 'yes' : 'no'
  return String(c)
}

interface Layout {
  columns: ExportColumn[]
  widths: number[]
  xs: number[]
}

/**
 * The first columns, up to `maxPdfColumns`, sized from their content: each column's natural
 * width is its header or its widest sampled cell on one line. Columns whose natural width fits
 * a fair share of what is left get it (dates, states, names, numbers: they never wrap); the
 * others share the rest in proportion to their natural widths, and wrap.
 */
export function layoutColumns(
  doc: PDFKit.PDFDocument,
  all: ExportColumn[],
  sample: readonly ExportRecord[],
  left: number,
  available: number
): Layout {
  const columns = all.slice(0, maxPdfColumns)
  const natural = columns.map((c) => {
    doc.font('Helvetica-Bold').fontSize(fontSize)
    let w = doc.widthOfString(printable(c.header))
    doc.font('Helvetica').fontSize(fontSize)
    for (const r of sample) {
      const text = printable(cellText(c.get(r), c.kind).slice(0, measureChars))
      for (const line of text.split('\n')) w = Math.max(w, doc.widthOfString(line))
    }
    return Math.max(minColumn, Math.ceil(w + 2 * cellPad + 1))
  })
  const widths = natural.map(() => 0)
  let open = natural.map((_, i) => i)
  let room = available
  for (;;) {
    const fair = room / open.length
    const fits = open.filter((i) => natural[i] <= fair)
    if (!fits.length) break
    for (const i of fits) {
      widths[i] = natural[i]
      room -= natural[i]
    }
    open = open.filter((i) => natural[i] > fair)
    if (!open.length) break
  }
  if (open.length) {
    const want = open.reduce((a, i) => a + natural[i], 0)
    for (const i of open) widths[i] = Math.max(minColumn, (natural[i] / want) * room)
  } else if (room > 0) {
    // Everything fits: the spare width is shared in proportion, so the table spans the page.
    const base = widths.reduce((a, b) => a + b, 0)
    for (let i = 0; i < widths.length; i++) widths[i] += (widths[i] / base) * room
  }
  // Minimums can overshoot a crowded page: scale back to the page.
  const total = widths.reduce((a, b) => a + b, 0)
  if (total > available) for (let i = 0; i < widths.length; i++) widths[i] *= available / total
  const xs: number[] = []
  widths.reduce((x, w) => (xs.push(x), x + w), left)
  return { columns, widths, xs }
}

/** The first `n` items of `source` read ahead, and the whole sequence still to be read once. */
async function peek<T>(source: AsyncIterable<T>, n: number): Promise<{ head: T[]; all: AsyncIterable<T> }> {
  const it = source[Symbol.asyncIterator]()
  const head: T[] = []
  let done = false
  while (head.length < n) {
    const next = await it.next()
    if (next.done) {
      done = true
      break
    }
    head.push(next.value)
  }
  async function* all() {
    yield* head
    head.length = 0
    if (done) return
    for (;;) {
      const next = await it.next()
      if (next.done) return
      yield next.value
    }
  }
  return { head, all: all() }
}

/**
 * A4 landscape report: heading, then a table whose header row repeats on every page.
 * Pages are written out as they fill (no `bufferPages`), so memory stays flat however many
 * rows come; the footer's "of m" is one form XObject every page draws, written at the end.
 * Column widths come from the header and the first 100 rows (read ahead, then rendered).
 * Text outside Windows-1252 prints as "?" (standard fonts); the CSV and XLSX exports keep it.
 */
export async function renderPdf(input: RenderInput, out: Writable): Promise<{ rows: number }> {
  const doc = new PDFDocument({
    size: 'A4',
    layout: 'landscape',
    margin,
    bufferPages: false,
    info: { Title: input.title, Author: input.tenantName, Subject: input.moduleTitle, CreationDate: input.generatedAt }
  })
  doc.pipe(out)
  const pageWidth = doc.page.width
  const pageHeight = doc.page.height
  const contentWidth = pageWidth - 2 * margin
  const tableBottom = pageHeight - margin - footerSpace
  const { head, all: rowsToRender } = await peek(input.rows, sampleRows)
  const layout = layoutColumns(doc, input.columns, head, margin, contentWidth)
  const total = pageTotal(doc, { size: 7, colour: rgb(colours.muted) })
  let page = 1

  const footer = () => {
    const { x, y: keepY } = doc
    // Inside the bottom margin: lift the margin for a moment so pdfkit does not start a new page.
    doc.page.margins.bottom = 0
    doc.font('Helvetica').fontSize(7).fillColor(colours.muted)
    const y = pageHeight - margin - 9
    doc.text(
      printable(`${input.title} · ${input.tenantName} · generated ${utcText(input.generatedAt)} UTC`),
      margin,
      y,
      { width: contentWidth - 80, lineBreak: false, ellipsis: true, height: 10 }
    )
    // "Page n of " ends where the total (drawn from the XObject) begins; the total is left-aligned after it.
    const label = `Page ${page} of `
    const totalX = pageWidth - margin - 28
    doc.text(label, totalX - doc.widthOfString(label), y, { lineBreak: false })
    total.draw(totalX, y)
    doc.page.margins.bottom = margin
    doc.x = x
    doc.y = keepY
  }
  doc.on('pageAdded', () => {
    page++
    footer()
  })
  footer()

  const headerTexts = layout.columns.map((c) => printable(c.header))
  const headerRow = (y: number) => {
    doc.font('Helvetica-Bold').fontSize(fontSize)
    const h =
      Math.max(...headerTexts.map((t, i) => doc.heightOfString(t, { width: layout.widths[i] - 2 * cellPad }))) +
      2 * cellPad
    doc.rect(margin, y, contentWidth, h).fill(colours.header)
    doc.fillColor(colours.text)
    headerTexts.forEach((t, i) =>
      doc.text(t, layout.xs[i] + cellPad, y + cellPad, {
        width: layout.widths[i] - 2 * cellPad,
        height: h - 2 * cellPad,
        ellipsis: true
      })
    )
    return y + h
  }

  // Heading (first page only).
  doc
    .font('Helvetica-Bold')
    .fontSize(16)
    .fillColor(colours.text)
    .text(printable(input.title), margin, margin, { width: contentWidth })
  doc.moveDown(0.3)
  const allFilters = input.filters.map(([k, v]) => `${k}: ${v}`).join('; ')
  // Clipped so the heading always fits on the first page.
  const filters = !input.filters.length
    ? 'none'
    : allFilters.length > 1500
      ? `${allFilters.slice(0, 1500)}… (see the export request for all filters)`
      : allFilters
  const facts: Array<[string, string]> = [
    ['Tenant', input.tenantName],
    ['Module', input.moduleTitle],
    ['Filters', filters],
    ['Generated', `${utcText(input.generatedAt, true)} UTC (all times in this report are UTC)`]
  ]
  if (input.columnNote) facts.push(['Columns', input.columnNote])
  else if (input.columns.length > layout.columns.length) {
    facts.push([
      'Columns',
      `${layout.columns.length} of ${input.columns.length} shown (${layout.columns.map((c) => c.header).join(', ')}); the CSV and XLSX exports contain all columns.`
    ])
  }
  for (const [label, text] of facts) {
    doc
      .font('Helvetica-Bold')
      .fontSize(9)
      .fillColor(colours.text)
      .text(`${label}: `, { continued: true, width: contentWidth })
    doc.font('Helvetica').text(printable(text))
  }
  let y = headerRow(doc.y + 10)

  doc.font('Helvetica').fontSize(fontSize)
  const lineHeight = doc.currentLineHeight(true)
  // Enough characters for the visible lines of the narrowest glyphs; measuring 20 000 characters is slow.
  const clipAt = layout.widths.map((w) => Math.ceil(((w - 2 * cellPad) / (fontSize * 0.25)) * maxCellLines))
  const maxTextHeight = lineHeight * maxCellLines

  let rows = 0
  for await (const record of rowsToRender) {
    if (input.maxRows !== undefined && rows >= input.maxRows)
      throw tooManyPdfRows(`more than ${input.maxRows}`, input.maxRows)
    doc.font('Helvetica').fontSize(fontSize)
    const texts = layout.columns.map((c, i) => printable(cellText(c.get(record), c.kind).slice(0, clipAt[i])))
    const textHeight = Math.min(
      maxTextHeight,
      Math.max(
        lineHeight,
        ...texts.map((t, i) => (t ? doc.heightOfString(t, { width: layout.widths[i] - 2 * cellPad }) : 0))
      )
    )
    const h = textHeight + 2 * cellPad
    if (y + h > tableBottom) {
      doc.addPage()
      y = headerRow(margin)
      doc.font('Helvetica').fontSize(fontSize)
      // Each finished page has just been written to `out`: wait here while it is full.
      await drained(out)
    }
    if (rows % 2 === 1) doc.rect(margin, y, contentWidth, h).fill(colours.stripe)
    doc.fillColor(colours.text)
    texts.forEach((t, i) => {
      if (!t) return
      const numeric = layout.columns[i].kind === 'number' || layout.columns[i].kind === 'integer'
      doc.text(t, layout.xs[i] + cellPad, y + cellPad, {
        width: layout.widths[i] - 2 * cellPad,
        height: textHeight,
        ellipsis: true,
        align: numeric ? 'right' : 'left'
      })
    })
    doc
      .moveTo(margin, y + h)
      .lineTo(margin + contentWidth, y + h)
      .lineWidth(0.3)
      .strokeColor(colours.rule)
      .stroke()
    y += h
    rows++
  }

  if (y + 30 > tableBottom) {
    doc.addPage()
    y = margin
  }
  doc.font('Helvetica-Bold').fontSize(9).fillColor(colours.text)
  doc.text(`${rows} ${rows === 1 ? 'record' : 'records'} · end of report`, margin, y + 10, { width: contentWidth })

  total.finish(page)
  const done = outputFinished(out)
  doc.end()
  await done
  return { rows }
}

/** The fields of a record the columns read, as a PDF chunk stores it (JSON). */
const storedRecord = (r: ExportRecord): ExportRecord => ({
  number: r.number,
  state: r.state,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
  createdBy: r.createdBy,
  updatedBy: r.updatedBy,
  externalRef: r.externalRef ?? null,
  payload: r.payload
})

async function* storedRecords(pieces: AsyncIterable<RenderedPiece>): AsyncGenerator<ExportRecord> {
  for await (const piece of pieces) yield* JSON.parse(piece.data) as ExportRecord[]
}

/**
 * A PDF's chunks keep their records as JSON: its column widths are measured on the first rows
 * and its page total is known only at the end, so the file is laid out in one pass over them all
 * (at most `exports.pdfMaxRows`, where CSV and XLSX chunks hold their rows already written).
 */
export const pdfFormat: ChunkFormat = {
  encode: (_columns, records) => JSON.stringify(records.map(storedRecord)),
  assemble: (input: FileInput, pieces, out) => renderPdf({ ...input, rows: storedRecords(pieces) }, out)
}
