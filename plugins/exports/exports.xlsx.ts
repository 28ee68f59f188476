import type { Writable } from 'node:stream'
import type { ColumnSpec, ExportColumn, ExportRecord } from '../../core/modules/derive/columns.ts'
import { inertText } from './exports.csv.ts'
import {
  assembleWith,
  piecesOf,
  type ChunkFormat,
  type FileInput,
  type FileWriter,
  type RenderInput
} from './exports.render.ts'
import { deflatedSegment, deflatedSegmentSync, ZipWriter, type DeflatedSegment } from './zip.ts'

/** Excel refuses longer cell text. */
const maxCellText = 32767
/** Cell styles, as indexes into styles.xml's cellXfs below: 1 the bold header, 2 a date-time, 3 a date. */
const headerStyle = 1
const dateStyles: Partial<Record<ColumnSpec['kind'], number>> = { datetime: 2, date: 3 }

/** A worksheet name Excel accepts: no `[]:*?/\`, no leading/trailing apostrophe, at most 31 characters. */
export function sheetName(title: string): string {
  const name = title
    .replace(/[[\]:*?/\\]/g, ' ')
    .replace(/^'+|'+$/g, '')
    .trim()
    .slice(0, 31)
    .trim()
  return name || 'Records'
}

const entities: Record<string, string> = { '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' }
const xmlSpecial = /[<>&"'\x00-\x08\x0B\x0C\x0E-\x1F\x7F\uFFFE\uFFFF]/
const xmlSpecials = /[<>&"'\x00-\x08\x0B\x0C\x0E-\x1F\x7F\uFFFE\uFFFF]/g

/**
 * Text as XML character data: markup escaped, and what XML 1.0 cannot carry dropped: the control
 * characters (as exceljs did) and the noncharacters U+FFFE and U+FFFF, which payloads may hold
 * and which made the whole sheet unreadable.
 */
function xmlText(s: string): string {
  return xmlSpecial.test(s) ? s.replace(xmlSpecials, (c) => entities[c] ?? '') : s
}

/** `A`, `B`, … `Z`, `AA`: the column letters of a cell reference. */
function columnLetters(index: number): string {
  let n = index + 1
  let s = ''
  while (n > 0) {
    const m = (n - 1) % 26
    s = String.fromCharCode(65 + m) + s
    n = Math.floor((n - 1) / 26)
  }
  return s
}

/** Excel's serial day number (1900 system) of a UTC instant. */
const excelDay = (d: Date) => 25569 + d.getTime() / 86_400_000

const xmlHead = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
const ns = {
  main: 'http://schemas.openxmlformats.org/spreadsheetml/2006/main',
  rel: 'http://schemas.openxmlformats.org/officeDocument/2006/relationships',
  pkgRel: 'http://schemas.openxmlformats.org/package/2006/relationships'
}

const contentTypes =
  `${xmlHead}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
  '<Default Extension="xml" ContentType="application/xml"/>' +
  '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>' +
  '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>' +
  '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>' +
  '<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>' +
  '<Override PartName="/docProps/app.xml" ContentType="application/vnd.openxmlformats-officedocument.extended-properties+xml"/>' +
  '</Types>'

const packageRels =
  `${xmlHead}<Relationships xmlns="${ns.pkgRel}">` +
  `<Relationship Id="rId1" Type="${ns.rel}/officeDocument" Target="xl/workbook.xml"/>` +
  `<Relationship Id="rId2" Type="${ns.pkgRel}/metadata/core-properties" Target="docProps/core.xml"/>` +
  `<Relationship Id="rId3" Type="${ns.rel}/extended-properties" Target="docProps/app.xml"/>` +
  '</Relationships>'

const workbookRels =
  `${xmlHead}<Relationships xmlns="${ns.pkgRel}">` +
  `<Relationship Id="rId1" Type="${ns.rel}/worksheet" Target="worksheets/sheet1.xml"/>` +
  `<Relationship Id="rId2" Type="${ns.rel}/styles" Target="styles.xml"/>` +
  '</Relationships>'

const font = '<sz val="11"/><name val="Calibri"/><family val="2"/>'
const xf = (numFmtId: number, fontId: number, apply: string) =>
  `<xf numFmtId="${numFmtId}" fontId="${fontId}" fillId="0" borderId="0" xfId="0"${apply}/>`
const styles =
  `${xmlHead}<styleSheet xmlns="${ns.main}">` +
  '<numFmts count="2"><numFmt numFmtId="164" formatCode="yyyy-mm-dd hh:mm:ss"/><numFmt numFmtId="165" formatCode="yyyy-mm-dd"/></numFmts>' +
  `<fonts count="2"><font>${font}</font><font><b/>${font}</font></fonts>` +
  '<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>' +
  '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>' +
  '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>' +
  `<cellXfs count="4">${xf(0, 0, '')}${xf(0, 1, ' applyFont="1"')}${xf(164, 0, ' applyNumberFormat="1"')}${xf(165, 0, ' applyNumberFormat="1"')}</cellXfs>` +
  '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>' +
  '</styleSheet>'

const w3cdtf = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z')

/** The cell references' column letters and each column's date style, per column list (one export's). */
const sheetColumns = new WeakMap<readonly ExportColumn[], { letters: string[]; dateStyle: number[] }>()
function sheetColumnsOf(columns: readonly ExportColumn[]) {
  let known = sheetColumns.get(columns)
  if (!known) {
    known = {
      letters: columns.map((_, i) => columnLetters(i)),
      dateStyle: columns.map((c) => dateStyles[c.kind] ?? dateStyles.datetime!)
    }
    sheetColumns.set(columns, known)
  }
  return known
}

/** Data rows as SpreadsheetML `<row>` elements, the first one being data row `first` (sheet row `first + 2`). */
export function xlsxRows(columns: readonly ExportColumn[], records: Iterable<ExportRecord>, first: number): string {
  const { letters, dateStyle } = sheetColumnsOf(columns)
  let xml = ''
  let r = first + 2
  for (const record of records) {
    xml += `<row r="${r}">`
    for (let i = 0; i < columns.length; i++) {
      const v = columns[i].get(record)
      if (v === null || v === undefined) continue
      if (typeof v === 'string')
        xml += `<c r="${letters[i]}${r}" t="str"><v>${xmlText(inertText(v).slice(0, maxCellText))}</v></c>`
      else if (typeof v === 'number')
        xml += Number.isFinite(v)
          ? `<c r="${letters[i]}${r}"><v>${v}</v></c>`
          : `<c r="${letters[i]}${r}" t="str"><v>${v}</v></c>`
      else if (typeof v === 'boolean') xml += `<c r="${letters[i]}${r}" t="b"><v>${v ? 1 : 0}</v></c>`
      else if (v instanceof Date && !Number.isNaN(v.getTime()))
        xml += `<c r="${letters[i]}${r}" s="${dateStyle[i]}"><v>${excelDay(v)}</v></c>`
    }
    xml += '</row>'
    r++
  }
  return xml
}

/**
 * XLSX written directly as SpreadsheetML into a streamed ZIP: one worksheet with a bold, frozen
 * header row carrying the filter buttons, text as inline strings (no shared-string table to hold),
 * numbers and booleans typed, dates and date-times as Excel serials in UTC wall time (Excel cells
 * have no time zone). The XML is what exceljs's streaming writer produced for these cells; built
 * here as strings it costs a few µs a row where exceljs's cell, style and XML objects cost ~60.
 * The rows come already written (`xlsxRows`, as an export's chunks store them), in order.
 */
export function openXlsx(input: FileInput, out: Writable): FileWriter {
  const { columns } = input
  const name = xmlText(sheetName(input.moduleTitle))
  const { letters } = sheetColumnsOf(columns)
  const zip = new ZipWriter(out, input.generatedAt)

  const begin = async () => {
    const filters = input.filters.length ? input.filters.map(([k, v]) => `${k} = ${v}`).join('; ') : 'none'
    await zip.add('[Content_Types].xml', contentTypes)
    await zip.add('_rels/.rels', packageRels)
    await zip.add(
      'docProps/core.xml',
      `${xmlHead}<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">` +
        `<dc:creator>${xmlText(input.tenantName)}</dc:creator><dc:title>${xmlText(input.title)}</dc:title>` +
        `<dc:subject>${xmlText(input.moduleTitle)}</dc:subject><dc:description>${xmlText(`Filters: ${filters}`)}</dc:description>` +
        `<dcterms:created xsi:type="dcterms:W3CDTF">${w3cdtf(input.generatedAt)}</dcterms:created>` +
        `<dcterms:modified xsi:type="dcterms:W3CDTF">${w3cdtf(input.generatedAt)}</dcterms:modified></cp:coreProperties>`
    )
    await zip.add(
      'docProps/app.xml',
      `${xmlHead}<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties" xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">` +
        '<HeadingPairs><vt:vector size="2" baseType="variant"><vt:variant><vt:lpstr>Worksheets</vt:lpstr></vt:variant><vt:variant><vt:i4>1</vt:i4></vt:variant></vt:vector></HeadingPairs>' +
        `<TitlesOfParts><vt:vector size="1" baseType="lpstr"><vt:lpstr>${name}</vt:lpstr></vt:vector></TitlesOfParts></Properties>`
    )
    await zip.add(
      'xl/workbook.xml',
      `${xmlHead}<workbook xmlns="${ns.main}" xmlns:r="${ns.rel}"><sheets><sheet name="${name}" sheetId="1" r:id="rId1"/></sheets></workbook>`
    )
    await zip.add('xl/_rels/workbook.xml.rels', workbookRels)
    await zip.add('xl/styles.xml', styles)

    const sheet = zip.deflated('xl/worksheets/sheet1.xml')
    const head =
      `${xmlHead}<worksheet xmlns="${ns.main}" xmlns:r="${ns.rel}">` +
      '<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/><selection pane="bottomLeft"/></sheetView></sheetViews>' +
      '<sheetFormatPr defaultRowHeight="15"/><cols>' +
      columns.map((c, i) => `<col min="${i + 1}" max="${i + 1}" width="${c.width}" customWidth="1"/>`).join('') +
      '</cols><sheetData><row r="1">' +
      columns
        .map((c, i) => `<c r="${letters[i]}1" s="${headerStyle}" t="str"><v>${xmlText(inertText(c.header))}</v></c>`)
        .join('') +
      '</row>'
    await sheet.write(deflatedSegmentSync(Buffer.from(head, 'utf8')))
    return sheet
  }
  const opened = begin()
  // Awaited by the first write or the end; a failure before either must not go unhandled.
  opened.catch(() => undefined)
  let rows = 0
  return {
    async write(piece) {
      const sheet = await opened
      for (const segment of piece.data.split('\n')) if (segment) await sheet.write(segmentOf(segment))
      rows += piece.rows
    },
    async end() {
      const sheet = await opened
      const last = letters[letters.length - 1]
      const tail =
        `</sheetData><autoFilter ref="A1:${last}1"/>` +
        '<pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" header="0.3" footer="0.3"/></worksheet>'
      await sheet.write(deflatedSegmentSync(Buffer.from(tail, 'utf8')))
      await sheet.end()
      await zip.finish()
      return { rows }
    }
  }
}

/**
 * Rows as an XLSX chunk stores them: their SpreadsheetML deflated at once (zlib's thread, while the
 * next page is read) into a segment the worksheet takes as it is, with its CRC-32 and size in a
 * 12-byte head, as base64 and a line feed. The file is then the segments one after another: no
 * row is written or deflated twice, and a chunk holds ~90 bytes a row instead of ~900.
 */
async function xlsxSegment(columns: readonly ExportColumn[], records: Iterable<ExportRecord>, first: number) {
  const segment = await deflatedSegment(Buffer.from(xlsxRows(columns, records, first), 'utf8'))
  const head = Buffer.alloc(12)
  head.writeUInt32LE(segment.crc, 0)
  head.writeUInt32LE(segment.size, 4)
  head.writeUInt32LE(segment.data.length, 8)
  return Buffer.concat([head, segment.data]).toString('base64') + '\n'
}

function segmentOf(text: string): DeflatedSegment {
  const bytes = Buffer.from(text, 'base64')
  const size = bytes.readUInt32LE(8)
  if (bytes.length !== 12 + size) throw new Error('An XLSX export chunk is damaged: a segment is cut short')
  return { crc: bytes.readUInt32LE(0), size: bytes.readUInt32LE(4), data: bytes.subarray(12) }
}

export const assembleXlsx = assembleWith(openXlsx)

export const xlsxFormat: ChunkFormat = { encode: xlsxSegment, assemble: assembleXlsx, open: openXlsx, compressed: true }

/** XLSX of records: their rows (`xlsxRows`) assembled as an export's chunks are. */
export function renderXlsx(input: RenderInput, out: Writable): Promise<{ rows: number }> {
  return assembleXlsx(
    input,
    piecesOf(input.rows, (records, first) => xlsxSegment(input.columns, records, first)),
    out
  )
}
