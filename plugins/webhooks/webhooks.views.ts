import { html, layout, SafeHtml, type PageFrame } from '../settings/settings.shared.ts'
import type { DeliveryAttempt, WebhookOut } from './webhooks.schema.ts'
import {
  createForm,
  formStyles,
  webhooksPagePath,
  type FieldErrors,
  type FormChoices,
  type SubscriptionForm
} from './webhooks.forms.ts'
import { webhooksPath } from './webhooks.shared.ts'

export { webhooksPagePath }

/** Attempts shown per subscription, newest first; the API's log (up to 200) has the rest. */
export const attemptsShown = 10

/** What a POST of the page reports after its redirect (`?done=`): the query picks a fixed text, never shown itself. */
export const notices = {
  tested:
    'A test event (webhook.test) was queued. Its attempt shows in the subscription’s recent deliveries within a few seconds: reload the page to see it.',
  'tested-paused':
    'A test event (webhook.test) was queued, but the subscription is disabled: it is delivered once the subscription is resumed.',
  resumed:
    'The subscription was resumed: events from now on are delivered again. Events that occurred while it was disabled were not queued; replay them through the API if the receiver needs them.',
  'already-enabled': 'The subscription was already enabled; nothing was changed.',
  created: 'The subscription was created. Send it a test event to check that the receiver answers.',
  rotated: 'The signing secret was rotated: the previous one signs beside the new one until the time shown.',
  updated: 'The subscription was saved.',
  unchanged: 'Nothing was changed: the form held the subscription as it was.',
  deleted: 'The subscription was deleted: its events are no longer delivered.'
} as const
export type Notice = keyof typeof notices

export interface WebhooksView {
  frame: Omit<PageFrame, 'main' | 'title' | 'script' | 'head'>
  subscriptions: Array<{ webhook: WebhookOut; attempts: DeliveryAttempt[] }>
  /** After how long of failing the service disables a subscription (config webhooks.disableAfterFailingHours). */
  disableAfterFailingHours: number
  notice?: Notice
  /** The create form: empty, or as sent with the service's problems beside its fields. */
  form: SubscriptionForm
  choices: FormChoices
  errors: FieldErrors
}

// The page's own rules beside the shared stylesheet, under the same nonce: a constant, the one value passed through unescaped.
const styles =
  new SafeHtml(`.webhook{margin:0 0 1.5rem}.webhook h2{margin:0 0 .5rem;font-size:1.05rem;overflow-wrap:anywhere}
.webhook h3{font-size:1rem;margin:1.25rem 0 .5rem}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem;margin:.75rem 0}dl.facts dt{font-weight:600}dl.facts dd{margin:0;overflow-wrap:anywhere}
.state-enabled,.outcome-succeeded{color:var(--ok);font-weight:600}.state-disabled,.outcome-failed{color:var(--danger);font-weight:600}.outcome-retrying{color:#6b4e00;font-weight:600}
td code{overflow-wrap:anywhere}
${formStyles}`)

function when(iso: string | null): SafeHtml {
  if (!iso) return html``
  return html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC')}</time>`
}

const codes = (values: string[]) => html`${values.map((v, i) => html`${i ? ', ' : ''}<code>${v}</code>`)}`

function state(w: WebhookOut): SafeHtml {
  if (w.enabled) return html`<span class="state-enabled">Enabled</span>`
  const reason = w.disabledReason ?? 'Paused by an admin, on this page or through the API (enabled: false).'
  return html`<span class="state-disabled">Disabled</span>${w.disabledAt ? html` since ${when(w.disabledAt)}` : ''}<p class="hint">${reason}</p><p class="hint">Events are not queued while it is disabled.</p>`
}

function answer(a: DeliveryAttempt): SafeHtml {
  const parts = [
    a.statusCode === null ? undefined : html`HTTP ${a.statusCode}`,
    a.error ? html`<span>${a.error}</span>` : undefined
  ].filter((p) => p !== undefined)
  if (!parts.length) return html`<span class="hint">no answer</span>`
  return html`${parts.map((p, i) => html`${i ? html`<br>` : ''}${p}`)}`
}

function attemptsTable(w: WebhookOut, attempts: DeliveryAttempt[]): SafeHtml {
  if (!attempts.length) return html`<p class="hint">No delivery attempts yet.</p>`
  return html`<table>
<caption class="visually-hidden">The last ${attemptsShown} delivery attempts to ${w.url}, newest first</caption>
<thead><tr><th scope="col">Time</th><th scope="col">Event type</th><th scope="col">Event id</th><th scope="col">Attempt</th><th scope="col">Answer</th><th scope="col">Latency</th><th scope="col">Outcome</th></tr></thead>
<tbody>${attempts.map(
    (a) => html`<tr>
<td>${when(a.at)}</td>
<td><code>${a.type}</code></td>
<td><code>${a.eventId}</code></td>
<td>${a.attempt}</td>
<td>${answer(a)}</td>
<td>${a.latencyMs} ms</td>
<td class="outcome-${a.outcome}">${a.outcome}</td>
</tr>`
  )}</tbody>
</table>`
}

function actions(w: WebhookOut, csrfToken: string): SafeHtml {
  const label = w.description ?? w.url
  const form = (action: string, button: string, aria: string, secondary: boolean) =>
    html`<form method="post" action="${webhooksPagePath}/${w.id}/${action}"><input type="hidden" name="csrf" value="${csrfToken}"><button type="submit"${secondary ? html` class="secondary"` : ''} aria-label="${aria}">${button}</button></form>`
  // Only an enabled subscription is sent a test now; a disabled one first needs resuming.
  return html`<div class="actions">${w.enabled ? form('test', 'Send test event', `Send test event to ${label}`, true) : form('resume', 'Resume', `Resume ${label}`, false)}<a href="${webhooksPagePath}/${w.id}/edit" aria-label="Edit ${label}">Edit</a><a href="${webhooksPagePath}/${w.id}/delete" aria-label="Delete ${label}">Delete…</a></div>`
}

function subscriptionCard(v: WebhooksView, w: WebhookOut, attempts: DeliveryAttempt[], csrfToken: string): SafeHtml {
  const by = (w.createdBy as { name?: string } | null)?.name
  return html`<section class="card webhook" id="webhook-${w.id}" aria-labelledby="webhook-${w.id}-url">
<h2 id="webhook-${w.id}-url"><code>${w.url}</code></h2>
${w.description ? html`<p>${w.description}</p>` : html`<p class="hint">No description.</p>`}
<dl class="facts">
<dt>State</dt><dd>${state(w)}</dd>
${
  w.failingSince
    ? html`<dt>Failing since</dt><dd>${when(w.failingSince)}: every attempt since then failed.${w.enabled ? ` The service disables the subscription after ${v.disableAfterFailingHours} hours of failures.` : ''}</dd>`
    : ''
}
<dt>Kinds</dt><dd>${codes(w.kinds)}</dd>
<dt>Modules</dt><dd>${w.modules ? codes(w.modules) : html`<span class="hint">every module</span>`}</dd>
${w.previousSecretExpiresAt ? html`<dt>Previous secret</dt><dd>signs beside the current one until ${when(w.previousSecretExpiresAt)}</dd>` : ''}
<dt>Created</dt><dd>${when(w.createdAt)}${by ? html` by ${by}` : ''}</dd>
<dt>Id</dt><dd><code>${w.id}</code></dd>
</dl>
${actions(w, csrfToken)}
<h3>Recent deliveries</h3>
${attemptsTable(w, attempts)}
</section>`
}

const emptyState = html`<div class="card">
<p><strong>No webhook subscriptions yet.</strong></p>
<p>Create one with the form below, or through the API: <code>POST /${webhooksPath}</code> with a body such as <code>{"url": "https://example.com/records-hook", "kinds": ["record.created", "record.transitioned"]}</code>, sent by a tenant admin’s token that holds the <code>webhooks:write</code> scope (create one under <a href="/settings/api-keys">API keys and tokens</a>). Either way the signing secret is shown once, in the answer. The <a href="/api/docs">API reference</a> describes every field.</p>
</div>`

/** The tenant's subscriptions with their recent delivery attempts. Never the signing secret: the service does not return it here. */
export function webhooksPage(v: WebhooksView): string {
  const csrfToken = v.frame.account!.csrfToken
  return layout({
    ...v.frame,
    title: 'Webhooks',
    head: html`<style nonce="${v.frame.nonce}">${styles}</style>`,
    main: html`<main>
<h1>Webhooks</h1>
${v.notice ? html`<div class="alert ok" role="status">${notices[v.notice]}</div>` : ''}
<p>Webhook subscriptions send the organisation’s events to a URL as signed requests. Here you create, change and delete them (the same checks as the API, <code>/${webhooksPath}</code>, apply), see what their receivers answered, send a test event, and resume a subscription the service disabled. A signing secret is shown once, when it is created or rotated: rotate it on the subscription’s edit page if it is lost. <a href="#new">New subscription</a></p>
${v.subscriptions.length ? v.subscriptions.map((s) => subscriptionCard(v, s.webhook, s.attempts, csrfToken)) : emptyState}
${createForm(v.frame, v.form, v.choices, v.errors)}
</main>`
  })
}
