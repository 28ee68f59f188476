import type { Fragment } from '../../core/openapi/builder.ts'
import { recordsPath } from '../records/records.shared.ts'

/** The media type a client sends in `Accept` on `GET /api/v1/records/{id}` to get the record report. */
export const recordReportType = 'application/pdf'

/** The record report as an OpenAPI media type object, for the records get operation's 200 response. */
const recordReportContent = {
  [recordReportType]: {
    schema: {
      type: 'string',
      contentMediaType: recordReportType,
      description:
        'With `Accept: application/pdf`: the record report, one record as a portrait A4 PDF (its facts, every field the caller may read in the module\'s order, the workflow history with who and when, the attachments with names and sizes, the tenant and the generation time; "Page n of m" footers). The record is read exactly as for JSON (the same rights, row and field rules); a refusal is still `application/problem+json`. See docs/record-report.md.'
    }
  }
}

/** The report's part of the OpenAPI document: a second representation of the record's GET (its 200 gains the PDF). */
export function describeRecordReport(): Fragment {
  return {
    tags: [],
    paths: {},
    amend(paths) {
      const get = paths[`/${recordsPath}/{id}`]?.get
      const ok = (get?.responses as Record<string, { content?: Record<string, unknown> }> | undefined)?.['200']
      if (!ok?.content) return
      Object.assign(ok.content, structuredClone(recordReportContent))
      get.description = [
        get.description,
        'JSON by default; `Accept: application/pdf` answers the record report, a PDF of the same record under the same rules.'
      ]
        .filter(Boolean)
        .join(' ')
    }
  }
}
