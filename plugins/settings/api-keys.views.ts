import { scopeCatalogue } from '../../core/auth/scopes.ts'
import type { TokenGrant, TokenOut, TokenType } from '../tokens/tokens.shared.ts'
import { html, type SafeHtml } from './html.ts'
import { alertList, layout, type PageFrame } from './layout.ts'

export const expiryChoices = ['never', '7', '30', '90', 'date'] as const
export type ExpiryChoice = (typeof expiryChoices)[number]

/** What the create form shows: empty at first, what was sent when it comes back with problems. */
export interface CreateForm {
  name: string
  type: string
  scopes: string[]
  roles: string[]
  expires: ExpiryChoice
  expiresOn: string
}

export const emptyForm: CreateForm = { name: '', type: 'personal', scopes: [], roles: [], expires: '30', expiresOn: '' }

export interface ListView {
  frame: Omit<PageFrame, 'main' | 'title' | 'script'>
  tokens: TokenOut[]
  /** Admins see every token of the tenant. */
  admin: boolean
  /** What the signed-in user may give a token (the tokens service's tokenGrant): the form offers only this. */
  grant: TokenGrant
  /** Titles of the tenant's modules by key, for the module pickers. */
  modules: Record<string, string>
  form: CreateForm
  errors: string[]
  notice?: string
}

const typeLabels: Record<TokenType, string> = {
  personal: 'Personal access token',
  'service-account': 'Service account',
  'api-key': 'Tenant API key'
}
const typeHints: Record<TokenType, string> = {
  personal: 'acts as you, with your roles (narrowed by any scopes you pick)',
  'service-account': 'an integration with explicit scopes (pick at least one), acting with your roles',
  'api-key': 'acts as the whole organisation, with every role (offered because you hold every role)'
}
const expiryLabels: Record<ExpiryChoice, string> = {
  never: 'Never',
  '7': 'In 7 days',
  '30': 'In 30 days',
  '90': 'In 90 days',
  date: 'On a date'
}

function when(iso: string | null, none: string): SafeHtml {
  if (!iso) return html`<span class="hint">${none}</span>`
  const shown = iso.replace('T', ' ').replace(/:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)$/, ' UTC')
  return html`<time datetime="${iso}">${shown}</time>`
}

function scopesCell(scopes: string[] | null): SafeHtml {
  if (!scopes) return html`<span class="hint">not narrowed (roles decide)</span>`
  return html`${scopes.map((s, i) => html`${i ? ', ' : ''}<code>${s}</code>`)}`
}

function tokenRow(t: TokenOut, csrfToken: string, admin: boolean): SafeHtml {
  return html`<tr>
<td>${t.name}</td>
<td>${typeLabels[t.type]}</td>
<td><code>${t.prefix}…</code></td>
<td>${scopesCell(t.scopes)}</td>
<td>${when(t.createdAt, '')}</td>
${admin ? html`<td>${(t.createdBy as { name?: string } | null)?.name ?? ''}</td>` : ''}
<td>${when(t.lastUsedAt, 'never')}</td>
<td>${when(t.expiresAt, 'never')}</td>
<td class="state-${t.state}">${t.state}</td>
<td>${
    t.state === 'active'
      ? html`<form method="post" action="/settings/api-keys/${t.id}/revoke"><input type="hidden" name="csrf" value="${csrfToken}"><button type="submit" class="danger" aria-label="Revoke ${t.name}">Revoke</button></form>`
      : ''
  }</td>
</tr>`
}

function tokenTable(v: ListView, csrfToken: string): SafeHtml {
  if (!v.tokens.length) return html`<p class="hint">No tokens yet.</p>`
  return html`<table>
<caption class="visually-hidden">${v.admin ? 'Tokens of the organisation' : 'Your tokens'}</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Token</th><th scope="col">Scopes</th><th scope="col">Created</th>${v.admin ? html`<th scope="col">Created by</th>` : ''}<th scope="col">Last used</th><th scope="col">Expires</th><th scope="col">State</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${v.tokens.map((t) => tokenRow(t, csrfToken, v.admin))}</tbody>
</table>`
}

/** One checkbox per scope the person could use; a module-bound one with a picker of the modules it works on. */
function scopeChoices(v: ListView): SafeHtml {
  const f = v.form
  const offered = Object.entries(scopeCatalogue).filter(([scope]) => v.grant.scopes.includes(scope))
  return html`${offered.map(([scope, s], i) => {
    const narrowedTo = f.scopes.find((x) => x.startsWith(`${scope}:`))?.slice(scope.length + 1)
    const ticked = f.scopes.includes(scope) || narrowedTo !== undefined
    const box = html`<label><input type="checkbox" name="scopes" value="${scope}"${ticked ? html` checked` : ''}> <span><code>${scope}</code> ${s.description}</span></label>`
    if (!s.perModule) return box
    const modules = v.grant.scopes.filter((x) => x.startsWith(`${scope}:`)).map((x) => x.slice(scope.length + 1))
    return html`<div class="scope-row">${box}
<label for="scope-module-${i}" class="visually-hidden">Modules for ${scope}</label>
<select id="scope-module-${i}" name="module:${scope}"><option value="">every module you can use</option>${modules.map((m) => html`<option value="${m}"${narrowedTo === m ? html` selected` : ''}>only ${v.modules[m] ?? m}</option>`)}</select></div>`
  })}`
}

function roleChoices(v: ListView): SafeHtml {
  if (!v.grant.types.includes('service-account')) return html``
  return html`<fieldset><legend>Roles (service accounts)</legend>
<p class="hint">A service account acts with the roles ticked here; leave all unticked to give it yours. Personal tokens always act with your roles.</p>
${v.grant.roles.map((r) => html`<label><input type="checkbox" name="roles" value="${r}"${v.form.roles.includes(r) ? html` checked` : ''}> ${r}</label>`)}
</fieldset>`
}

function createForm(v: ListView, csrfToken: string): SafeHtml {
  const f = v.form
  const types = v.grant.types
  return html`<form class="card" method="post" action="/settings/api-keys" novalidate>
<input type="hidden" name="csrf" value="${csrfToken}">
${alertList(v.errors)}
<label for="name">Name</label>
<input type="text" id="name" name="name" value="${f.name}" required maxlength="100" aria-describedby="name-hint">
<p class="hint" id="name-hint">What the token is for, e.g. “Nightly export to the data warehouse”.</p>
<label for="type">Type</label>
<select id="type" name="type">${types.map((t) => html`<option value="${t}"${f.type === t ? html` selected` : ''}>${typeLabels[t]}: ${typeHints[t]}</option>`)}</select>
<fieldset><legend>Scopes</legend>
<p class="hint">Only scopes your roles can use are offered. Leave all unticked for a personal token that may do whatever your roles allow; pick a module to narrow a scope to it.</p>
${scopeChoices(v)}
</fieldset>
${roleChoices(v)}
<fieldset><legend>Expires</legend>
${expiryChoices.map((c) => html`<label><input type="radio" name="expires" value="${c}"${f.expires === c ? html` checked` : ''}> ${expiryLabels[c]}</label>`)}
<label for="expiresOn" class="visually-hidden">Expiry date</label>
<input type="date" id="expiresOn" name="expiresOn" value="${f.expiresOn}" aria-describedby="expiresOn-hint">
<p class="hint" id="expiresOn-hint">With “On a date”: the token stops working at the end of that day (UTC).</p>
</fieldset>
<div class="actions"><button type="submit">Create token</button></div>
</form>`
}

/** The list of tokens and the create form. Never shows a full token: only its prefix. */
export function listPage(v: ListView): string {
  const csrfToken = v.frame.account!.csrfToken
  return layout({
    ...v.frame,
    title: 'API keys and tokens',
    main: html`<main>
<h1>API keys and tokens</h1>
${v.notice ? html`<div class="alert ok" role="status">${v.notice}</div>` : ''}
<p>Programs call the API with <code>Authorization: Bearer &lt;token&gt;</code>. A token is shown in full only once, when it is created; afterwards only its first characters identify it.</p>
<h2>${v.admin ? 'Tokens of the organisation' : 'Your tokens'}</h2>
${tokenTable(v, csrfToken)}
<h2 id="create">Create a token</h2>
${createForm(v, csrfToken)}
</main>`
  })
}

const copyScript = html`const field = document.getElementById('token')
const status = document.getElementById('copy-status')
field.addEventListener('focus', () => field.select())
// Shown once: a page kept in the back/forward cache must not bring the token back.
addEventListener('pagehide', () => { field.value = '' })
document.getElementById('copy').addEventListener('click', async () => {
  try {
    await navigator.clipboard.writeText(field.value)
    status.textContent = 'Copied to the clipboard.'
  } catch {
    field.focus()
    status.textContent = 'Could not copy automatically: the token is selected, press Ctrl+C (⌘C on a Mac).'
  }
})`

/** Shown once, straight in the response to the create form: the only page with the full token. */
export function createdPage(frame: ListView['frame'], t: TokenOut): string {
  return layout({
    ...frame,
    title: 'Token created',
    script: copyScript,
    main: html`<main>
<h1>Token created</h1>
<div class="alert warn" role="alert" id="once">Copy this token now. It will not be shown again: the service keeps only a hash of it. If you lose it, revoke it and create a new one.</div>
<div class="card">
<label for="token">${typeLabels[t.type]} “${t.name}”</label>
<div class="secret"><input type="text" id="token" value="${t.token ?? ''}" readonly autocomplete="off" spellcheck="false" aria-describedby="once"><button type="button" id="copy" class="secondary">Copy</button></div>
<p class="hint" id="copy-status" role="status" aria-live="polite"></p>
<p>Scopes: ${scopesCell(t.scopes)}. Expires: ${when(t.expiresAt, 'never')}.</p>
</div>
<p><a href="/settings/api-keys">Back to API keys and tokens</a></p>
</main>`
  })
}
