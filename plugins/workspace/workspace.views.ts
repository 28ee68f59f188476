import type { RegisteredModule } from '../../core/modules/registry.ts'
import { frameFor, html, layout, SafeHtml, sendPage, type PageRequest } from '../settings/settings.shared.ts'
import type { Desk } from './workspace.context.ts'
import { assetTags } from './workspace.assets.ts'

/** The workspace's own styles, on top of the settings pages' (one header, one look). */
const css = new SafeHtml(`
.crumbs{font-size:.9rem;color:var(--muted);margin:0 0 .4rem}.crumbs a{color:var(--accent)}
nav.modules{display:flex;gap:.4rem;flex-wrap:wrap;margin:0 0 1.25rem}
nav.modules a{padding:.3rem .7rem;border:1px solid var(--line);border-radius:999px;background:#fff;color:var(--accent);text-decoration:none;font-size:.92rem}
nav.modules a[aria-current]{background:var(--accent);color:#fff;border-color:var(--accent)}
.head{display:flex;gap:1rem;align-items:flex-start;justify-content:space-between;flex-wrap:wrap;margin-bottom:1rem}
.head h1{margin:0}
a.action{display:inline-block;padding:.5rem 1rem;border-radius:6px;background:var(--accent);color:#fff;text-decoration:none;font-weight:600}
a.action.secondary{background:#fff;color:var(--accent);border:1px solid var(--accent)}
.muted{color:var(--muted)}
.badge{display:inline-block;padding:.1rem .55rem;border-radius:999px;background:#e7eefb;color:#1c3f7a;font-size:.85rem;font-weight:600;white-space:nowrap}
.badge.final{background:#e8f5ec;color:var(--ok)}.badge.overdue{background:#fdecea;color:#7a1c16}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(16rem,1fr));gap:1rem}
.card h2,.card h3{margin:0 0 .5rem;font-size:1.05rem}
.card ul{margin:0;padding-left:1.1rem}.card li{margin:.2rem 0}
.count{font-size:1.6rem;font-weight:700}
form.filters{display:grid;grid-template-columns:repeat(auto-fill,minmax(13rem,1fr));gap:.2rem 1rem;align-items:end;background:#fff;border:1px solid var(--line);border-radius:8px;padding:.5rem 1rem 1rem;margin-bottom:1rem}
form.filters label{margin:.6rem 0 .2rem;font-size:.92rem}
form.filters .range{display:flex;gap:.4rem}form.filters .range input{min-width:0}
form.filters details{grid-column:1/-1;margin-top:.6rem}
form.filters summary{cursor:pointer;color:var(--accent);font-weight:600}
form.filters .more-grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(13rem,1fr));gap:.2rem 1rem;align-items:end}
form.filters .buttons{display:flex;gap:.75rem;align-items:center;margin-top:.8rem}
input[type=number],input[type=datetime-local],input[type=search],textarea{width:100%;padding:.5rem .6rem;border:1px solid #aab2c0;border-radius:6px;font:inherit;background:#fff}
textarea{resize:vertical}
input[type=datetime-local]{max-width:16rem}
.table-wrap{overflow-x:auto;border-radius:8px}
table.records td a{font-weight:600}
.pager{display:flex;gap:1rem;align-items:center;margin:1rem 0}
dl.fields{display:grid;grid-template-columns:minmax(9rem,14rem) 1fr;gap:.1rem 1rem;margin:0}
dl.fields dt{font-weight:600;color:var(--muted);padding:.45rem 0;border-bottom:1px solid var(--line)}
dl.fields dd{margin:0;padding:.45rem 0;border-bottom:1px solid var(--line);overflow-wrap:anywhere}
dl.fields dt.wide{grid-column:1/-1;border-bottom:none;padding-bottom:0}
dl.fields dd.wide{grid-column:1/-1}
h2.spaced{margin-top:1.5rem}
.long{white-space:pre-wrap}
.empty{color:var(--muted)}
.layout2{display:grid;grid-template-columns:minmax(0,2fr) minmax(16rem,1fr);gap:1.25rem;align-items:start}
.transitions{display:flex;flex-direction:column;gap:.6rem}
.transitions .why{font-size:.88rem;color:var(--muted);margin:.15rem 0 0}
button[disabled],a.action[aria-disabled=true]{opacity:.55;cursor:not-allowed}
ol.timeline{list-style:none;margin:0;padding:0}
ol.timeline li{border-left:3px solid var(--line);padding:.2rem 0 .8rem .9rem;margin-left:.3rem}
ol.timeline .when{color:var(--muted);font-size:.88rem}
ol.timeline ul{margin:.3rem 0 0;padding-left:1.1rem;font-size:.92rem}
.field{margin-bottom:.4rem}
.field .problem{color:var(--danger);font-weight:600;margin:.25rem 0 0}
.field [aria-invalid=true]{border-color:var(--danger);box-shadow:0 0 0 1px var(--danger)}
.req{color:var(--danger)}
.choices{display:flex;flex-wrap:wrap;gap:.2rem 1rem}
label.check{display:flex;gap:.4rem;align-items:center;font-weight:normal;margin:.2rem 0}
.location{display:grid;grid-template-columns:1fr 1fr;gap:0 .75rem}.location label{font-weight:normal;font-size:.92rem;margin:.2rem 0}
.location .wide,.location button{grid-column:1/-1}
.location button{margin-top:.5rem;justify-self:start}
fieldset.group-item{background:#fafbfc}
.readonly{padding:.45rem 0}
form.export{display:flex;flex-wrap:wrap;gap:.5rem .75rem;align-items:center;margin:-.25rem 0 1rem}
form.export label{margin:0}form.export select{width:auto}form.export .hint{flex-basis:100%;margin:0}
.export-job progress{width:100%;height:1.4rem;margin:.5rem 0}.export-job .state{font-size:1.1rem;margin:0}
.export-job .rows{margin:.2rem 0 0}
ul.files{list-style:none;margin:0 0 1rem;padding:0;display:grid;gap:.6rem}
ul.files li{display:flex;gap:.75rem;align-items:center;margin:0}
ul.files img{width:96px;height:96px;object-fit:cover;border-radius:6px;border:1px solid var(--line);background:var(--bg);flex:none}
ul.files .kind{width:96px;height:96px;display:flex;align-items:center;justify-content:center;border-radius:6px;border:1px solid var(--line);background:var(--bg);color:var(--muted);font-weight:700;flex:none}
ul.files li>div{min-width:0}ul.files .name{font-weight:600;overflow-wrap:anywhere}
form.upload{border-top:1px solid var(--line);padding-top:.25rem}
form.upload input[type=file]{display:block;width:100%;min-width:0;font:inherit}
form.upload progress{width:100%;height:1.1rem}
form.upload .problem{color:var(--danger);font-weight:600;margin:.4rem 0 0}
form.upload .problem:empty,form.upload .status:empty{display:none}
form.upload .status{margin:.4rem 0 0}
.layout2>div{display:grid;gap:1rem;min-width:0}
@media (max-width:720px){
  header .bar{flex-wrap:wrap;gap:.4rem .9rem}
  header nav{order:3;width:100%;overflow-x:auto;gap:1rem}
  header .who>span{display:none}
  main{margin:1rem auto}
  .layout2{grid-template-columns:minmax(0,1fr)}
  .layout2>aside{order:-1}
  dl.fields{grid-template-columns:1fr}
  dl.fields dt{border-bottom:none;padding-bottom:0}
  table.records th.optional,table.records td.optional{display:none}
  .sticky-submit{position:sticky;bottom:0;background:#fff;padding:.75rem 0;border-top:1px solid var(--line)}
  .sticky-submit button{flex:1;padding:.8rem 1rem;font-size:1.05rem}
  input,select,textarea,button{font-size:16px}
}
`)

/** A workspace page in the one frame of the browser pages: header and menu, the modules' links, its own styles and scripts. */
export function sendWorkspacePage(
  desk: Desk,
  status: number,
  p: { title: string; main: SafeHtml; module?: RegisteredModule; scripts?: string[] }
) {
  const r: PageRequest = desk.r
  const modules = desk.modules()
  const nav = html`<nav class="modules" aria-label="Modules">${modules.map(
    (m) =>
      html`<a href="/records/${m.definition.key}"${p.module?.definition.key === m.definition.key ? html` aria-current="${r.ctx.path === `/records/${m.definition.key}` ? 'page' : 'true'}"` : ''}>${m.definition.title}</a>`
  )}</nav>`
  sendPage(
    r,
    status,
    layout({
      ...frameFor(r, desk.session),
      title: p.title,
      head: html`<style nonce="${r.nonce}">${css}</style>${assetTags(r.nonce, p.scripts ?? [])}`,
      main: html`<main>${nav}${p.main}</main>`
    })
  )
}

/** A short notice after a change (`?done=`): only the texts the pages themselves name. */
export function notice(text: string | undefined, more?: SafeHtml): SafeHtml {
  return text ? html`<div class="alert ok" role="status">${text}${more ? html` ${more}` : ''}</div>` : html``
}
