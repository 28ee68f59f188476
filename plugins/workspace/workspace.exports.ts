import qs from 'qs'
import type { ServiceTypes } from '../../core/declarations.ts'
import { ApiError } from '../../core/errors/index.ts'
import { readQuery } from '../../core/http/query-string.ts'
import { nonceCsp, setHtmlSecurityHeaders } from '../../core/http/security-headers.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import { exportFormats, exportsPath, type ExportFormat } from '../exports/exports.shared.ts'
import {
  html,
  PageError,
  postedForm,
  SafeHtml,
  seeOther,
  signedIn,
  type PageRequest
} from '../settings/settings.shared.ts'
import { Desk, newSubmitKey, refusalOf, submitOnce } from './workspace.context.ts'
import { viewQuery } from './workspace.lists.ts'
import { sendWorkspacePage } from './workspace.views.ts'

type Query = Record<string, unknown>
type ExportCreate = Parameters<ServiceTypes[typeof exportsPath]['create']>[0]

/** An export job as GET /api/v1/exports/{id} answers it (exports.schema.ts `exportJobSchema`): what the page shows. */
interface JobView {
  id: string
  moduleKey: string
  format: ExportFormat
  status: 'queued' | 'running' | 'succeeded' | 'failed' | 'expired'
  filters: Query
  progress: { rowsDone: number; rowsTotal: number | null }
  queuePosition: number | null
  expiresAt: string | null
  file?: { name: string; size: number }
  download?: { url: string }
  problem?: { detail: string }
}

/** How often the progress page reloads itself without JavaScript (export.js polls the API instead). */
const refreshSeconds = 2

const formatLabels: Record<ExportFormat, string> = { csv: 'CSV', xlsx: 'Excel (XLSX)', pdf: 'PDF' }

const isFormat = (v: unknown): v is ExportFormat => exportFormats.includes(v as ExportFormat)

/**
 * The one mapping of a list view to an export's filters: the list's own (viewQuery, the names, conversions and ids the
 * records service takes), less the cursor (an export is every page of the view, not the one shown). A payload
 * condition given as a list is written comma-joined, the form the export's filters take and the list splits.
 */
function exportFilters(q: Query): Query {
  const { cursor: _cursor, ...filters } = q
  const payload = filters.payload as Record<string, unknown> | undefined
  for (const [key, cond] of Object.entries(payload ?? {})) {
    if (Array.isArray(cond)) payload![key] = cond.join(',')
    else if (cond && typeof cond === 'object')
      for (const [op, v] of Object.entries(cond)) if (Array.isArray(v)) (cond as Query)[op] = v.join(',')
  }
  return filters
}

/** The view as a query string: what the list page's URL said, less its page (cursor) and its notice. */
function viewString(view: Query): string {
  const { cursor: _cursor, done: _done, ...rest } = view
  return qs.stringify(rest)
}

function exportForm(desk: Desk, m: RegisteredModule, view: string, selected: ExportFormat = 'csv'): SafeHtml {
  const d = m.definition
  return html`<form class="export" method="post" action="/records/${d.key}/export" aria-label="Export ${d.title} records">
<input type="hidden" name="csrf" value="${desk.session.csrfToken}"><input type="hidden" name="submitKey" value="${newSubmitKey()}"><input type="hidden" name="view" value="${view}">
<label for="export-format">Export format</label><select id="export-format" name="format" aria-describedby="export-hint">${exportFormats.map((f) => html`<option value="${f}"${f === selected ? html` selected` : ''}>${formatLabels[f]}</option>`)}</select>
<button type="submit" class="secondary">Export this view</button>
<p class="hint" id="export-hint">Every record these filters select, in this order, not only this page.</p>
</form>`
}

/**
 * The list page's export controls, for people whose roles may export the module: a form that sends the view (the page's
 * query) to `POST /records/:module/export`. `view` is the page's query with the order it is shown in.
 */
export function exportControls(desk: Desk, m: RegisteredModule, view: Query): SafeHtml {
  if (!desk.can(m, 'export')) return html``
  return html`${exportForm(desk, m, viewString(view))}`
}

/**
 * `POST /records/:module/export`: an export job of the view through the exports service, with the form's submit key
 * (and format) as its Idempotency-Key, so a double submit makes one job; then 303 to its progress page. A refusal
 * (a PDF past its row cap, filters the export does not take) is a page that says why, with the form again; one for
 * want of the right is the 403 page.
 */
export async function startExport(r: PageRequest) {
  const posted = await postedForm(r, `/records/${r.params.module}`)
  if (!posted) return
  const desk = new Desk(r, posted.session)
  const m = desk.module(r.params.module)
  const view = posted.form.get('view') ?? ''
  const format = posted.form.get('format')
  if (!isFormat(format)) return refused(desk, m, view, 400, ['Choose the export format: CSV, XLSX or PDF.'])
  const { q, typed } = await viewQuery(desk, m, readQuery(view))
  if (typed.length)
    return refused(
      desk,
      m,
      view,
      400,
      typed.map((p) => `${p.field}: ${p.detail}`)
    )
  const data = { moduleKey: m.definition.key, format, filters: exportFilters(q) } as ExportCreate
  const key = `${posted.form.get('submitKey') || newSubmitKey()}:${format}`
  try {
    const job = await submitOnce(() => desk.r.app.service(exportsPath).create(data, desk.call({ idempotencyKey: key })))
    seeOther(r, `/exports/${job.id}`)
  } catch (err) {
    const refusal = refusalOf(err)
    if (refusal.status === 403) throw err
    const problems = [...refusal.top, ...[...refusal.fields].flatMap(([k, ms]) => ms.map((x) => `${k}: ${x}`))]
    return refused(desk, m, view, refusal.status, [...new Set(problems)], format === 'pdf' ? 'csv' : format)
  }
}

function refused(
  desk: Desk,
  m: RegisteredModule,
  view: string,
  status: number,
  problems: string[],
  selected?: ExportFormat
) {
  const d = m.definition
  const back = `/records/${d.key}${view ? `?${view}` : ''}`
  sendWorkspacePage(desk, status, {
    title: `Export of ${d.title}: not started`,
    module: m,
    main: html`<p class="crumbs"><a href="${back}">${d.title}</a> › Export</p><h1>The export was not started</h1>
<div class="alert error" role="alert">${problems.join(' ')}</div>
${desk.can(m, 'export') ? exportForm(desk, m, view, selected) : ''}
<p><a href="${back}">Back to the view</a></p>`
  })
}

/** The job, read with the person's own rights: another person's export is a 404 page, as the API answers it. */
async function readJob(desk: Desk, id: string): Promise<JobView> {
  try {
    return await desk.r.app.service(exportsPath).get(id, desk.call())
  } catch (err) {
    if (err instanceof ApiError && err.code === 404)
      throw new PageError(
        404,
        'Not found',
        'There is no such export that you may see: an export is seen only by the person who asked for it.'
      )
    throw err
  }
}

const count = (n: number) => n.toLocaleString('en')
const plural = (n: number, one: string) => `${count(n)} ${one}${n === 1 ? '' : 's'}`
const utc = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`

/** Bytes as people read them. export.js says it the same way. */
function fileSize(n: number): string {
  if (n < 1024) return plural(n, 'byte')
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`
  return `${(n / 1024 / 1024).toFixed(1)} MB`
}

/** The job's state and rows in words; export.js words them the same (keep the two alike). */
function progressText(job: JobView): { state: string; rows: string } {
  const { rowsDone, rowsTotal } = job.progress
  switch (job.status) {
    case 'queued':
      return {
        state: job.queuePosition ? `Waiting to start (number ${job.queuePosition} in the queue)` : 'Waiting to start',
        rows: ''
      }
    case 'running':
      return {
        state: 'Exporting…',
        rows:
          rowsTotal === null ? `${plural(rowsDone, 'row')} so far` : `${count(rowsDone)} of ${plural(rowsTotal, 'row')}`
      }
    case 'succeeded':
      return { state: 'Done', rows: plural(rowsDone, 'row') }
    case 'failed':
      return { state: 'Failed', rows: '' }
    default:
      return { state: 'Expired: the file was removed. Start the export again.', rows: '' }
  }
}

/** The policy of the pages, plus connect-src 'self': export.js reads the job from GET /api/v1/exports/{id}. */
export function progressCsp(nonce: string): string {
  return `${nonceCsp(nonce)}; connect-src 'self'`
}

/**
 * `GET /exports/:id`: the job's progress (state, rows done of the total, a <progress> bar) and, once done, the link to
 * its file; failed, the reason. Without JavaScript the page reloads itself every 2 s while the job runs; export.js
 * polls the API instead and updates the page in place.
 */
export async function showExport(r: PageRequest) {
  const session = signedIn(r)
  if (!session) return
  const desk = new Desk(r, session)
  const job = await readJob(desk, r.params.id)
  const m = r.platform.tenants.get(desk.principal.tenantId)?.modules.get(job.moduleKey)
  const title = m?.definition.title ?? job.moduleKey
  const running = job.status === 'queued' || job.status === 'running'
  const { state, rows } = progressText(job)
  const total = job.status === 'succeeded' ? Math.max(job.progress.rowsDone, 1) : job.progress.rowsTotal
  const done = job.status === 'succeeded' ? total : job.progress.rowsDone
  const view = qs.stringify(job.filters)
  const back = `/records/${job.moduleKey}${view ? `?${view}` : ''}`
  setHtmlSecurityHeaders(r.ctx, progressCsp(r.nonce))
  sendWorkspacePage(desk, 200, {
    title: `Export of ${title}`,
    module: m && desk.can(m, 'read') ? m : undefined,
    scripts: ['export.js'],
    main: html`<p class="crumbs"><a href="${back}">${title}</a> › Export</p>
<h1>Export of ${title} records (${formatLabels[job.format]})</h1>
<div class="card export-job" data-export="${job.id}" data-status="${job.status}">
<p class="state" id="export-state" role="status">${state}</p>
${
  job.status === 'failed' || job.status === 'expired'
    ? ''
    : html`<progress id="export-progress" aria-labelledby="export-state"${total ? html` max="${total}" value="${done}"` : ''}>${rows}</progress>`
}
<p class="rows muted" id="export-rows">${rows}</p>
<p id="export-file"${job.status === 'succeeded' ? '' : html` hidden`}><a href="/exports/${job.id}/download" id="export-link">Download ${job.file?.name ?? 'the file'}</a> <span id="export-size">${job.file ? `(${fileSize(job.file.size)})` : ''}</span><span id="export-until" class="muted">${job.expiresAt ? `, until ${utc(job.expiresAt)}` : ''}</span></p>
<div class="alert error" role="alert" id="export-problem"${job.status === 'failed' ? '' : html` hidden`}>${job.problem?.detail ?? ''}</div>
${running ? html`<noscript><meta http-equiv="refresh" content="${refreshSeconds}"><p class="hint">This page reloads itself every ${refreshSeconds} seconds until the export is done. <a href="/exports/${job.id}">Reload now</a></p></noscript>` : ''}
</div>
<p><a href="${back}">Back to the view</a></p>`
  })
}

/**
 * `GET /exports/:id/download`: a fresh signed URL of the file (the job's lasts minutes; a page may have been open
 * longer), 303 to it; a job not done, or expired, is a page saying so.
 */
export async function downloadExport(r: PageRequest) {
  const session = signedIn(r)
  if (!session) return
  const desk = new Desk(r, session)
  const job = await readJob(desk, r.params.id)
  if (job.status === 'succeeded' && job.download) return seeOther(r, job.download.url)
  if (job.status === 'expired')
    throw new PageError(
      410,
      'Export expired',
      'The file of this export was removed after its time. Start the export again.'
    )
  throw new PageError(
    409,
    'Export not ready',
    job.status === 'failed'
      ? `This export failed: ${job.problem?.detail ?? 'no file was made.'}`
      : 'This export is not done yet.'
  )
}
