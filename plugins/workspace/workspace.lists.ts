import { canFire } from '../../core/auth/access.ts'
import { readQuery } from '../../core/http/query-string.ts'
import { summaryColumns } from '../../core/modules/derive/columns.ts'
import { fieldFinding } from '../../core/modules/derive/filters.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { FieldDefinition } from '../../core/modules/types.ts'
import { html, signedIn, type PageRequest, type SafeHtml } from '../settings/settings.shared.ts'
import { problems, type FieldProblem } from '../../core/errors/index.ts'
import { Desk, nobody, refusalOf, stateLabel, type People, type RecordView } from './workspace.context.ts'
import { optionsOf, peopleListId, showValue, type Names } from './workspace.fields.ts'
import { exportControls } from './workspace.exports.ts'
import { notice, sendWorkspacePage } from './workspace.views.ts'

/** Records on one list page. */
export const listPageSize = 50
/** Records per section of the home page. */
const homeSectionSize = 8

/** The query parameters a list page passes on to the records service (its URL is the API's query, shareable). */
const listParams = [
  'state',
  'q',
  'sort',
  'cursor',
  'payload',
  'overdue',
  'createdBy',
  'createdSince',
  'createdBefore',
  'updatedSince',
  'updatedBefore',
  'numberPrefix'
] as const

/** The workspace's default order: newest first, as people expect of a list of reports. */
const defaultSort = '-createdAt'

type Query = Record<string, unknown>

/** Drops what a GET form sends for fields left empty, at every level. */
function withoutEmpty(v: unknown): unknown {
  if (Array.isArray(v)) {
    const kept = v.filter((x) => !blank(x))
    return kept.length ? kept : undefined
  }
  if (v && typeof v === 'object') {
    const out: Query = {}
    for (const [k, x] of Object.entries(v)) {
      const kept = withoutEmpty(x)
      if (kept !== undefined) out[k] = kept
    }
    return Object.keys(out).length ? out : undefined
  }
  return blank(v) ? undefined : v
}

/** A box left empty, or holding only spaces: no filter. */
const blank = (v: unknown) => typeof v === 'string' && v.trim() === ''

/**
 * The page's query as the service's: known names only, empty fields dropped, and a date-time field's day ranges made
 * instants (the filter form's date inputs give days; `lte` a day means to its end).
 */
function serviceQuery(m: RegisteredModule, pageQuery: Query): Query {
  const q: Query = {}
  for (const name of listParams) {
    const v = withoutEmpty(pageQuery[name])
    if (v !== undefined) q[name] = v
  }
  const payload = q.payload as Record<string, unknown> | undefined
  for (const [key, cond] of Object.entries(payload ?? {})) {
    if (m.fields.get(key)?.type !== 'datetime' || !cond || typeof cond !== 'object') continue
    const c = cond as Record<string, unknown>
    for (const op of ['gte', 'lte'] as const)
      if (typeof c[op] === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(c[op]))
        c[op] = op === 'gte' ? `${c[op]}T00:00:00.000Z` : `${c[op]}T23:59:59.999Z`
  }
  if (q.overdue !== undefined) q.overdue = q.overdue === 'true' || q.overdue === true
  return q
}

/**
 * The filters given as a name rather than an id made ids in `q`: a user field's person typed by name (a tenant with
 * more people than a picker holds; for those who may see the tenant's people), a reference's record by its number (as
 * people know records; found through the records service, so only a record this person may open). What names nothing,
 * or several, is a problem.
 */
async function typedIds(desk: Desk, m: RegisteredModule, q: Query): Promise<FieldProblem[]> {
  const payload = q.payload as Record<string, unknown> | undefined
  const found: FieldProblem[] = []
  for (const [key, v] of Object.entries(payload ?? {})) {
    const f = m.fields.get(key)
    // People are named by name only to those the list's people filter names them to (who may change its records).
    if (typeof v !== 'string' || !f || (f.type === 'user' && !desk.can(m, 'update'))) continue
    const named = await desk.idNamed(f, v)
    if (!named) continue
    if ('id' in named) payload![key] = named.id
    else found.push({ pointer: `/payload/${key}`, field: key, code: 'filter', detail: named.problem })
  }
  return found
}

/**
 * A list view (a list page's query string) as the records service takes it, for the list and for the export of the
 * view: the list's names and conversions, and what names a person or a record as people do made ids; `typed` holds
 * the problems of those that name nothing.
 */
export async function viewQuery(
  desk: Desk,
  m: RegisteredModule,
  pageQuery: Query
): Promise<{ q: Query; typed: FieldProblem[] }> {
  const q = serviceQuery(m, pageQuery)
  return { q, typed: await typedIds(desk, m, q) }
}

/** The summary columns this person may read, as fields. */
function columnsOf(desk: Desk, m: RegisteredModule): FieldDefinition[] {
  const hidden = desk.hidden(m)
  return summaryColumns(m)
    .filter((k) => !hidden.has(k))
    .map((k) => m.fields.get(k))
    .filter((f): f is FieldDefinition => !!f)
}

const isFinal = (m: RegisteredModule, state: string) => !!m.states.get(state)?.final

function recordsTable(desk: Desk, m: RegisteredModule, items: RecordView[], names: Names, caption: string): SafeHtml {
  const columns = columnsOf(desk, m)
  const d = m.definition
  return html`<div class="table-wrap"><table class="records"><caption class="visually-hidden">${caption}</caption>
<thead><tr><th scope="col">Number</th>${columns.map((f, i) => html`<th scope="col"${i > 0 ? html` class="optional"` : ''}>${f.label ?? f.key}</th>`)}<th scope="col">State</th><th scope="col" class="optional">Updated</th></tr></thead>
<tbody>${items.map(
    (rec) =>
      html`<tr><td><a href="/records/${d.key}/${rec.id}">${rec.number}</a></td>${columns.map(
        (f, i) => html`<td${i > 0 ? html` class="optional"` : ''}>${showValue(f, rec.payload[f.key], names)}</td>`
      )}<td><span class="badge${isFinal(m, rec.state) ? ' final' : ''}">${stateLabel(m, rec.state)}</span></td><td class="optional">${rec.updatedAt.slice(0, 10)}</td></tr>`
  )}</tbody></table></div>`
}

/** `?…` of a list URL from a query object (qs's bracket form, the same the service reads). */
function queryString(q: Query): string {
  const parts: string[] = []
  const walk = (prefix: string, v: unknown) => {
    if (v === undefined || v === null || v === '') return
    if (Array.isArray(v)) v.forEach((x) => walk(`${prefix}[]`, x))
    else if (typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(`${prefix}[${k}]`, x)
    else
      parts.push(
        `${encodeURIComponent(prefix).replace(/%5B/g, '[').replace(/%5D/g, ']')}=${encodeURIComponent(String(v))}`
      )
  }
  for (const [k, v] of Object.entries(q)) walk(k, v)
  return parts.length ? `?${parts.join('&')}` : ''
}

/** The filter controls of a module's list, derived from its fields' types (what lists may filter by). */
function filterForm(desk: Desk, m: RegisteredModule, q: Query, people: People): SafeHtml {
  const d = m.definition
  const payload = (q.payload ?? {}) as Record<string, unknown>
  const cond = (key: string, op: string) => {
    const c = payload[key]
    return c && typeof c === 'object' ? String((c as Record<string, unknown>)[op] ?? '') : ''
  }
  const bare = (key: string) => (typeof payload[key] === 'string' ? payload[key] : '')
  const me = desk.principal.userId
  const controls = desk
    .readable(m)
    .filter((f) => fieldFinding(f).filterable)
    .map((f) => {
      const id = `filter-${f.key}`
      const label = f.label ?? f.key
      const name = `payload[${f.key}]`
      switch (f.type) {
        case 'singleChoice':
        case 'multipleChoice':
          return html`<div><label for="${id}">${label}</label><select id="${id}" name="${name}"><option value="">Any</option>${optionsOf(f).map((o) => html`<option value="${o.value}"${bare(f.key) === o.value ? html` selected` : ''}>${o.label}</option>`)}</select></div>`
        case 'user':
          // More people than a picker holds: a name is typed (suggested from the first by name) and found by the page.
          if (!people.complete)
            return html`<div><label for="${id}">${label}</label><input type="text" id="${id}" name="${name}" list="${peopleListId}" autocomplete="off" value="${bare(f.key) === me ? '' : bare(f.key)}" placeholder="Name or user name"></div>`
          return html`<div><label for="${id}">${label}</label><select id="${id}" name="${name}"><option value="">Anyone</option>${me ? html`<option value="${me}"${bare(f.key) === me ? html` selected` : ''}>Me</option>` : ''}${people.list.filter((p) => p.id !== me).map((p) => html`<option value="${p.id}"${bare(f.key) === p.id ? html` selected` : ''}>${p.name}</option>`)}</select></div>`
        case 'boolean':
          return html`<div><label for="${id}">${label}</label><select id="${id}" name="${name}"><option value="">Any</option><option value="true"${bare(f.key) === 'true' ? html` selected` : ''}>Yes</option><option value="false"${bare(f.key) === 'false' ? html` selected` : ''}>No</option></select></div>`
        case 'date':
        case 'datetime':
        case 'number':
        case 'integer': {
          const type = f.type === 'date' || f.type === 'datetime' ? 'date' : 'number'
          const from = (cond(f.key, 'gte') || '').slice(0, type === 'date' ? 10 : undefined)
          const to = (cond(f.key, 'lte') || '').slice(0, type === 'date' ? 10 : undefined)
          return html`<div role="group" aria-labelledby="${id}-legend"><span class="label" id="${id}-legend"><label for="${id}-from">${label}</label></span><div class="range"><input type="${type}" id="${id}-from" name="${name}[gte]" value="${from}" aria-label="${label}: from"${type === 'number' ? html` step="any"` : ''}><input type="${type}" id="${id}-to" name="${name}[lte]" value="${to}" aria-label="${label}: to"${type === 'number' ? html` step="any"` : ''}></div></div>`
        }
        case 'text':
          return html`<div><label for="${id}">${label}</label><input type="text" id="${id}" name="${name}" value="${bare(f.key)}"></div>`
        case 'recordRef':
          // A reference by the number people know the record by (an id from a shared link works too).
          return html`<div><label for="${id}">${label}</label><input type="text" id="${id}" name="${name}" value="${bare(f.key)}" placeholder="Record number" autocomplete="off" spellcheck="false"></div>`
        default:
          return html``
      }
    })
  const sortable = desk.readable(m).filter((f) => fieldFinding(f).sortable)
  const sorts: Array<[string, string]> = [
    ['-createdAt', 'Newest first'],
    ['createdAt', 'Oldest first'],
    ['-updatedAt', 'Recently changed'],
    ['number', 'Number'],
    ...sortable.flatMap((f): Array<[string, string]> => [
      [`-payload.${f.key}`, `${f.label ?? f.key}, highest or latest first`],
      [`payload.${f.key}`, `${f.label ?? f.key}, lowest or earliest first`]
    ]),
    ...(q.q ? [['relevance', 'Best match'] as [string, string]] : [])
  ]
  const sort = typeof q.sort === 'string' ? q.sort : defaultSort
  const active = Object.keys(payload).length + (q.overdue !== undefined ? 1 : 0)
  return html`<form class="filters" method="get" action="/records/${d.key}" role="search" aria-label="Filter ${d.title}">
<div><label for="filter-q">Search</label><input type="search" id="filter-q" name="q" value="${typeof q.q === 'string' ? q.q : ''}" maxlength="200"></div>
<div><label for="filter-state">State</label><select id="filter-state" name="state"><option value="">Any</option>${d.workflow.states.map((s) => html`<option value="${s.key}"${q.state === s.key ? html` selected` : ''}>${s.label ?? s.key}</option>`)}</select></div>
<div><label for="filter-sort">Order</label><select id="filter-sort" name="sort">${sorts.map(([v, l]) => html`<option value="${v}"${sort === v ? html` selected` : ''}>${l}</option>`)}</select></div>
${people.complete ? '' : html`<datalist id="${peopleListId}">${people.list.map((p) => html`<option value="${p.name}"></option>`)}</datalist>`}
<div class="buttons"><button type="submit">Apply</button><a href="/records/${d.key}">Clear</a></div>
<details class="more"${active ? html` open` : ''}><summary>More filters${active ? ` (${active} in use)` : ''}</summary><div class="more-grid">
${controls}
${d.due && !desk.hidden(m).has(d.due.field) ? html`<div><label for="filter-overdue">Overdue</label><select id="filter-overdue" name="overdue"><option value="">Any</option><option value="true"${q.overdue === 'true' ? html` selected` : ''}>Overdue only</option><option value="false"${q.overdue === 'false' ? html` selected` : ''}>Not overdue</option></select></div>` : ''}
</div></details>
</form>`
}

/** `GET /records/:module`: one page of a module's records, filtered, searched and sorted as its URL says. */
export async function showList(r: PageRequest) {
  const session = signedIn(r)
  if (!session) return
  const desk = new Desk(r, session)
  const m = desk.module(r.params.module)
  const d = m.definition
  const pageQuery = readQuery(r.ctx.querystring)
  // A person typed by name (a tenant with more people than a picker holds) is filtered by their id, a record by its number.
  const { q, typed } = await viewQuery(desk, m, pageQuery)
  // The people filter names the tenant's people to those who manage the module's records (they may change them);
  // everyone else is offered "Me".
  const [people, result] = await Promise.all([
    desk.can(m, 'update') ? desk.people() : Promise.resolve(nobody),
    (typed.length
      ? Promise.reject(problems.validation('A person or record named in the filters was not found.', typed))
      : desk.records.find(
          desk.call({ query: { sort: defaultSort, ...q, moduleKey: d.key, limit: listPageSize, count: true } })
        )
    )
      .then((page) => ({ page: page }))
      .catch((err: unknown) => ({ refusal: refusalOf(err) }))
  ])
  const shown = { ...pageQuery, ...(pageQuery.sort ? {} : { sort: defaultSort }) }
  let body: SafeHtml
  let status = 200
  if ('refusal' in result) {
    status = result.refusal.status
    const problems = [
      ...result.refusal.top,
      ...[...result.refusal.fields].flatMap(([k, ms]) => ms.map((x) => `${k}: ${x}`))
    ]
    body = html`<div class="alert error" role="alert">These filters cannot be used: ${problems.join('; ')}</div>`
  } else {
    const items = result.page.items as unknown as RecordView[]
    const names = await desk.names(
      m,
      items.map((i) => i.payload)
    )
    const count = result.page.count
    const { cursor: _c, ...withoutCursor } = q
    const next = result.page.nextCursor
      ? `/records/${d.key}${queryString({ ...withoutCursor, sort: q.sort ?? defaultSort, cursor: result.page.nextCursor })}`
      : undefined
    body = html`<p class="muted" aria-live="polite">${count ? html`${count.exact ? '' : 'About '}${count.value.toLocaleString('en')} record${count.value === 1 ? '' : 's'}` : ''}${q.cursor ? html` · a later page` : ''}</p>
${items.length ? recordsTable(desk, m, items, names, `${d.title} records`) : html`<p class="card empty">No records match.</p>`}
<nav class="pager" aria-label="Pages">${q.cursor ? html`<a href="/records/${d.key}${queryString(withoutCursor)}">First page</a>` : ''}${next ? html`<a href="${next}" rel="next">Next page</a>` : ''}</nav>`
  }
  sendWorkspacePage(desk, status, {
    title: d.title,
    module: m,
    main: html`<div class="head"><h1>${d.title}</h1>${desk.can(m, 'create') ? html`<a class="action" href="/records/${d.key}/new">New ${d.title.toLowerCase()}</a>` : ''}</div>
${d.description ? html`<p class="muted">${d.description}</p>` : ''}
${notice(r.ctx.query.done === 'deleted' ? 'The record was deleted. It stays in the audit log.' : undefined)}
${filterForm(desk, m, shown, people)}
${exportControls(desk, m, shown)}
${body}`
  })
}

/** One section of the home page: records of a module that a query selects, with a link to the whole list. */
interface Section {
  m: RegisteredModule
  heading: string
  query: Query
}

/**
 * `GET /records`: what needs the person signed in. Per module they may read: open records naming them in a user
 * field (lead, owner, reviewer…), overdue records, and the records they reported; each with its count and a link to
 * the list that shows them all.
 */
export async function showHome(r: PageRequest) {
  const session = signedIn(r)
  if (!session) return
  const desk = new Desk(r, session)
  const me = desk.principal.userId
  const modules = desk.modules()
  const sections: Section[] = []
  for (const m of modules) {
    const d = m.definition
    const open = d.workflow.states
      .filter((s) => !s.final)
      .map((s) => s.key)
      .join(',')
    if (me)
      for (const f of desk.readable(m).filter((f) => f.type === 'user' && fieldFinding(f).filterable))
        sections.push({
          m,
          heading: `${d.title}: ${f.label ?? f.key} is me`,
          query: { state: open, payload: { [f.key]: me } }
        })
    // Records in a state out of which the person may take the next step (start an investigation, approve…).
    const actionable = d.workflow.states
      .filter(
        (st) =>
          !st.final && d.workflow.transitions.some((t) => t.from.includes(st.key) && canFire(desk.principal, m, t))
      )
      .map((st) => st.key)
    if (actionable.length)
      sections.push({
        m,
        heading: `${d.title}: waiting for a step you can take`,
        query: { state: actionable.join(',') }
      })
    if (d.due && !desk.hidden(m).has(d.due.field))
      sections.push({ m, heading: `${d.title}: overdue`, query: { overdue: true } })
    if (me && desk.can(m, 'create'))
      sections.push({ m, heading: `${d.title}: reported by me`, query: { createdBy: me } })
  }
  const counts = await Promise.all(
    modules.map((m) =>
      desk.records
        .find(desk.call({ query: { moduleKey: m.definition.key, limit: 1, count: true } }))
        .then((p) => p.count ?? null)
        .catch(() => null)
    )
  )
  const filled = await Promise.all(
    sections.map(async (s) => {
      try {
        const page = await desk.records.find(
          desk.call({
            query: { ...s.query, moduleKey: s.m.definition.key, sort: defaultSort, limit: homeSectionSize, count: true }
          })
        )
        const items = page.items as unknown as RecordView[]
        return items.length
          ? {
              ...s,
              items,
              count: page.count,
              names: await desk.names(
                s.m,
                items.map((i) => i.payload)
              )
            }
          : undefined
      } catch (err) {
        refusalOf(err)
        return undefined
      }
    })
  )
  const shown = filled.filter((s) => !!s)
  sendWorkspacePage(desk, 200, {
    title: 'Home',
    main: html`<h1>What needs you</h1>
${
  shown.length
    ? shown.map(
        (
          s
        ) => html`<section class="card" aria-labelledby="h-${s.heading.replace(/\W+/g, '-')}"><h2 id="h-${s.heading.replace(/\W+/g, '-')}">${s.heading} <span class="muted">(${s.count ? `${s.count.exact ? '' : 'about '}${s.count.value.toLocaleString('en')}` : s.items.length})</span></h2>
${recordsTable(desk, s.m, s.items, s.names, s.heading)}
<p><a href="/records/${s.m.definition.key}${queryString({ ...s.query, sort: defaultSort })}">See all</a></p></section>`
      )
    : html`<p class="card">Nothing needs you right now: no open records name you, nothing you can see is overdue.</p>`
}
<h2>Modules</h2>
<div class="grid">${modules.map(
      (m, i) =>
        html`<a class="card" href="/records/${m.definition.key}"><h3>${m.definition.title}</h3><span class="count">${counts[i] ? `${counts[i].exact ? '' : '~'}${counts[i].value.toLocaleString('en')}` : '—'}</span> <span class="muted">${counts[i]?.value === 1 ? 'record' : 'records'}</span></a>`
    )}</div>`
  })
}
