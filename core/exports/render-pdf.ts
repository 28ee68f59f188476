import type { Writable } from 'node:stream'
import PDFDocument from 'pdfkit'
import type { CellValue, ColumnSpec, ExportColumn } from '../modules/derive/columns.ts'
import { drained, outputFinished } from './render-csv.ts'
import type { RenderInput } from './render.ts'

/** More columns than this make an unreadable A4 page; the CSV and XLSX exports carry them all. */
export const maxPdfColumns = 8

const margin = 36
const footerSpace = 18
const fontSize = 8
const cellPad = 3
/** Longer cells are cut with an ellipsis, so a row never outgrows a page. */
const maxCellLines = 4
const colours = { header: '#d9dee5', stripe: '#f2f4f7', rule: '#b8c0cc', text: '#111111', muted: '#555555' }

// The standard PDF fonts only encode Windows-1252; anything else would print as garbage.
const winAnsiExtras = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ')
function printable(s: string): string {
  let out = ''
  for (const ch of s) {
    const code = ch.codePointAt(0)!
    if (ch === '\n') out += ch
    else if (code < 0x20 || code === 0x7f) out += ' '
    else if (code < 0x7f || (code >= 0xa0 && code <= 0xff) || winAnsiExtras.has(ch)) out += ch
    else out += '?'
  }
  return out
}

const pad2 = (n: number) => String(n).padStart(2, '0')
function utcText(d: Date, seconds = false): string {
  const base = `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())} ${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}`
  return seconds ? `${base}:${pad2(d.getUTCSeconds())}` : base
}

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

/** The first columns, up to `maxPdfColumns`, sharing the page width in proportion to their preferred widths. */
function layoutColumns(all: ExportColumn[], left: number, available: number): Layout {
  const columns = all.slice(0, maxPdfColumns)
  const want = columns.map((c) => Math.min(Math.max(c.width, 6), 40))
  const total = want.reduce((a, b) => a + b, 0)
  const widths = want.map((w) => (w / total) * available)
  const xs: number[] = []
  widths.reduce((x, w) => (xs.push(x), x + w), left)
  return { columns, widths, xs }
}

/**
 * A4 landscape report: heading, then a table whose header row repeats on every page.
 * Pages are written out as they fill (no `bufferPages`), so memory stays flat however many
 * rows come; the price is a footer of "Page n" without the total, which is only known at the end.
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
  const layout = layoutColumns(input.columns, margin, contentWidth)
  let page = 1

  const footer = () => {
    const { x, y: keepY } = doc
    // Inside the bottom margin: lift the margin for a moment so pdfkit does not start a new page.
    doc.page.margins.bottom = 0
    doc.font('Helvetica').fontSize(7).fillColor(colours.muted)
    const y = pageHeight - margin - 9
    doc.text(printable(`${input.title} · ${input.tenantName} · generated ${utcText(input.generatedAt)} UTC`), margin, y, { width: contentWidth - 80, lineBreak: false, ellipsis: true, height: 10 })
    doc.text(`Page ${page}`, pageWidth - margin - 80, y, { width: 80, align: 'right', lineBreak: false })
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
    const h = Math.max(...headerTexts.map((t, i) => doc.heightOfString(t, { width: layout.widths[i] - 2 * cellPad }))) + 2 * cellPad
    doc.rect(margin, y, contentWidth, h).fill(colours.header)
    doc.fillColor(colours.text)
    headerTexts.forEach((t, i) => doc.text(t, layout.xs[i] + cellPad, y + cellPad, { width: layout.widths[i] - 2 * cellPad, height: h - 2 * cellPad, ellipsis: true }))
    return y + h
  }

  // Heading (first page only).
  doc.font('Helvetica-Bold').fontSize(16).fillColor(colours.text).text(printable(input.title), margin, margin, { width: contentWidth })
  doc.moveDown(0.3)
  const allFilters = input.filters.map(([k, v]) => `${k}: ${v}`).join('; ')
  // Clipped so the heading always fits on the first page.
  const filters = !input.filters.length ? 'none' : allFilters.length > 1500 ? `${allFilters.slice(0, 1500)}… (see the export request for all filters)` : allFilters
  const facts: Array<[string, string]> = [
    ['Tenant', input.tenantName],
    ['Module', input.moduleTitle],
    ['Filters', filters],
    ['Generated', `${utcText(input.generatedAt, true)} UTC (all times in this report are UTC)`]
  ]
  if (input.columns.length > layout.columns.length) {
    facts.push(['Columns', `${layout.columns.length} of ${input.columns.length} shown (${layout.columns.map((c) => c.header).join(', ')}); the CSV and XLSX exports contain all columns.`])
  }
  for (const [label, text] of facts) {
    doc.font('Helvetica-Bold').fontSize(9).fillColor(colours.text).text(`${label}: `, { continued: true, width: contentWidth })
    doc.font('Helvetica').text(printable(text))
  }
  let y = headerRow(doc.y + 10)

  doc.font('Helvetica').fontSize(fontSize)
  const lineHeight = doc.currentLineHeight(true)
  // Enough characters for the visible lines of the narrowest glyphs; measuring 20 000 characters is slow.
  const clipAt = layout.widths.map((w) => Math.ceil(((w - 2 * cellPad) / (fontSize * 0.25)) * maxCellLines))
  const maxTextHeight = lineHeight * maxCellLines

  let rows = 0
  for await (const record of input.rows) {
    doc.font('Helvetica').fontSize(fontSize)
    const texts = layout.columns.map((c, i) => printable(cellText(c.get(record), c.kind).slice(0, clipAt[i])))
    const textHeight = Math.min(maxTextHeight, Math.max(lineHeight, ...texts.map((t, i) => (t ? doc.heightOfString(t, { width: layout.widths[i] - 2 * cellPad }) : 0))))
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
      doc.text(t, layout.xs[i] + cellPad, y + cellPad, { width: layout.widths[i] - 2 * cellPad, height: textHeight, ellipsis: true, align: numeric ? 'right' : 'left' })
    })
    doc.moveTo(margin, y + h).lineTo(margin + contentWidth, y + h).lineWidth(0.3).strokeColor(colours.rule).stroke()
    y += h
    rows++
  }

  if (y + 30 > tableBottom) {
    doc.addPage()
    y = margin
  }
  doc.font('Helvetica-Bold').fontSize(9).fillColor(colours.text)
  doc.text(`${rows} ${rows === 1 ? 'record' : 'records'} · end of report`, margin, y + 10, { width: contentWidth })

  const done = outputFinished(out)
  doc.end()
  await done
  return { rows }
}
