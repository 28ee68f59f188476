import { html } from './html.ts'
import { alertList, layout } from './layout.ts'

export interface SignInView {
  nonce: string
  tenant: string
  userName: string
  next: string
  /** Shown above the form; the same text whatever was wrong (no account enumeration). */
  error?: string
  /** The tenant's single sign-on: a button to its IdP above the password form. */
  sso?: { href: string; label: string }
  /** Some tenant signs in through an IdP: the form offers to look up the organisation's. */
  ssoOffered?: boolean
}

/** The sign-in form. The password is never put back into the page. */
export function signInPage(v: SignInView): string {
  return layout({
    title: 'Sign in',
    nonce: v.nonce,
    main: html`<main class="narrow">
<h1>Sign in</h1>
${alertList(v.error ? [v.error] : [])}
${
  v.sso
    ? html`<div class="card"><a class="button" href="${v.sso.href}" autofocus>${v.sso.label}</a>
<p class="hint">With the account your organisation manages for you.</p></div>
<p class="divider">or with a user name and password</p>`
    : ''
}
<form class="card" method="post" action="/sign-in">
<input type="hidden" name="next" value="${v.next}">
<label for="tenant">Organisation</label>
<input type="text" id="tenant" name="tenant" value="${v.tenant}" required maxlength="63" autocomplete="organization" autocapitalize="none" spellcheck="false" aria-describedby="tenant-hint"${v.tenant || v.sso ? '' : html` autofocus`}>
<p class="hint" id="tenant-hint">Your organisation's id, e.g. <code>acme</code>.</p>
<label for="userName">User name</label>
<input type="text" id="userName" name="userName" value="${v.userName}" required maxlength="256" autocomplete="username" autocapitalize="none" spellcheck="false"${v.tenant && !v.userName && !v.sso ? html` autofocus` : ''}>
<label for="password">Password</label>
<input type="password" id="password" name="password" required maxlength="1024" autocomplete="current-password"${v.tenant && v.userName && !v.sso ? html` autofocus` : ''}>
<div class="actions"><button type="submit">Sign in</button>${
      v.ssoOffered && !v.sso
        ? html`<button type="submit" class="secondary" name="sso" value="1" formnovalidate aria-describedby="sso-hint">Use single sign-on</button>`
        : ''
    }</div>
${v.ssoOffered && !v.sso ? html`<p class="hint" id="sso-hint">Single sign-on needs only your organisation.</p>` : ''}
</form>
</main>`
  })
}
