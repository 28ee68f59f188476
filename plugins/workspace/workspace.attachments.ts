import type { RegisteredModule } from '../../core/modules/registry.ts'
import { html, type SafeHtml } from '../settings/settings.shared.ts'
import type { Desk, RecordView } from './workspace.context.ts'
import { showInstant } from './workspace.fields.ts'

const size = (n: number) =>
  n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(0)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`

/** The record's attachments: their names, sizes, who uploaded them and when. */
export function attachmentsSection(_desk: Desk, _m: RegisteredModule, rec: RecordView): SafeHtml {
  const files = rec.attachments ?? []
  return html`<section class="card" aria-labelledby="h-attachments"><h2 id="h-attachments">Attachments</h2>${
    files.length
      ? html`<ul>${files.map((a) => html`<li>${a.fileName} <span class="muted">(${size(a.size)}, ${a.uploadedBy.name}, ${showInstant(a.uploadedAt)})</span></li>`)}</ul>`
      : html`<p class="muted">No files yet.</p>`
  }</section>`
}
