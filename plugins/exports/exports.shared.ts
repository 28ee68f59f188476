export const exportsPath = 'api/v1/exports'
export const exportsMethods = ['create', 'get'] as const
export const exportFormats = ['csv', 'xlsx', 'pdf'] as const
export type ExportFormat = (typeof exportFormats)[number]
export const exportContentTypes: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pdf: 'application/pdf'
}

/**
 * The PDF conventions every PDF of the service follows (printable text, UTC times, the "Page n of m"
 * footer), written once here: the record report (plugins/record-report) prints its PDF with them.
 */
export { pageTotal, printable, rgb, utcText } from './pdf-kit.ts'
