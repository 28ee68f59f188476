import t from '../helpers/tap.ts'
import { signInBrowser } from '../helpers/pages.ts'
import { defaultTenants, startTestServer } from '../helpers/server.ts'

/**
 * The workspace's lists and home page over HTTP, as a browser without JavaScript uses them: a list's order and its
 * pages, a reference filtered by the number people know a record by, what home leaves out (records in a final state)
 * and what it adds (overdue records), and computed fields shown as such.
 */
const server = await startTestServer({
  limits: { signInAttemptsPerMinute: 100 },
  tenants: {
    ...defaultTenants,
    acme: { ...defaultTenants.acme, modules: [...defaultTenants.acme.modules, 'risk-assessment'] }
  }
})
t.teardown(() => server.close())

const password = 'correct horse battery staple'
const make = (userName: string, displayName: string, roles: string[]) =>
  server.platform.users.create('acme', { userName, displayName, password, roles })
await make('sam', 'Sam Safety', ['safety-manager'])
const ivy = await make('ivy', 'Ivy Investigator', ['investigator'])
const key = server.keys.acme
const sam = await signInBrowser(server, 'sam', password)
const ivys = await signInBrowser(server, 'ivy', password)

const textOf = (html: string) =>
  html
    .replace(/<style[\s\S]*?<\/style>/g, '')
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .replace(/&quot;/g, '"')
/** The text of each row's first data cells: number, then the summary columns, in the order the table shows them. */
const rows = (html: string) =>
  [...html.matchAll(/<tr><td><a href="\/records\/[^"]+">([^<]+)<\/a><\/td>(.*?)<\/tr>/g)].map((m) => ({
    number: m[1],
    cells: [...m[2].matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((c) => textOf(c[1]).trim())
  }))

async function create(moduleKey: string, payload: Record<string, unknown>) {
  const res = await server.request('POST', '/api/v1/records', { token: key, body: { moduleKey, payload } })
  if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`)
  return res.body as { id: string; number: string }
}
async function fire(id: string, transition: string, payload: Record<string, unknown> = {}) {
  const res = await server.request('POST', `/api/v1/records/${id}:transition`, {
    token: key,
    body: { transition, payload }
  })
  if (res.status !== 200) throw new Error(`${transition}: ${res.status} ${res.text}`)
}
const incident = (title: string, site: string, extra: Record<string, unknown> = {}) => ({
  title,
  description: 'Seen on the morning walk',
  occurredAt: '2026-11-20T09:30:00.000Z',
  site,
  category: 'near-miss',
  severity: 'low',
  ...extra
})

t.test(
  'a list sorted by a field shows that order, and its pages go on by the cursor with the filters kept',
  async (t) => {
    const sites = ['Utrecht', 'Aarhus', 'Mons', 'Bergen', 'Zwolle']
    for (let i = 0; i < 53; i++) await create('incident', incident(`Paged ${i + 1}`, sites[i % sites.length]))
    const first = await sam.get('/records/incident?q=paged&sort=payload.site')
    t.equal(first.status, 200)
    t.match(first.html, /53 records/)
    const shown = rows(first.html)
    t.equal(shown.length, 50, 'fifty a page')
    const siteColumn = shown.map((r) => r.cells[1])
    t.same(
      siteColumn,
      [...siteColumn].sort((a, b) => a.localeCompare(b)),
      'in the order of the site'
    )
    t.equal(siteColumn[0], 'Aarhus')
    const next = /<a href="([^"]+)" rel="next">Next page<\/a>/.exec(first.html)
    t.ok(next, 'a next page')
    const nextHref = next![1].replace(/&amp;/g, '&')
    t.match(nextHref, /q=paged/, 'the search is kept')
    t.match(nextHref, /sort=payload\.site/, 'and the order')
    const second = await sam.get(nextHref)
    t.equal(second.status, 200)
    const rest = rows(second.html)
    t.equal(rest.length, 3, 'the last three')
    t.same(
      rest.map((r) => r.cells[1]),
      ['Zwolle', 'Zwolle', 'Zwolle']
    )
    t.notOk(new Set(shown.map((r) => r.number)).has(rest[0].number), 'no record twice')
    t.match(second.html, /<a href="\/records\/incident\?q=paged&amp;sort=payload\.site">First page<\/a>/)
    t.notMatch(second.html, /rel="next"/, 'and no page after it')
  }
)

t.test('a reference is filtered by the number people know its record by', async (t) => {
  const leak = await create('incident', incident('Oil leak at the press', 'Mons'))
  const other = await create('incident', incident('Trip on a cable', 'Mons'))
  const action = (title: string, incidentId: string) =>
    create('corrective-action', { title, incident: incidentId, kind: 'corrective' })
  await action('Replace the press seals', leak.id)
  await action('Drip trays under the press', leak.id)
  await action('Cable covers in aisle 3', other.id)

  const form = await sam.get('/records/corrective-action')
  t.match(
    form.html,
    /<label for="filter-incident">Incident<\/label><input type="text" id="filter-incident" name="payload\[incident\]"/
  )
  const page = await sam.get(`/records/corrective-action?payload[incident]=${leak.number.toLowerCase()}`)
  t.equal(page.status, 200)
  t.same(
    rows(page.html)
      .map((r) => r.cells[0])
      .sort(),
    ['Drip trays under the press', 'Replace the press seals'],
    'the actions of that incident, its number typed in any case'
  )
  t.same(
    rows(page.html).map((r) => r.cells[1]),
    ['Corrective', 'Corrective'],
    'their kind by its label'
  )
  t.match(
    page.html,
    new RegExp(`name="payload\\[incident\\]" value="${leak.number.toLowerCase()}"`),
    'the filter shows what was typed'
  )
  const byId = await sam.get(`/records/corrective-action?payload[incident]=${other.id}`)
  t.same(
    rows(byId.html).map((r) => r.cells[0]),
    ['Cable covers in aisle 3'],
    'an id from a shared link works too'
  )
  const long = await sam.get(`/records/corrective-action?payload[incident]=${'x'.repeat(150)}`)
  t.equal(long.status, 400, 'a text longer than any number')
  t.match(textOf(long.html), /These filters cannot be used: incident: names no incident you may open \("x{40}…"\)/)
  const blank = await sam.get('/records/corrective-action?payload[incident]=%20%20')
  t.equal(blank.status, 200, 'spaces alone are no filter')
  const nowhere = await sam.get('/records/corrective-action?payload[incident]=INC-1999-99999')
  t.equal(nowhere.status, 400)
  t.match(
    textOf(nowhere.html),
    /names no incident you may open \("INC-1999-99999"\): type its number, e\.g\. INC-\d{4}-00001/
  )
})

t.test('home leaves out records in a final state and lists the overdue ones', async (t) => {
  const open = await create('incident', incident('Open with Ivy leading', 'Bergen'))
  await fire(open.id, 'start-investigation', { investigationLead: ivy.id })
  const done = await create('incident', incident('Closed with Ivy leading', 'Bergen'))
  await fire(done.id, 'start-investigation', { investigationLead: ivy.id })
  await fire(done.id, 'record-root-cause', { rootCause: 'A loose cable' })
  // Closing is refused to whoever created it (the key): Sam, a safety manager, closes it.
  const closeForm = await sam.get(`/records/incident/${done.id}/transition/close`)
  const closed = await sam.post(`/records/incident/${done.id}/transition/close`, {
    submitKey: /name="submitKey" value="([^"]+)"/.exec(closeForm.html)![1],
    version: '3',
    closureNote: 'Cable clipped to the wall'
  })
  t.equal(closed.status, 303)

  const ivyHome = await ivys.get('/records')
  const lead = /<section[^>]*><h2 id="h-Incident-Investigation-lead-is-me">[\s\S]*?<\/section>/.exec(ivyHome.html)
  t.ok(lead, 'a section of the incidents Ivy leads')
  t.match(lead![0], /Open with Ivy leading/)
  t.notMatch(lead![0], /Closed with Ivy leading/, 'not the closed one')

  const late = await create('corrective-action', {
    title: 'Guard rail on the mezzanine',
    incident: open.id,
    kind: 'corrective'
  })
  await fire(late.id, 'start', { owner: ivy.id, dueDate: '2020-01-01' })
  await create('corrective-action', {
    title: 'Not due yet',
    incident: open.id,
    kind: 'preventive',
    dueDate: '2099-01-01'
  })
  const samHome = await sam.get('/records')
  const overdue = /<section[^>]*><h2 id="h-Corrective-action-overdue">([\s\S]*?)<\/section>/.exec(samHome.html)
  t.ok(overdue, 'a section of the overdue corrective actions')
  t.match(overdue![1], /Guard rail on the mezzanine/)
  t.notMatch(overdue![1], /Not due yet/)
  t.match(overdue![1], /href="\/records\/corrective-action\?overdue=true[^"]*">See all/, 'linked to the list of them')
})

t.test('a computed field is shown as computed on the record page, and is not a control of its forms', async (t) => {
  const ra = await create('risk-assessment', {
    title: 'Loading bay reversing',
    site: 'Aarhus',
    likelihood: 3,
    severity: 4
  })
  const page = await sam.get(`/records/risk-assessment/${ra.id}`)
  t.equal(page.status, 200)
  t.match(textOf(page.html), /Risk score \(computed\) 12/)
  t.match(textOf(page.html), /Risk rating \(computed\) High/, 'with its choice label')
  t.notMatch(textOf(page.html), /Likelihood \(1-5\) \(computed\)/, 'a typed field is not marked')
  const form = await sam.get(`/records/risk-assessment/${ra.id}/edit`)
  t.notMatch(form.html, /name="riskScore"/, 'nobody types it')
  t.match(form.html, /id="f-likelihood" name="likelihood"[^>]* min="1" max="5"/, 'what it is computed from is')
})

t.test("a group's required member is required in the rows the record has, and not in the spare row", async (t) => {
  const ra = await create('risk-assessment', {
    title: 'Pallet racking inspection',
    site: 'Mons',
    likelihood: 2,
    severity: 3,
    hazards: [{ hazard: 'Falling loads' }]
  })
  const form = await sam.get(`/records/risk-assessment/${ra.id}/edit`)
  t.equal(form.status, 200)
  t.match(
    form.html,
    /<input type="text" id="f-hazards-0-hazard" name="hazards\.0\.hazard"[^>]* required aria-required="true"[^>]* value="Falling loads"/,
    "the record's row: its hazard is required"
  )
  t.match(form.html, /<input type="text" id="f-hazards-1-hazard" name="hazards\.1\.hazard"/, 'a spare row to add one')
  t.notMatch(form.html, /id="f-hazards-1-hazard"[^>]* required/, 'which may stay empty')
})

t.test('a form names a referenced record by its number, and shows it by its number when edited', async (t) => {
  const spill = await create('incident', incident('Solvent spill in store 2', 'Bergen'))
  const form = await sam.get('/records/corrective-action/new')
  const submit = /name="submitKey" value="([^"]+)"/.exec(form.html)![1]
  const wrong = await sam.post('/records/corrective-action/new', {
    submitKey: submit,
    title: 'Bund the solvent store',
    incident: 'INC-1999-00001',
    kind: 'preventive'
  })
  t.equal(wrong.status, 400, 'a number of no incident is refused')
  t.match(
    textOf(wrong.html),
    /Incident names no incident you may open \("INC-1999-00001"\)/,
    'beside the field that named it'
  )
  const made = await sam.post('/records/corrective-action/new', {
    submitKey: /name="submitKey" value="([^"]+)"/.exec(wrong.html)![1],
    title: 'Bund the solvent store',
    incident: ` ${spill.number.toLowerCase()} `,
    kind: 'preventive'
  })
  t.equal(made.status, 303, 'its number, in any case, names it')
  const id = /corrective-action\/([0-9a-f-]{36})/.exec(made.location!)![1]
  const stored = await server.request('GET', `/api/v1/records/${id}`, { token: key })
  t.equal(stored.body.payload.incident, spill.id, 'stored as the incident id')
  const page = await sam.get(`/records/corrective-action/${id}`)
  t.match(page.html, new RegExp(`<a href="/records/incident/${spill.id}">${spill.number}</a>`), 'linked by its number')
  const edit = await sam.get(`/records/corrective-action/${id}/edit`)
  t.match(
    edit.html,
    new RegExp(`id="f-incident" name="incident"[^>]* value="${spill.number}"`),
    'the edit form shows it'
  )
  const saved = await sam.post(`/records/corrective-action/${id}/edit`, {
    submitKey: /name="submitKey" value="([^"]+)"/.exec(edit.html)![1],
    version: '1',
    title: 'Bund the solvent store',
    incident: spill.number,
    kind: 'preventive'
  })
  t.equal(saved.status, 303)
  t.match(saved.location!, /done=unchanged/, 'saving it unchanged changes nothing')
})

t.test('the export of a view filtered by a typed number exports that filter, the number made an id', async (t) => {
  const fire2 = await create('incident', incident('Fire door wedged open', 'Utrecht'))
  await create('corrective-action', { title: 'Remove the wedge', incident: fire2.id, kind: 'containment' })
  const view = `payload[incident]=${fire2.number}`
  const list = await sam.get(`/records/corrective-action?${view}`)
  const form = /<form class="export"[\s\S]*?<\/form>/.exec(list.html)![0]
  const started = await sam.post('/records/corrective-action/export', {
    submitKey: /name="submitKey" value="([^"]+)"/.exec(form)![1],
    view: /name="view" value="([^"]+)"/.exec(form)![1].replace(/&amp;/g, '&'),
    format: 'csv'
  })
  t.equal(started.status, 303, 'the export is started')
  const job = await sam.get(started.location!)
  const back = /<a href="([^"]+)">Back to the view<\/a>/.exec(job.html)![1].replace(/&amp;/g, '&')
  t.equal(
    new URL(back, server.url).searchParams.get('payload[incident]'),
    fire2.id,
    'the job filters by the incident id'
  )
  const refused = await sam.post('/records/corrective-action/export', {
    submitKey: 'k-nowhere',
    view: 'payload[incident]=INC-1999-00002',
    format: 'csv'
  })
  t.equal(refused.status, 400)
  t.match(textOf(refused.html), /The export was not started .*names no incident you may open \("INC-1999-00002"\)/)
})
