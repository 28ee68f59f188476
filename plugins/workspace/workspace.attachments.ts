import { nonceCsp, setHtmlSecurityHeaders } from '../../core/http/security-headers.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { SignedRequest, StorageDriver } from '../../core/storage/driver.ts'
import { attachmentsPath } from '../attachments/attachments.shared.ts'
import { html, PageError, seeOther, signedIn, SafeHtml, type PageRequest } from '../settings/settings.shared.ts'
import { Desk, type RecordView } from './workspace.context.ts'
import { showInstant } from './workspace.fields.ts'

const size = (n: number) =>
  n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(0)} KB` : `${Number((n / 1024 / 1024).toFixed(1))} MB`

/** Image types every current browser shows in an <img>: these attachments get a thumbnail (HEIC and TIFF do not). */
const previewable = new Set([
  'image/jpeg',
  'image/png',
  'image/gif',
  'image/webp',
  'image/avif',
  'image/svg+xml',
  'image/bmp'
])

/** What the allowed content types are called in the upload hint; a type without a name here is shown as itself. */
const typeNames: Record<string, string> = {
  'image/*': 'photos and other images',
  'application/pdf': 'PDF',
  'text/plain': 'text',
  'text/csv': 'CSV',
  'application/msword': 'Word',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'Word',
  'application/vnd.ms-excel': 'Excel',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'Excel',
  'video/mp4': 'MP4 video',
  'application/zip': 'ZIP'
}

/** What a file without a preview shows in its place: its extension (at most 4 letters), else "FILE". */
const kindOf = (fileName: string) => /\.([a-z0-9]{1,4})$/i.exec(fileName)?.[1].toUpperCase() ?? 'FILE'

/**
 * The origin of the URLs the storage driver signs (the service itself with the local driver, the S3 endpoint or the
 * bucket's host with S3), read from a URL it signs for nothing: whatever the driver's addressing (path or
 * virtual-host style, a public endpoint), the pages' policy names exactly where their thumbnails and uploads go.
 */
async function storageOrigin(storage: StorageDriver): Promise<string> {
  const probe = await storage.signDownload({
    key: 'csp-probe',
    contentType: 'application/octet-stream',
    fileName: 'probe',
    expiresAt: new Date(Date.now() + 60_000)
  })
  return new URL(probe.url).origin
}

/**
 * The record page's policy: the pages' strict one (core/http/security-headers.ts), plus the storage origin for the
 * thumbnails (img-src; the workspace route answers with a redirect to a signed URL there, and a redirect's target must
 * be allowed too) and for the upload script (connect-src: the API on this origin, the PUT of the bytes to storage).
 */
async function allowStorage(desk: Desk) {
  const origin = await storageOrigin(desk.r.platform.storage)
  const directives = new Map(
    nonceCsp(desk.r.nonce)
      .split('; ')
      .map((d) => [d.split(' ')[0], d])
  )
  directives.set('img-src', `img-src 'self' ${origin}`)
  directives.set('connect-src', `connect-src 'self' ${origin}`)
  setHtmlSecurityHeaders(desk.r.ctx, [...directives.values()].join('; '))
}

/** The allowed types and the size limit, in words, under the file control. */
function uploadHint(contentTypes: readonly string[], maxBytes: number): string {
  const names = [...new Set(contentTypes.map((t) => typeNames[t] ?? t))]
  const list = names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names.at(-1)}` : names[0]
  const first = list.charAt(0).toUpperCase() + list.slice(1)
  return `${first}, up to ${size(maxBytes)} each.`
}

/**
 * The upload control: the bytes go through the public API's signed URL (browser/attachments.js), so without JavaScript
 * there is no upload, and the page says so. Two file inputs: one that chooses files (on a phone its chooser offers the
 * camera as well: `accept` names image/*, and there is no `capture`), and "Take a photo" with `capture="environment"`
 * that opens the rear camera at once; the script shows it only where the main pointer is a finger.
 */
function uploadForm(desk: Desk, m: RegisteredModule, rec: RecordView): SafeHtml {
  const a = desk.r.platform.config.attachments
  const accept = a.contentTypes.join(',')
  const hint = uploadHint(a.contentTypes, a.maxBytes)
  return html`<form class="upload" id="upload" hidden data-record="${rec.id}" data-page="/records/${m.definition.key}/${rec.id}" data-csrf="${desk.session.csrfToken}" data-max-bytes="${a.maxBytes}">
<div data-camera hidden><label for="upload-camera">Take a photo</label>
<input type="file" id="upload-camera" name="photo" accept="image/*" capture="environment" aria-describedby="upload-problem"></div>
<label for="upload-file">Attach files</label>
<input type="file" id="upload-file" name="file" multiple accept="${accept}" aria-describedby="upload-hint upload-problem">
<p class="hint" id="upload-hint">${hint}</p>
<div data-progress hidden><label for="upload-progress">Upload progress</label><progress id="upload-progress" max="100" value="0"></progress></div>
<p class="status" id="upload-status" role="status" aria-live="polite"></p>
<p class="problem" id="upload-problem" role="alert"></p>
</form>
<noscript><p class="hint">Attaching a file needs JavaScript, which is off in this browser: the file goes straight to storage through a signed address the page asks for.</p></noscript>`
}

/** Where a person downloads an attachment (and a thumbnail loads from): the workspace route that signs its URL. */
const fileHref = (m: RegisteredModule, rec: RecordView, id: string) =>
  `/records/${m.definition.key}/${rec.id}/attachments/${id}`

/**
 * The record's attachments: each a link to download it, images with a thumbnail, and the upload control for people
 * whose role may attach files (`attachments`). The page's policy is widened to the storage origin here (allowStorage),
 * where the thumbnails and uploads that need it are made.
 */
export async function attachmentsSection(desk: Desk, m: RegisteredModule, rec: RecordView): Promise<SafeHtml> {
  await allowStorage(desk)
  const files = rec.attachments ?? []
  const mayUpload = desk.can(m, 'attachments')
  return html`<section class="card" aria-labelledby="h-attachments"><h2 id="h-attachments">Attachments</h2>${
    files.length
      ? html`<ul class="files">${files.map((a) => {
          const href = fileHref(m, rec, a.id)
          const thumb = previewable.has(a.contentType.toLowerCase())
            ? html`<img src="${href}" alt="${a.fileName}" loading="lazy" width="96" height="96">`
            : html`<span class="kind" aria-hidden="true">${kindOf(a.fileName)}</span>`
          return html`<li>${thumb}<div><a class="name" href="${href}">${a.fileName}</a><br><span class="muted">${size(a.size)}, ${a.uploadedBy.name}, ${showInstant(a.uploadedAt)}</span></div></li>`
        })}</ul>`
      : html`<p class="muted">No files yet.</p>`
  }${mayUpload ? uploadForm(desk, m, rec) : ''}</section>`
}

/**
 * `GET /records/:module/:id/attachments/:attachment`: the attachments service's `get` as this person (the same rights
 * as `GET /api/v1/attachments/{id}`), answered with a redirect to its signed download URL. The redirect may be reused
 * by this browser until shortly before the URL expires, so a record page's thumbnails do not ask for a new signed URL
 * (each counts against the per-credential limit) on every reload.
 */
export async function downloadAttachment(r: PageRequest) {
  const session = signedIn(r)
  if (!session) return
  const desk = new Desk(r, session)
  desk.module(r.params.module)
  const found = await r.app.service(attachmentsPath).get(r.params.attachment, desk.call())
  if (found.recordId !== r.params.id) throw new PageError(404, 'Not found', 'This record has no such attachment.')
  const download = found.download as SignedRequest
  const reusable = Math.min(240, Math.floor((Date.parse(download.expiresAt) - Date.now()) / 1000) - 30)
  seeOther(r, download.url)
  r.ctx.set('Cache-Control', reusable > 0 ? `private, max-age=${reusable}` : 'no-store')
}
