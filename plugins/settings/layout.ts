import { html, SafeHtml } from './html.ts'

export interface PageFrame {
  title: string
  /** The CSP nonce of this response: the one <style> (and any <script>) must carry it. */
  nonce: string
  /** Signed in: shows who, and a sign-out button carrying the CSRF token. */
  account?: { name: string; tenantName: string; csrfToken: string }
  /** The settings pages a signed-in user can open (page-router.ts); `current` is this one. */
  nav?: Array<{ href: string; label: string; current?: 'page' | 'true' }>
  /** Where the brand link leads: the start page (page-request.ts `homeOf`). */
  home?: string
  main: SafeHtml
  /** An inline script, allowed by the nonce. */
  script?: SafeHtml
  /** More of <head>: stylesheets and scripts of the page's own, each carrying the nonce. */
  head?: SafeHtml
}

const css = `
:root{color-scheme:light;--fg:#1d2330;--muted:#5b6475;--line:#d8dde6;--bg:#f6f7f9;--accent:#1f5fbf;--danger:#b3261e;--ok:#1e6b34}
*{box-sizing:border-box}
html{scrollbar-gutter:stable}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{background:#fff;border-bottom:1px solid var(--line)}
header .bar{max-width:72rem;margin:0 auto;padding:.6rem 1rem;display:flex;gap:1rem;align-items:center;justify-content:space-between}
header .brand{font-weight:600;color:var(--fg);text-decoration:none}
header .who{color:var(--muted);font-size:.9rem;display:flex;gap:.75rem;align-items:center}
header nav{display:flex;gap:1.25rem;margin-right:auto}
header nav a{color:var(--accent);text-decoration:none;padding:.15rem 0;border-bottom:2px solid transparent;display:inline-flex;flex-direction:column;align-items:center}
header nav a::after{content:attr(data-label) / "";font-weight:600;height:0;overflow:hidden;visibility:hidden}
header nav a:hover{border-bottom-color:var(--line)}
header nav a[aria-current]{color:var(--fg);font-weight:600;border-bottom-color:var(--accent)}
main{max-width:72rem;margin:2rem auto;padding:0 1rem}
main.narrow{max-width:26rem}
h1{font-size:1.6rem;margin:0 0 1rem}
h2{font-size:1.2rem;margin:2rem 0 .75rem}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:1.25rem}
label{display:block;font-weight:600;margin:.9rem 0 .25rem}
input[type=text],input[type=password],input[type=date],select{width:100%;padding:.5rem .6rem;border:1px solid #aab2c0;border-radius:6px;font:inherit;background:#fff}
input:focus-visible,select:focus-visible,button:focus-visible,a:focus-visible{outline:3px solid #8db4f0;outline-offset:1px}
input[type=date]{max-width:14rem}
fieldset{border:1px solid var(--line);border-radius:6px;margin:1rem 0 0;padding:.5rem .9rem .8rem}
legend{font-weight:600;padding:0 .3rem}
fieldset label{display:flex;gap:.5rem;align-items:baseline;font-weight:normal;margin:.35rem 0}
.hint{color:var(--muted);font-size:.9rem;margin:.2rem 0 0}
.scope-row select{width:auto;max-width:calc(100% - 1.6rem);margin:0 0 .4rem 1.6rem;padding:.25rem .4rem}
button{font:inherit;padding:.5rem 1rem;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer}
button.secondary{background:#fff;color:var(--accent)}
button.danger{background:#fff;color:var(--danger);border-color:var(--danger);padding:.25rem .7rem}
button.link{background:none;border:none;color:var(--accent);padding:0;text-decoration:underline}
a.button{display:block;text-align:center;padding:.6rem 1rem;border-radius:6px;background:var(--accent);color:#fff;text-decoration:none;font-weight:600}
.divider{color:var(--muted);text-align:center;margin:1rem 0}
.actions{margin-top:1.25rem;display:flex;gap:.75rem;align-items:center}
.alert{border-radius:6px;padding:.75rem 1rem;margin:0 0 1rem;border:1px solid}
.alert.error{background:#fdecea;border-color:#f1b0aa;color:#7a1c16}
.alert.ok{background:#e8f5ec;border-color:#a6d4b4;color:var(--ok)}
.alert.warn{background:#fff6e0;border-color:#efd08a;color:#6b4e00}
.alert ul{margin:.3rem 0 0;padding-left:1.2rem}
table{width:100%;border-collapse:collapse;background:#fff;border:1px solid var(--line);font-size:.92rem}
th,td{text-align:left;padding:.5rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{background:#eef1f5;font-weight:600}
code{font:.88em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#eef1f5;padding:.05em .3em;border-radius:3px}
.state-active{color:var(--ok);font-weight:600}.state-expired,.state-revoked{color:var(--muted)}
.secret{display:flex;gap:.5rem}.secret input{font-family:ui-monospace,monospace}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
`
// Our own constant stylesheet: the one value passed through unescaped.
const styles = new SafeHtml(css)

/**
 * The frame around every settings page, the same header on each: the gutter of a scroll bar
 * is always kept (a long page and a short one centre the bar alike), and each menu link is
 * as wide as its bold form (the current page's link is bold, which would otherwise widen it
 * and push the links after it).
 */
export function layout(p: PageFrame): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${p.title} · Records</title>
<style nonce="${p.nonce}">${styles}</style>
${p.head ?? ''}
</head>
<body>
<header><div class="bar">
<a class="brand" href="${p.home ?? '/settings/api-keys'}">Records</a>
${
  p.account && p.nav?.length
    ? html`<nav aria-label="Main">${p.nav.map((l) => html`<a href="${l.href}" data-label="${l.label}"${l.current ? html` aria-current="${l.current}"` : ''}>${l.label}</a>`)}</nav>`
    : ''
}
${
  p.account
    ? html`<div class="who"><span>Signed in as <strong>${p.account.name}</strong> · ${p.account.tenantName}</span>
<form method="post" action="/sign-out"><input type="hidden" name="csrf" value="${p.account.csrfToken}"><button type="submit" class="link">Sign out</button></form></div>`
    : ''
}
</div></header>
${p.main}
${p.script ? html`<script nonce="${p.nonce}">${p.script}</script>` : ''}
</body>
</html>
`.value
}

/** A short page that explains a refusal or failure, with a way on. */
export function messagePage(
  frame: Omit<PageFrame, 'main'>,
  message: string,
  link: { href: string; text: string }
): string {
  return layout({
    ...frame,
    main: html`<main class="narrow"><h1>${frame.title}</h1><div class="alert error" role="alert">${message}</div><p><a href="${link.href}">${link.text}</a></p></main>`
  })
}

/** Problems of a form, listed at its top so a screen reader announces them. */
export function alertList(messages: string[]): SafeHtml {
  if (!messages.length) return html``
  if (messages.length === 1) return html`<div class="alert error" role="alert">${messages[0]}</div>`
  return html`<div class="alert error" role="alert">Please correct these problems:<ul>${messages.map((m) => html`<li>${m}</li>`)}</ul></div>`
}
