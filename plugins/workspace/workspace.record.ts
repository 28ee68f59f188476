import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { FieldDefinition } from '../../core/modules/types.ts'
import { html, signedIn, type PageRequest, type SafeHtml } from '../settings/settings.shared.ts'
import { attachmentsSection } from './workspace.attachments.ts'
import { Desk, stateLabel, type RecordView } from './workspace.context.ts'
import { showInstant, showValue, type Names } from './workspace.fields.ts'
import { openRecord } from './workspace.forms.ts'
import { whyUnavailable } from './workspace.transitions.ts'
import { notice, sendWorkspacePage } from './workspace.views.ts'

/** What `?done=` after a change says (only these texts: the URL cannot put words on the page). */
const done: Record<string, string> = {
  created: 'Created.',
  saved: 'Your changes were saved.',
  unchanged: 'Nothing was changed.',
  moved: 'Done: the record moved on.',
  uploaded: 'The file was attached.'
}

const isEmpty = (v: unknown) => v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0)

function fieldList(m: RegisteredModule, fields: FieldDefinition[], rec: RecordView, names: Names): SafeHtml {
  const filled = fields.filter((f) => !isEmpty(rec.payload[f.key]))
  const empty = fields.filter((f) => isEmpty(rec.payload[f.key]))
  // A computed field says so: nobody typed it, the platform worked it out from the others.
  const label = (f: FieldDefinition) =>
    m.fieldRules.computedKeys.has(f.key)
      ? html`${f.label ?? f.key} <span class="muted">(computed)</span>`
      : (f.label ?? f.key)
  return html`<dl class="fields">${filled.map((f) =>
    f.type === 'group'
      ? html`<dt class="wide">${label(f)}</dt><dd class="wide">${showValue(f, rec.payload[f.key], names)}</dd>`
      : html`<dt>${label(f)}</dt><dd>${showValue(f, rec.payload[f.key], names)}</dd>`
  )}</dl>${empty.length ? html`<p class="muted">Not filled in yet: ${empty.map((f) => f.label ?? f.key).join(', ')}.</p>` : ''}`
}

/** Who did it: the person, and the person behind a token when there is one. */
const who = (a: { name: string; onBehalfOf?: { name: string } }) =>
  a.onBehalfOf && a.onBehalfOf.name !== a.name ? `${a.name} (for ${a.onBehalfOf.name})` : a.name

function timeline(
  m: RegisteredModule,
  rec: RecordView,
  names: Names,
  readable: ReadonlyMap<string, FieldDefinition>
): SafeHtml {
  // An update whose every change was to a field this person may not read (the service leaves those changes out) is
  // not shown: "changed it", with nothing, would tell that a hidden field changed.
  const entries = [...(rec.activity ?? [])].reverse().filter((a) => a.action !== 'updated' || a.changes.length > 0)
  const change = (c: { field: string; from: unknown; to: unknown }) => {
    const f = readable.get(c.field)
    const show = (v: unknown) =>
      isEmpty(v) ? html`<span class="empty">nothing</span>` : f ? showValue(f, v, names) : JSON.stringify(v)
    return html`<li>${f?.label ?? c.field}: ${show(c.from)} → ${show(c.to)}</li>`
  }
  return html`<ol class="timeline">${entries.map((a) => {
    const what =
      a.action === 'transitioned' && a.transition
        ? html`moved it from <strong>${stateLabel(m, a.transition.from)}</strong> to <strong>${stateLabel(m, a.transition.to)}</strong> (${m.transitions.get(a.transition.key)?.label ?? a.transition.key})`
        : a.action === 'created'
          ? 'created it'
          : a.action === 'updated'
            ? 'changed it'
            : a.action === 'deleted'
              ? 'deleted it'
              : a.action === 'migrated'
                ? 'moved it to a new version of the module'
                : a.action
    const changes =
      a.action === 'created' ? [] : a.changes.filter((c) => readable.has(c.field) || !m.fields.has(c.field))
    return html`<li><div><strong>${who(a.actor)}</strong> ${what}</div><div class="when"><time datetime="${a.at}">${showInstant(a.at)}</time></div>${a.comment ? html`<p class="long">“${a.comment}”</p>` : ''}${changes.length ? html`<ul>${changes.map(change)}</ul>` : ''}</li>`
  })}</ol>`
}

/**
 * The transitions out of the record's state: those the service lists as available (a link to the form that asks for
 * what they need, or, when separation of duties holds this person apart, the reason), then those this person's roles
 * may not fire, with who may.
 */
function transitions(desk: Desk, m: RegisteredModule, rec: RecordView): SafeHtml {
  const d = m.definition
  const available = rec.availableTransitions ?? []
  const out = d.workflow.transitions.filter((t) => t.from.includes(rec.state))
  if (!out.length)
    return html`<p class="muted">No transitions lead out of ${stateLabel(m, rec.state).toLowerCase()}.</p>`
  const labelOf = (key: string) => m.fields.get(key)?.label ?? key
  return html`<div class="transitions">${out.map((t) => {
    const a = available.find((x) => x.key === t.key)
    const label = t.label ?? t.key
    const id = `why-${t.key}`
    if (a && !a.refusal)
      return html`<div><a class="action" href="/records/${d.key}/${rec.id}/transition/${t.key}">${label}</a>${a.missingFields.length ? html`<p class="why">Asks for: ${a.missingFields.map(labelOf).join(', ')}</p>` : ''}</div>`
    const why = whyUnavailable(desk, m, rec, t.key)
    return html`<div><button type="button" disabled aria-describedby="${id}">${label}</button><p class="why" id="${id}">${why}</p></div>`
  })}</div>`
}

/** `GET /records/:module/:id`: the record as the records service shows this person, with what they may do next. */
export async function showRecord(r: PageRequest) {
  const opened = await openRecord(r)
  if (!opened) return
  const { desk, m, rec } = opened
  const d = m.definition
  const readable = desk.readable(m)
  const names = await desk.names(m, [
    rec.payload,
    ...(rec.activity ?? []).flatMap((a) => a.changes.flatMap((c) => [{ [c.field]: c.from }, { [c.field]: c.to }]))
  ])
  const title = readable.find((f) => f.type === 'text' && !isEmpty(rec.payload[f.key]))
  const locks = m.states.get(rec.state)?.locks ?? []
  const mayEdit = desk.can(m, 'update') && !locks.includes('*')
  const said = r.ctx.query.done
  const flash = typeof said === 'string' && Object.hasOwn(done, said) ? done[said] : undefined
  sendWorkspacePage(desk, 200, {
    title: rec.number,
    module: m,
    scripts: ['attachments.js'],
    main: html`<p class="crumbs"><a href="/records/${d.key}">${d.title}</a></p>
<div class="head"><div><h1>${rec.number}${title ? html`: ${rec.payload[title.key]}` : ''}</h1>
<p class="muted"><span class="badge${m.states.get(rec.state)?.final ? ' final' : ''}">${stateLabel(m, rec.state)}</span> · reported by ${who(rec.createdBy)} on ${showInstant(rec.createdAt)} · version ${rec.version}</p></div></div>
${notice(
  flash,
  // Just reported (on a phone, often): the photo comes next.
  said === 'created' && desk.can(m, 'attachments')
    ? html`<a href="#h-attachments">Add a photo or a file</a>.`
    : undefined
)}
<div class="layout2">
<div>
<section class="card" aria-labelledby="h-fields"><h2 id="h-fields">Details</h2>${fieldList(m, readable, rec, names)}</section>
${await attachmentsSection(desk, m, rec)}
<section class="card" aria-labelledby="h-activity"><h2 id="h-activity">Activity</h2>${timeline(m, rec, names, new Map(readable.map((f) => [f.key, f])))}</section>
</div>
<aside class="card" aria-labelledby="h-next"><h2 id="h-next">Next steps</h2>${transitions(desk, m, rec)}
<h2 class="spaced">This record</h2><div class="transitions">
${mayEdit ? html`<a class="action secondary" href="/records/${d.key}/${rec.id}/edit">Edit details</a>` : ''}
<a class="action secondary" href="/records/${d.key}/${rec.id}/report.pdf">Report (PDF)</a>
${desk.can(m, 'delete') ? html`<a class="action secondary" href="/records/${d.key}/${rec.id}/delete">Delete</a>` : ''}
</div></aside>
</div>`
  })
}

/**
 * `GET /records/:module/:id/report.pdf`: the record report, made by the same records `get` as
 * `GET /api/v1/records/{id}` with `Accept: application/pdf` (the record-report plugin's hook renders it).
 */
export async function recordReport(r: PageRequest) {
  const session = signedIn(r)
  if (!session) return
  const desk = new Desk(r, session)
  const m = desk.module(r.params.module)
  // A hook context as the last argument makes the call answer with the context, the hook's rendered PDF in it.
  const hooked = desk.records as unknown as {
    get: { createContext(): object }
  }
  const context = await desk.records.get(
    r.params.id,
    desk.onRecord(m, { headers: { accept: 'application/pdf' } }),
    hooked.get.createContext() as never
  )
  const c = context as unknown as { dispatch?: Buffer; http?: { headers?: Record<string, string> } }
  if (!c.dispatch) throw new Error('the record report was not rendered (record-report plugin missing)')
  r.ctx.set(c.http?.headers ?? {})
  r.ctx.type = 'application/pdf'
  r.ctx.body = c.dispatch
}
