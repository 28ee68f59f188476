import { html, layout, SafeHtml, type PageFrame } from '../settings/settings.shared.ts'
import type { WebhookOut } from './webhooks.schema.ts'

/** The pages' forms (create, edit, rotate, delete) and the pages only they lead to. Their handlers are in webhooks.page.ts. */

export const webhooksPagePath = '/settings/webhooks'

type Frame = Omit<PageFrame, 'main' | 'title' | 'script' | 'head'>

/** A subscription as the form holds it: empty at first, what was sent when it comes back with the service's problems. */
export interface SubscriptionForm {
  url: string
  description: string
  kinds: string[]
  modules: string[]
  enabled: boolean
}

export const emptySubscription: SubscriptionForm = { url: '', description: '', kinds: [], modules: [], enabled: true }

export const formOf = (w: WebhookOut): SubscriptionForm => ({
  url: w.url,
  description: w.description ?? '',
  kinds: w.kinds,
  modules: w.modules ?? [],
  enabled: w.enabled
})

/** The fields a problem can be shown beside; '' is the form as a whole. */
export type FormField = 'url' | 'description' | 'kinds' | 'modules' | 'enabled' | ''
export type FieldErrors = Partial<Record<FormField, string[]>>

/** What the form offers: the kinds the service accepts (with what each means) and the tenant's installed modules. */
export interface FormChoices {
  kinds: Array<{ key: string; description: string }>
  modules: string[]
}

const errorId = (name: string) => `${name}-error`

/** The service's problems for one field, beside it; the control points at them with aria-describedby. */
function fieldError(errors: FieldErrors, name: Exclude<FormField, ''>): SafeHtml {
  const list = errors[name]
  if (!list?.length) return html``
  return html`<p class="field-error" id="${errorId(name)}">${list.map((m, i) => html`${i ? html`<br>` : ''}${m}`)}</p>`
}

const invalid = (errors: FieldErrors, name: Exclude<FormField, ''>, hint?: string) => {
  const ids = [hint, errors[name]?.length ? errorId(name) : undefined].filter(Boolean).join(' ')
  return html`${ids ? html` aria-describedby="${ids}"` : ''}${errors[name]?.length ? html` aria-invalid="true"` : ''}`
}

/** The fields of a subscription, shared by the create and the edit form. */
function subscriptionFields(f: SubscriptionForm, choices: FormChoices, errors: FieldErrors, edit: boolean): SafeHtml {
  const checked = (on: boolean) => (on ? html` checked` : '')
  return html`<label for="url">URL</label>
<input type="text" inputmode="url" autocomplete="url" spellcheck="false" id="url" name="url" value="${f.url}" required maxlength="2000"${invalid(errors, 'url', 'url-hint')}>
<p class="hint" id="url-hint">The receiver, e.g. <code>https://example.com/records-hook</code>: https, and it must resolve to a public address.</p>
${fieldError(errors, 'url')}
<label for="description">Description</label>
<input type="text" id="description" name="description" value="${f.description}" maxlength="500"${invalid(errors, 'description', 'description-hint')}>
<p class="hint" id="description-hint">Optional: what the receiver is, so others recognise it.</p>
${fieldError(errors, 'description')}
<fieldset${invalid(errors, 'kinds')}><legend>Event kinds</legend>
${fieldError(errors, 'kinds')}
${choices.kinds.map((k) => html`<label><input type="checkbox" name="kinds" value="${k.key}"${checked(f.kinds.includes(k.key))}> <span><code>${k.key}</code> <span class="hint">${k.description}</span></span></label>`)}
</fieldset>
<fieldset${invalid(errors, 'modules')}><legend>Modules</legend>
<p class="hint">Only record and attachment events of the ticked modules; none ticked: every module. Events without a module (users, groups, exports) are always sent.</p>
${fieldError(errors, 'modules')}
${choices.modules.length ? choices.modules.map((m) => html`<label><input type="checkbox" name="modules" value="${m}"${checked(f.modules.includes(m))}> <code>${m}</code></label>`) : html`<p class="hint">No module is installed.</p>`}
</fieldset>
${
  edit
    ? html`<fieldset${invalid(errors, 'enabled')}><legend>State</legend>
${fieldError(errors, 'enabled')}
<label><input type="checkbox" name="enabled" value="true"${checked(f.enabled)}> Active: deliver events. Untick to pause; events while paused are not queued.</label>
</fieldset>`
    : ''
}`
}

const formAlert = (errors: FieldErrors) => {
  const general = errors['']
  const beside = Object.keys(errors).some((k) => k !== '')
  if (!general?.length && !beside) return html``
  return html`<div class="alert error" role="alert">${general?.length ? general.join(' ') : 'The subscription was not saved: see the problems beside the fields.'}</div>`
}

const csrfInput = (frame: Frame) => html`<input type="hidden" name="csrf" value="${frame.account!.csrfToken}">`

/** The create form, on the list page. */
export function createForm(frame: Frame, f: SubscriptionForm, choices: FormChoices, errors: FieldErrors): SafeHtml {
  return html`<h2 id="new">New subscription</h2>
<form class="card" method="post" action="${webhooksPagePath}" novalidate aria-labelledby="new">
${csrfInput(frame)}
${formAlert(errors)}
${subscriptionFields(f, choices, errors, false)}
<div class="actions"><button type="submit">Create subscription</button></div>
</form>`
}

/** Styles of the forms, added to the page's own under its nonce. */
export const formStyles = `.field-error{color:var(--danger);font-weight:600;margin:.25rem 0 0}
[aria-invalid=true]:not(fieldset){border-color:var(--danger)}fieldset[aria-invalid=true]{border-color:var(--danger)}
fieldset label .hint{display:block;margin:0}
.actions a{color:var(--accent)}`

function page(frame: Frame, title: string, main: SafeHtml): string {
  return layout({
    ...frame,
    title,
    head: html`<style nonce="${frame.nonce}">${new SafeHtml(formStyles)}</style>`,
    main: html`<main>
<p><a href="${webhooksPagePath}">← Webhooks</a></p>
<h1>${title}</h1>
${main}
</main>`
  })
}

export interface EditView {
  frame: Frame
  webhook: WebhookOut
  form: SubscriptionForm
  choices: FormChoices
  errors: FieldErrors
  /** A refusal of the rotation (e.g. too many secrets still signing). */
  rotateError?: string
}

/** The edit page: the subscription's fields, a new signing secret, and the way to delete it. */
export function editPage(v: EditView): string {
  const w = v.webhook
  const base = `${webhooksPagePath}/${w.id}`
  return page(
    v.frame,
    'Edit subscription',
    html`<p><code>${w.url}</code></p>
<form class="card" method="post" action="${base}/edit" novalidate aria-label="Edit subscription">
${csrfInput(v.frame)}
${formAlert(v.errors)}
${subscriptionFields(v.form, v.choices, v.errors, true)}
<div class="actions"><button type="submit">Save changes</button><a href="${webhooksPagePath}">Cancel</a></div>
</form>
<h2 id="rotate">Signing secret</h2>
<form class="card" method="post" action="${base}/rotate-secret" aria-labelledby="rotate">
${csrfInput(v.frame)}
${v.rotateError ? html`<div class="alert error" role="alert">${v.rotateError}</div>` : ''}
<p>A new secret is shown once. The current one keeps signing beside it for a grace period, so the receiver can switch over.</p>
<div class="actions"><button type="submit" class="secondary">Rotate secret</button></div>
</form>
<h2 id="delete">Delete</h2>
<div class="card"><p>Deleting stops every delivery to this URL and drops its delivery log.</p>
<div class="actions"><a href="${base}/delete">Delete this subscription…</a></div></div>`
  )
}

/**
 * Shown once, straight in the answer to the create or rotate form: the only page with the
 * secret. Its way back is another address than the form's (a query), so the browser loads
 * the list rather than scrolling within this page.
 */
export function secretPage(frame: Frame, w: WebhookOut, created: boolean): string {
  return page(
    frame,
    created ? 'Subscription created' : 'Secret rotated',
    html`<div class="alert warn" role="alert" id="once">Copy this signing secret now. It will not be shown again. The receiver checks each delivery’s signature with it (docs/webhooks.md).${created ? '' : ' The previous secret keeps signing beside it until its grace period ends.'}</div>
<div class="card">
<label for="secret">Signing secret of <code>${w.url}</code></label>
<div class="secret"><input type="text" id="secret" value="${w.secret ?? ''}" readonly autocomplete="off" spellcheck="false" aria-describedby="once"></div>
</div>
<p><a href="${webhooksPagePath}?done=${created ? 'created' : 'rotated'}#webhook-${w.id}">Back to webhooks</a></p>`
  )
}

/** The confirmation step before a delete. */
export function deletePage(frame: Frame, w: WebhookOut): string {
  return page(
    frame,
    'Delete subscription',
    html`<div class="card">
<p>Delete the subscription to <code>${w.url}</code>${w.description ? html` (${w.description})` : ''}? Its events are no longer delivered, and its delivery log is gone. This cannot be undone.</p>
<form method="post" action="${webhooksPagePath}/${w.id}/delete">${csrfInput(frame)}
<div class="actions"><button type="submit" class="danger">Delete subscription</button><a href="${webhooksPagePath}">Cancel</a></div>
</form></div>`
  )
}
