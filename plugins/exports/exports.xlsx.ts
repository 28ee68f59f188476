import { setImmediate as yieldToLoop } from 'node:timers/promises'
import type { Writable } from 'node:stream'
import ExcelJS from 'exceljs'
import type { CellValue, ColumnSpec } from '../../core/modules/derive/columns.ts'
import { drained, inertText } from './exports.csv.ts'
import type { RenderInput } from './exports.render.ts'

/** Excel refuses longer cell text. */
const maxCellText = 32767
const dateFormats: Partial<Record<ColumnSpec['kind'], string>> = { date: 'yyyy-mm-dd', datetime: 'yyyy-mm-dd hh:mm:ss' }

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

function xlsxValue(c: CellValue): ExcelJS.CellValue {
  if (typeof c === 'string') return inertText(c).slice(0, maxCellText)
  return c ?? null
}

/**
 * XLSX through the exceljs streaming writer: each row is committed (serialised and released)
 * as it arrives. Date-times are written as UTC wall time, since Excel cells have no time zone.
 */
export async function renderXlsx(input: RenderInput, out: Writable): Promise<{ rows: number }> {
  const { columns } = input
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: out, useStyles: true, useSharedStrings: false })
  workbook.creator = input.tenantName
  workbook.created = input.generatedAt
  workbook.modified = input.generatedAt
  workbook.title = input.title
  workbook.subject = input.moduleTitle
  workbook.description = `Filters: ${input.filters.length ? input.filters.map(([k, v]) => `${k} = ${v}`).join('; ') : 'none'}`

  // The filter buttons sit on the header row over every column, whatever the row count (written at the sheet's end).
  const sheet = workbook.addWorksheet(sheetName(input.moduleTitle), {
    views: [{ state: 'frozen', ySplit: 1 }],
    autoFilter: { from: { row: 1, column: 1 }, to: { row: 1, column: columns.length } }
  } as Partial<ExcelJS.AddWorksheetOptions>)
  sheet.columns = columns.map((c) => ({ key: c.key, width: c.width }))
  const header = sheet.addRow(columns.map((c) => inertText(c.header)))
  header.font = { bold: true }
  header.commit()

  let rows = 0
  for await (const record of input.rows) {
    const row = sheet.addRow(columns.map((c) => xlsxValue(c.get(record))))
    columns.forEach((c, i) => {
      const fmt = dateFormats[c.kind]
      if (fmt) row.getCell(i + 1).numFmt = fmt
    })
    row.commit()
    rows++
    // exceljs pushes into its zip without backpressure: wait while `out` is full, and give the
    // compressor a turn now and then in case the row source never leaves the microtask queue.
    if (out.writableNeedDrain || out.destroyed) await drained(out)
    else if (rows % 500 === 0) await yieldToLoop()
  }
  sheet.commit()
  // Finalises the zip, which ends `out`, and resolves on its 'finish'.
  await workbook.commit()
  return { rows }
}
