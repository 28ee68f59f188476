import { html } from './html.ts'
import { alertList, layout } from './layout.ts'

export interface SignInView {
  nonce: string
  tenant: string
  userName: string
  next: string
  /** Shown above the form; the same text whatever was wrong (no account enumeration). */
  error?: string
}

/** The sign-in form. The password is never put back into the page. */
export function signInPage(v: SignInView): string {
  return layout({
    title: 'Sign in',
    nonce: v.nonce,
    main: html`<main class="narrow">
<h1>Sign in</h1>
${alertList(v.error ? [v.error] : [])}
<form class="card" method="post" action="/sign-in">
<input type="hidden" name="next" value="${v.next}">
<label for="tenant">Organisation</label>
<input type="text" id="tenant" name="tenant" value="${v.tenant}" required maxlength="63" autocomplete="organization" autocapitalize="none" spellcheck="false" aria-describedby="tenant-hint"${v.tenant ? '' : html` autofocus`}>
<p class="hint" id="tenant-hint">Your organisation's id, e.g. <code>acme</code>.</p>
<label for="userName">User name</label>
<input type="text" id="userName" name="userName" value="${v.userName}" required maxlength="256" autocomplete="username" autocapitalize="none" spellcheck="false"${v.tenant && !v.userName ? html` autofocus` : ''}>
<label for="password">Password</label>
<input type="password" id="password" name="password" required maxlength="1024" autocomplete="current-password"${v.tenant && v.userName ? html` autofocus` : ''}>
<div class="actions"><button type="submit">Sign in</button></div>
</form>
</main>`
  })
}
