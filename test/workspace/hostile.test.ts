import { request } from 'node:http'
import t, { type Test } from '../helpers/tap.ts'
import { ownerPool } from '../helpers/database.ts'
import { fixtureModules } from '../helpers/fixture-modules.ts'
import { sendPage, signInBrowser, type Page } from '../helpers/pages.ts'
import { defaultTenants, incidentPayload, startTestServer } from '../helpers/server.ts'
import { problems } from '../../core/errors/index.ts'
import { escapeHtml } from '../../plugins/settings/html.ts'

/**
 * The records workspace attacked as a hostile reviewer would (issue 31): markup from every value a page shows, rights
 * compared with the API's for the same session, forged and cross-site forms, oversized and odd requests, submit keys
 * misused, failures. Tests named for a finding of that review (H1–H9) proved a defect and now guard its fix; the others
 * guard an attack that failed.
 */

/** Markup that runs if a page forgets to escape it: breaks out of an attribute, opens a script and an image. */
const evil = (tag: string) => `"'><script>alert('${tag}')</script><img src=x onerror=alert('${tag}')>`
/** The same without a slash (file names may not hold one). */
const evilFile = (tag: string) => `"'><img src=x onerror=alert('${tag}')>.pdf`

/** A module whose every text a package gives is markup, with a hidden field, a read-only one and a locked one. */
const hostileModule = {
  key: 'hostile',
  version: '1.0.0',
  title: `Hostile ${evil('module-title')}`,
  description: evil('module-description'),
  numberPattern: 'H-{seq:4}',
  summaryColumns: ['name', 'choice', 'who', 'place', 'ref'],
  fields: [
    {
      key: 'name',
      type: 'text',
      label: evil('label-name'),
      description: evil('hint-name'),
      required: true,
      maxLength: 500,
      filterable: true,
      sortable: true
    },
    { key: 'notes', type: 'longText', label: evil('label-notes') },
    {
      key: 'choice',
      type: 'singleChoice',
      label: evil('label-choice'),
      options: [{ value: 'a', label: evil('option-label') }, { value: evil('option-value') }],
      filterable: true
    },
    {
      key: 'many',
      type: 'multipleChoice',
      label: evil('label-many'),
      options: [{ value: 'x', label: evil('many') }, 'y']
    },
    { key: 'who', type: 'user', label: evil('label-who') },
    { key: 'place', type: 'location', label: evil('label-place') },
    { key: 'ref', type: 'recordRef', module: 'incident', label: evil('label-ref') },
    {
      key: 'rows',
      type: 'group',
      label: evil('label-rows'),
      fields: [
        { key: 'item', type: 'text', label: evil('label-item') },
        {
          key: 'mark',
          type: 'singleChoice',
          label: evil('label-mark'),
          options: [{ value: 'ok', label: evil('mark') }]
        }
      ]
    },
    { key: 'when', type: 'datetime', label: evil('label-when'), filterable: true },
    { key: 'secret', type: 'text', label: 'Secret', access: { read: ['boss'] }, filterable: true },
    { key: 'stamp', type: 'text', label: 'Stamp', access: { read: ['boss', 'clerk'], write: ['boss'] } },
    { key: 'frozen', type: 'text', label: 'Frozen' }
  ],
  workflow: {
    initial: 'open',
    states: [
      { key: 'open', label: evil('state-open') },
      { key: 'done', label: evil('state-done'), locks: ['frozen'] }
    ],
    transitions: [
      { key: 'finish', label: evil('transition-finish'), from: ['open'], to: 'done' },
      { key: 'reopen', label: 'Reopen', from: ['done'], to: 'open' }
    ]
  },
  permissions: {
    boss: ['read', 'create', 'update', 'delete', 'transition:*'],
    clerk: ['read', 'create', 'update', 'transition:*']
  }
}

const fixtures = fixtureModules([hostileModule])
t.teardown(fixtures.remove)
const server = await startTestServer({
  limits: { signInAttemptsPerMinute: 1000 },
  modules: { directories: ['tenant-modules', fixtures.directory], packages: [] },
  tenants: {
    ...defaultTenants,
    acme: { ...defaultTenants.acme, modules: [...defaultTenants.acme.modules, 'hostile'] }
  }
})
t.teardown(() => server.close())
const key = server.keys.acme
const password = 'correct horse battery staple'
const make = (tenant: string, userName: string, displayName: string, roles: string[]) =>
  server.platform.users.create(tenant, { userName, displayName, password, roles })

const sam = await make('acme', 'sam', 'Sam Safety', ['safety-manager'])
await make('acme', 'rita', 'Rita Reporter', ['reporter'])
const ivy = await make('acme', 'ivy', 'Ivy Investigator', ['investigator'])
await make('acme', 'hana', 'Hana Health', ['health-officer'])
const mal = await make('acme', 'mal', evil('display-name'), ['boss', 'safety-manager'])
await make('acme', 'cleo', 'Cleo Clerk', ['clerk'])
await make('globex', 'gus', 'Gus Globex', ['safety-manager'])

const signIn = (userName: string, tenant = 'acme') => signInBrowser(server, userName, password, tenant)

const as = {
  sam: await signIn('sam'),
  rita: await signIn('rita'),
  ivy: await signIn('ivy'),
  hana: await signIn('hana'),
  mal: await signIn('mal'),
  cleo: await signIn('cleo'),
  gus: await signIn('gus', 'globex')
}

async function apiCreate(moduleKey: string, payload: Record<string, unknown>, token = key) {
  const res = await server.request('POST', '/api/v1/records', { token, body: { moduleKey, payload } })
  if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`)
  return res.body as { id: string; number: string; version: number; payload: Record<string, unknown> }
}
const record = async (id: string) => (await server.request('GET', `/api/v1/records/${id}`, { token: key })).body
const submitKeyOf = (html: string) => /name="submitKey" value="([^"]+)"/.exec(html)?.[1]

/** Markup of ours never holds these: they are what an unescaped `evil()` leaves behind. */
function assertInert(t: Test, page: Page, what: string) {
  if (page.status < 300 || page.status >= 400) {
    t.match(page.headers.get('content-security-policy'), /script-src 'nonce-[^']+'/, `${what}: scripts need the nonce`)
    t.match(page.headers.get('content-security-policy'), /frame-ancestors 'none'/, `${what}: no framing`)
    t.equal(page.headers.get('cache-control'), 'no-store', `${what}: not cached`)
  }
  t.notMatch(page.html, /<script>alert|<img src=x|<script[^>]*>[^<]*alert\(/, `${what}: no injected markup`)
  const hrefs = [...page.html.matchAll(/\shref="([^"]*)"/g)].map((m) => m[1])
  t.same(
    hrefs.filter((h) => !h.startsWith('/') || h.startsWith('//')),
    [],
    `${what}: every link stays on this site`
  )
}
/** The escaped form of a marker is on the page: the value did reach it, as text. */
const shows = (t: Test, page: Page, tag: string, what: string, make = evil) =>
  t.ok(page.html.includes(escapeHtml(make(tag))), `${what} shows ${tag} as text`)

/** The fields a browser would send from the page's record form, as it stands (what "Save" sends unchanged). */
function formOf(html: string): Record<string, string | string[]> {
  const form = /<form method="post"[^>]*class="card record-form"[^>]*>([\s\S]*?)<\/form>/.exec(html)
  if (!form) throw new Error('no record form on the page')
  const unescape = (s: string) =>
    s
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&amp;/g, '&')
  const attrs = (s: string) => {
    const out: Record<string, string> = {}
    for (const m of s.matchAll(/([\w-]+)(?:="([^"]*)")?/g)) out[m[1]] = unescape(m[2] ?? '')
    return out
  }
  const out: Record<string, string | string[]> = {}
  const add = (name: string, value: string) => {
    const was = out[name]
    out[name] = was === undefined ? value : [was, value].flat()
  }
  for (const m of form[1].matchAll(
    /<input\b([^>]*)>|<select\b([^>]*)>([\s\S]*?)<\/select>|<textarea\b([^>]*)>([\s\S]*?)<\/textarea>/g
  )) {
    if (m[1] !== undefined) {
      const a = attrs(m[1])
      if (!a.name || 'disabled' in a) continue
      if ((a.type === 'checkbox' || a.type === 'radio') && !('checked' in a)) continue
      add(a.name, a.value ?? (a.type === 'checkbox' ? 'on' : ''))
    } else if (m[2] !== undefined) {
      const a = attrs(m[2])
      if (!a.name || 'disabled' in a) continue
      const options = [...m[3].matchAll(/<option\b([^>]*)>/g)].map((o) => attrs(o[1]))
      const chosen = options.find((o) => 'selected' in o) ?? options[0]
      if (chosen) add(a.name, chosen.value ?? '')
    } else {
      const a = attrs(m[4])
      if (a.name && !('disabled' in a)) add(a.name, unescape(m[5]))
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------------
// Markup injection
// ---------------------------------------------------------------------------------------------------------------

const incidentForRef = await apiCreate('incident', incidentPayload({ title: `Ref ${evil('incident-title')}` }))

t.test('every text of a record, a package, a user and a URL is shown as text on every page', async (t) => {
  const rec = await apiCreate('hostile', {
    name: evil('name'),
    notes: evil('notes'),
    choice: 'a',
    many: ['x', 'y'],
    who: mal.id,
    place: { latitude: 51.9, longitude: 4.4, label: evil('place') },
    ref: incidentForRef.id,
    rows: [{ item: evil('item'), mark: 'ok' }],
    when: '2026-11-20T09:30:00.000Z',
    frozen: evil('frozen')
  })
  const other = await apiCreate('hostile', { name: 'Plain', choice: evil('option-value') })
  // A comment and a changed value in the activity, by a user whose display name is markup.
  const moved = await as.mal.api('POST', `/api/v1/records/${rec.id}:transition`, {
    transition: 'finish',
    comment: evil('comment'),
    payload: { notes: evil('notes-2') }
  })
  t.equal(moved.status, 200, 'the transition is made')
  const file = Buffer.from('%PDF-1.4\n%%EOF\n')
  const upload = await server.request('POST', '/api/v1/attachments', {
    body: { recordId: rec.id, fileName: evilFile('file'), contentType: 'application/pdf', size: file.length }
  })
  t.equal(upload.status, 201, 'an attachment named with markup is accepted by the API')
  const put = await fetch(upload.body.upload.url, {
    method: 'PUT',
    headers: upload.body.upload.headers,
    body: new Uint8Array(file)
  })
  t.equal(put.status, 200)

  const recordPage = await as.mal.get(`/records/hostile/${rec.id}?done=${encodeURIComponent(evil('done'))}`)
  t.equal(recordPage.status, 200)
  assertInert(t, recordPage, 'the record page')
  for (const tag of ['module-title', 'label-name', 'name', 'notes', 'notes-2', 'option-label', 'many', 'display-name'])
    shows(t, recordPage, tag, 'the record page')
  for (const tag of ['place', 'label-item', 'item', 'mark', 'comment', 'state-done', 'transition-finish', 'frozen'])
    shows(t, recordPage, tag, 'the record page')
  shows(t, recordPage, 'file', 'the record page', evilFile)
  t.notOk(recordPage.html.includes(escapeHtml(evil('done'))), '?done= puts no text of its own on the page')
  t.notOk(recordPage.html.includes(escapeHtml(evil('incident-title'))), "the referenced incident's title is not shown")

  const otherPage = await as.mal.get(`/records/hostile/${other.id}`)
  assertInert(t, otherPage, 'a record whose choice value is markup')
  shows(t, otherPage, 'option-value', 'a choice value')

  for (const path of [
    '/records',
    '/records/hostile',
    '/records/hostile/new',
    `/records/hostile/${rec.id}/edit`,
    `/records/hostile/${other.id}/edit`,
    `/records/hostile/${rec.id}/transition/reopen`,
    `/records/hostile/${other.id}/transition/finish`,
    `/records/hostile/${rec.id}/delete`
  ]) {
    const page = await as.mal.get(path)
    t.equal(page.status, 200, path)
    assertInert(t, page, path)
    shows(t, page, 'module-title', path)
    shows(t, page, 'display-name', `${path} (the account in the header)`)
  }
  const list = await as.mal.get('/records/hostile')
  for (const tag of ['module-description', 'label-name', 'name', 'option-label', 'place', 'label-choice', 'state-done'])
    shows(t, list, tag, 'the list')
  const create = await as.mal.get('/records/hostile/new')
  for (const tag of ['hint-name', 'label-many', 'many', 'label-rows', 'label-item', 'mark', 'option-value'])
    shows(t, create, tag, 'the create form')
  const sam = await as.sam.get('/records/incident')
  assertInert(t, sam, 'a list whose people picker names a user with a markup name')
})

t.test('query-string values echoed into the filter form and refusals are text', async (t) => {
  const q = (name: string, tag: string) => `${name}=${encodeURIComponent(evil(tag))}`
  const paths = [
    `/records/hostile?${q('q', 'q')}&${q('payload[name]', 'filter-name')}&${q('sort', 'sort')}&${q('state', 'state')}`,
    `/records/hostile?${q('payload[when][gte]', 'gte')}&${q('payload[when][lte]', 'lte')}`,
    `/records/hostile?${q(`payload[${evil('key')}]`, 'key-value')}`,
    `/records/hostile?${q('cursor', 'cursor')}`,
    `/records/hostile?${q('overdue', 'overdue')}&${q('createdBy', 'created-by')}`
  ]
  for (const path of paths) {
    const page = await as.mal.get(path)
    t.ok(page.status === 200 || page.status === 400 || page.status === 403, `${path}: ${page.status}`)
    assertInert(t, page, path)
  }
  const first = await as.mal.get(paths[0])
  shows(t, first, 'q', 'the search box')
  shows(t, first, 'filter-name', 'the text filter')
  const range = await as.mal.get(paths[1])
  t.notMatch(range.html, /<input[^>]*value="[^"]*<script/, 'a date range value does not leave its attribute')
})

t.test('a ?done= that is no notice of the pages, such as constructor, shows no text', async (t) => {
  const rec = await apiCreate('incident', incidentPayload())
  for (const done of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
    const page = await as.sam.get(`/records/incident/${rec.id}?done=${done}`)
    t.notMatch(page.html, /class="alert ok"/, `?done=${done}: no notice`)
  }
})

// ---------------------------------------------------------------------------------------------------------------
// Authorization: pages against the API, for the same session
// ---------------------------------------------------------------------------------------------------------------

const secretValue = 'SECRET-ZANZIBAR'

t.test(
  'a field one may not read is absent from every page, its timeline and every form re-shown after a refusal',
  async (t) => {
    const rec = await apiCreate('hostile', { name: 'Hidden things', secret: secretValue, stamp: 'stamped' })
    // The boss changes the secret: the activity holds a change of it.
    const patched = await as.mal.api('PATCH', `/api/v1/records/${rec.id}`, { payload: { secret: `${secretValue}-2` } })
    t.equal(patched.status, 200)
    const viaApi = await as.cleo.api('GET', `/api/v1/records/${rec.id}?include=activity`)
    t.equal(viaApi.status, 200)
    t.notMatch(JSON.stringify(viaApi.body), /ZANZIBAR|"secret"/, 'the API shows the clerk neither')

    const pages: Array<[string, Page]> = []
    for (const path of [
      '/records',
      '/records/hostile',
      `/records/hostile?q=hidden`,
      '/records/hostile/new',
      `/records/hostile/${rec.id}`,
      `/records/hostile/${rec.id}/edit`,
      `/records/hostile/${rec.id}/transition/finish`,
      `/records/hostile/${rec.id}/delete`
    ])
      pages.push([path, await as.cleo.get(path)])
    const form = await as.cleo.get(`/records/hostile/${rec.id}/edit`)
    pages.push([
      'the edit form refused by the service',
      await as.cleo.post(`/records/hostile/${rec.id}/edit`, { ...formOf(form.html), name: 'x'.repeat(501) })
    ])
    pages.push([
      'the create form refused by the service',
      await as.cleo.post('/records/hostile/new', { submitKey: 'k-hidden-create', name: 'x'.repeat(501) })
    ])
    await as.mal.api('PATCH', `/api/v1/records/${rec.id}`, { payload: { notes: 'moved on' } })
    pages.push([
      'the transition form refused as stale',
      await as.cleo.post(`/records/hostile/${rec.id}/transition/finish`, { version: '1', submitKey: 'k-hidden-move' })
    ])
    for (const [what, page] of pages) {
      t.ok(page.status < 500, `${what}: ${page.status}`)
      t.notMatch(page.html, /ZANZIBAR/, `${what}: not the value`)
      t.notMatch(page.html, /Secret|name="secret"|payload\[secret\]|payload\.secret/, `${what}: not the field`)
    }
    t.match(pages.at(-3)![1].status, 400)
    t.match(pages.at(-1)![1].status, 412)
    const boss = await as.mal.get(`/records/hostile/${rec.id}`)
    t.match(boss.html, /SECRET-ZANZIBAR-2/, 'the boss sees it')
    t.match(boss.html, /Secret: SECRET-ZANZIBAR → SECRET-ZANZIBAR-2|Secret: <[^>]*>?SECRET-ZANZIBAR/, 'and its change')
  }
)

t.test(
  'the edit, create and transition forms write no field one may not read, may not write, or that is locked',
  async (t) => {
    const rec = await apiCreate('hostile', { name: 'Guarded', secret: secretValue, stamp: 'stamped', frozen: 'cold' })
    const form = await as.cleo.get(`/records/hostile/${rec.id}/edit`)
    t.match(form.html, /Stamp/, 'the clerk reads the stamp')
    t.notMatch(form.html, /name="stamp"/, 'but has no control for it')
    const sent = await as.cleo.post(`/records/hostile/${rec.id}/edit`, {
      ...formOf(form.html),
      secret: 'smuggled',
      stamp: 'smuggled',
      'secret.latitude': '1'
    })
    t.equal(sent.status, 303)
    t.match(sent.location, /done=unchanged/, 'nothing of what was smuggled is sent')
    t.match((await record(rec.id)).payload, { secret: secretValue, stamp: 'stamped' })

    const made = await as.cleo.post('/records/hostile/new', {
      submitKey: 'k-smuggle-create',
      name: 'Smuggler',
      secret: 'smuggled',
      stamp: 'smuggled'
    })
    t.equal(made.status, 303)
    const madeId = /hostile\/([0-9a-f-]{36})/.exec(made.location!)![1]
    const madeRec = await record(madeId)
    t.notOk('secret' in madeRec.payload || 'stamp' in madeRec.payload, 'the create wrote neither')

    const moved = await as.cleo.post(`/records/hostile/${rec.id}/transition/finish`, {
      version: String(rec.version),
      submitKey: 'k-smuggle-move',
      secret: 'smuggled',
      stamp: 'smuggled',
      frozen: 'smuggled'
    })
    t.equal(moved.status, 303)
    const done = await record(rec.id)
    t.equal(done.state, 'done')
    t.match(done.payload, { secret: secretValue, stamp: 'stamped', frozen: 'cold' })

    const lockedForm = await as.cleo.get(`/records/hostile/${rec.id}/edit`)
    t.match(lockedForm.html, /Locked while the record is/, 'a locked field is read-only on the form')
    const locked = await as.cleo.post(`/records/hostile/${rec.id}/edit`, {
      ...formOf(lockedForm.html),
      frozen: 'thawed'
    })
    t.match(locked.location, /done=unchanged/)
    t.equal((await record(rec.id)).payload.frozen, 'cold')

    // The service refuses each of them to the same session anyway.
    const v = (await record(rec.id)).version
    for (const payload of [{ secret: 'x' }, { stamp: 'x' }, { frozen: 'x' }]) {
      const res = await server.request('PATCH', `/api/v1/records/${rec.id}`, {
        token: null,
        body: { payload },
        headers: { cookie: `records_session=${as.cleo.cookie}`, 'x-csrf-token': as.cleo.csrf, 'if-match': `"${v}"` }
      })
      t.ok(
        res.status === 403 || res.status === 409 || res.status === 422 || res.status === 400,
        `API: ${JSON.stringify(payload)} ${res.status}`
      )
    }
  }
)

t.test('a record, a referenced record and a deleted record one may not reach are 404 on every route', async (t) => {
  const incident = await apiCreate('incident', incidentPayload({ title: 'Someone else reported it' }))
  const refs = await apiCreate('hostile', { name: 'Points at an incident', ref: incident.id })
  const page = await as.cleo.get(`/records/hostile/${refs.id}`)
  t.equal(page.status, 200)
  t.notMatch(page.html, new RegExp(incident.number), 'the clerk, who may not read incidents, is not told its number')
  t.match(page.html, /A record you cannot open/)
  const edit = await as.cleo.get(`/records/hostile/${refs.id}/edit`)
  t.notMatch(edit.html, new RegExp(incident.number))

  const rita = await as.rita.api('GET', `/api/v1/records/${incident.id}`)
  t.equal(rita.status, 404, "the API hides another's report from a reporter")
  const globex = await apiCreate('incident', incidentPayload({ title: 'Globex only' }), server.keys.globex)
  const deleted = await apiCreate('incident', incidentPayload({ title: 'Deleted one' }))
  t.equal((await server.request('DELETE', `/api/v1/records/${deleted.id}`)).status, 200)
  for (const [who, id] of [
    ['rita', incident.id],
    ['sam', globex.id],
    ['sam', deleted.id]
  ] as const) {
    for (const path of ['', '/edit', '/delete', '/transition/start-investigation', '/report.pdf'])
      t.equal((await as[who].get(`/records/incident/${id}${path}`)).status, 404, `${who} GET ${path || 'record'}`)
    for (const path of ['/edit', '/delete', '/transition/start-investigation']) {
      const res = await as[who].post(`/records/incident/${id}${path}`, {
        version: '1',
        submitKey: `k-${who}-${path}-${id}`,
        title: 'changed',
        investigationLead: ivy.id
      })
      t.equal(res.status, 404, `${who} POST ${path}`)
    }
  }
  t.equal((await record(incident.id)).state, 'reported', 'nothing moved')
  const gus = await server.request('GET', `/api/v1/records/${globex.id}`, { token: server.keys.globex })
  t.equal(gus.body.version, 1, "the other tenant's record is unchanged")
})

t.test('a route naming one module does not act on a record of another', async (t) => {
  const incident = await apiCreate('incident', incidentPayload({ title: 'Wrong door' }))
  t.equal((await as.sam.get(`/records/inspection/${incident.id}`)).status, 404, 'the record page says so')
  t.equal((await as.sam.get(`/records/inspection/${incident.id}/report.pdf`)).status, 404, 'so does its report')
  const gone = await as.sam.post(`/records/inspection/${incident.id}/delete`, {
    version: '1',
    submitKey: 'k-wrong-door'
  })
  t.equal(gone.status, 404, 'and its delete')
  t.equal((await server.request('GET', `/api/v1/records/${incident.id}`)).status, 200, 'the incident is still there')
})

t.test('forms of actions one may not take are refused, not served', async (t) => {
  const form = await as.rita.get('/records/incident/new')
  const made = await as.rita.post('/records/incident/new', {
    ...formOf(form.html),
    title: 'Mine',
    description: 'x',
    occurredAt: '2026-11-20T09:30',
    site: 'Leeds',
    category: 'near-miss',
    severity: 'low'
  })
  const id = /incident\/([0-9a-f-]{36})/.exec(made.location!)![1]
  const page = await as.rita.get(`/records/incident/${id}`)
  t.notMatch(page.html, /\/edit"|\/delete"/, 'the record page offers a reporter neither edit nor delete')
  const patch = await as.rita.api('PATCH', `/api/v1/records/${id}`, { payload: { title: 'x' } })
  t.equal(patch.status, 403, 'and the API refuses her a change')
  for (const path of ['/edit', '/delete', '/transition/close'])
    t.equal((await as.rita.get(`/records/incident/${id}${path}`)).status, 403, `GET ${path} is a 403 page`)
})

t.test("a person's pages name no user the API would not name to them", async (t) => {
  // Hana never touched a record Rita may read: through the API, Rita cannot learn that Hana exists.
  const scim = await as.rita.api('GET', '/api/scim/v2/Users')
  t.ok(scim.status === 401 || scim.status === 403, `the user directory is not Rita's (${scim.status})`)
  const own = await as.rita.api('GET', '/api/v1/records?moduleKey=incident')
  t.notMatch(JSON.stringify(own.body), /Hana Health/)
  for (const path of ['/records/incident', '/records/incident/new', '/records']) {
    const page = await as.rita.get(path)
    t.notMatch(page.html, /Hana Health|Ivy Investigator/, `${path} lists no other user`)
  }
})

// ---------------------------------------------------------------------------------------------------------------
// The edit form's patch: what "Save" sends for fields the person did not touch
// ---------------------------------------------------------------------------------------------------------------

t.test('saving an edit form unchanged changes nothing', async (t) => {
  const rec = await apiCreate(
    'incident',
    incidentPayload({
      occurredAt: '2026-11-20T09:30:45.250Z',
      location: { latitude: 51.92, longitude: 4.48, label: 'Bay 4', accuracyMeters: 12 },
      bodyParts: ['feet', 'hands']
    })
  )
  const form = await as.sam.get(`/records/incident/${rec.id}/edit`)
  const saved = await as.sam.post(`/records/incident/${rec.id}/edit`, formOf(form.html))
  t.equal(saved.status, 303)
  t.match(saved.location, /done=unchanged/, 'the page finds nothing changed')
  const after = await record(rec.id)
  t.equal(after.version, rec.version, 'no new version')
  t.equal(after.payload.occurredAt, '2026-11-20T09:30:45.250Z', 'the seconds of a date-time stay')
  t.same(after.payload.location, rec.payload.location, "a location's accuracy stays")
  t.same(after.payload.bodyParts, ['feet', 'hands'], 'the order of chosen values stays')
})

t.test('changing one field with the edit form changes only that field', async (t) => {
  const rec = await apiCreate(
    'incident',
    incidentPayload({ occurredAt: '2026-11-20T09:30:45.250Z', site: 'Leeds DC ' })
  )
  const form = await as.sam.get(`/records/incident/${rec.id}/edit`)
  const saved = await as.sam.post(`/records/incident/${rec.id}/edit`, { ...formOf(form.html), title: 'Retitled' })
  t.equal(saved.status, 303)
  const activity = await server.request('GET', `/api/v1/records/${rec.id}?include=activity`)
  const last = activity.body.activity.at(-1)
  t.same(
    last.changes.map((c: { field: string }) => c.field),
    ['title'],
    'the activity shows one change, the one made'
  )
})

t.test('editing a record with more group rows than the form shows keeps every row', async (t) => {
  const checklist = Array.from({ length: 60 }, (_, i) => ({ item: `Item ${i + 1}`, result: 'pass' }))
  const rec = await apiCreate('inspection', {
    title: 'Warehouse walk',
    kind: 'workplace',
    site: 'Leeds',
    scheduledFor: '2026-12-01',
    checklist
  })
  const form = await as.sam.get(`/records/inspection/${rec.id}/edit`)
  t.equal(form.status, 200)
  const saved = await as.sam.post(`/records/inspection/${rec.id}/edit`, { ...formOf(form.html), area: 'Dock' })
  t.equal(saved.status, 303)
  const after = await record(rec.id)
  t.equal(after.payload.area, 'Dock', 'the change is saved')
  t.equal(after.payload.checklist.length, 60, 'and all 60 checklist rows are still there')
})

t.test('a transition whose form asks for a group keeps every row of it', async (t) => {
  const checklist = Array.from({ length: 60 }, (_, i) => ({ item: `Check ${i + 1}`, result: 'pass' }))
  const rec = await apiCreate('inspection', {
    title: 'Yard walk',
    kind: 'workplace',
    site: 'Leeds',
    scheduledFor: '2026-12-01',
    inspector: sam.id,
    checklist
  })
  const begun = await server.request('POST', `/api/v1/records/${rec.id}:transition`, { body: { transition: 'begin' } })
  t.equal(begun.status, 200)
  const form = await as.sam.get(`/records/inspection/${rec.id}/transition/submit`)
  const sent = await as.sam.post(`/records/inspection/${rec.id}/transition/submit`, {
    ...formOf(form.html),
    performedAt: '2026-12-01T10:00'
  })
  t.equal(sent.status, 303)
  const after = await record(rec.id)
  t.equal(after.state, 'submitted')
  t.equal(after.payload.checklist.length, 60, 'all 60 rows are still there')
})

// ---------------------------------------------------------------------------------------------------------------
// Submit keys
// ---------------------------------------------------------------------------------------------------------------

const reportForm = (title: string) => ({
  title,
  description: 'Reversed out of bay 4',
  occurredAt: '2026-11-20T09:30',
  site: 'Rotterdam',
  category: 'near-miss',
  severity: 'low'
})
const countTitled = async (title: string) =>
  (
    await server.request('GET', `/api/v1/records?moduleKey=incident&q=${encodeURIComponent(title)}&limit=100`)
  ).body.items.filter((r: { payload: { title: string } }) => r.payload.title === title).length

t.test("another person's submit key makes their own record, never answers with the first person's", async (t) => {
  const k = 'k-shared-between-people'
  const sams = await as.sam.post('/records/incident/new', { submitKey: k, ...reportForm('Shared key report') })
  const ritas = await as.rita.post('/records/incident/new', { submitKey: k, ...reportForm('Shared key report') })
  t.equal(sams.status, 303)
  t.equal(ritas.status, 303)
  t.not(ritas.location, sams.location, "Rita is not sent to Sam's record")
  const id = /incident\/([0-9a-f-]{36})/.exec(ritas.location!)![1]
  t.equal((await as.rita.get(`/records/incident/${id}`)).status, 200, 'she is sent to her own')
  t.equal(await countTitled('Shared key report'), 2)
})

t.test('a submit key used again on another record or route is refused, and changes nothing', async (t) => {
  const a = await apiCreate('incident', incidentPayload({ title: 'Key A' }))
  const b = await apiCreate('incident', incidentPayload({ title: 'Key B' }))
  const formA = await as.sam.get(`/records/incident/${a.id}/edit`)
  const k = submitKeyOf(formA.html)!
  const savedA = await as.sam.post(`/records/incident/${a.id}/edit`, { ...formOf(formA.html), site: 'Antwerp' })
  t.equal(savedA.status, 303)
  const formB = await as.sam.get(`/records/incident/${b.id}/edit`)
  const onB = await as.sam.post(`/records/incident/${b.id}/edit`, {
    ...formOf(formB.html),
    submitKey: k,
    site: 'Antwerp'
  })
  t.equal(onB.status, 422, "A's key on B's form is refused")
  t.match(onB.html, /role="alert"/)
  t.not(submitKeyOf(onB.html), k, 'the form comes back with a key of its own')
  t.equal((await record(b.id)).payload.site, 'Leeds DC', 'B is unchanged')
  const onCreate = await as.sam.post('/records/incident/new', { submitKey: k, ...reportForm('Key reuse on create') })
  t.equal(onCreate.status, 422, 'and on the create form')
  t.equal(await countTitled('Key reuse on create'), 0)
  const onMove = await as.sam.post(`/records/incident/${b.id}/transition/start-investigation`, {
    submitKey: k,
    version: '1',
    investigationLead: ivy.id
  })
  t.equal(onMove.status, 422, 'and on a transition')
  t.equal((await record(b.id)).state, 'reported')
})

t.test('two sends of one form at once make one change', async (t) => {
  const rec = await apiCreate('incident', incidentPayload({ title: 'Raced' }))
  const form = formOf((await as.sam.get(`/records/incident/${rec.id}/edit`)).html)
  const answers = await Promise.all(
    [1, 2, 3].map(() => as.sam.post(`/records/incident/${rec.id}/edit`, { ...form, site: 'Ghent' }))
  )
  t.ok(
    answers.every((a) => a.status < 500),
    answers.map((a) => a.status).join(' ')
  )
  const after = await record(rec.id)
  t.equal(after.version, 2, 'one new version')
  t.equal(after.payload.site, 'Ghent')
})

t.test('a form sent again while its first send is still being written is not given a new key', async (t) => {
  const owner = ownerPool(server.platform.config.database.url!)
  t.teardown(() => owner.end())
  const title = 'Double click while busy'
  const form = await as.sam.get('/records/incident/new')
  const k = submitKeyOf(form.html)!
  // Holds every write of records, so the first send waits inside its create with its key claimed.
  const lock = await owner.connect()
  await lock.query('BEGIN')
  await lock.query('LOCK TABLE records IN SHARE ROW EXCLUSIVE MODE')
  const first = as.sam.post('/records/incident/new', { submitKey: k, ...reportForm(title) })
  for (let i = 0; i < 500; i++) {
    const { rowCount } = await owner.query('SELECT 1 FROM idempotency_keys WHERE key = $1', [k])
    if (rowCount) break
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  // The second send goes while the first holds the key; the lock goes at once (a transaction held open here holds
  // back the whole cluster's snapshot horizon, which other tests' webhook deliveries wait on).
  const secondSent = as.sam.post('/records/incident/new', { submitKey: k, ...reportForm(title) })
  await lock.query('ROLLBACK')
  lock.release()
  const second = await secondSent
  t.equal((await first).status, 303, 'the first send makes the record')
  t.ok(
    second.status === 303 || submitKeyOf(second.html) === k,
    `the second answer (${second.status}) leads to that record or keeps the key, so sending it again replays the first`
  )
  if (second.status !== 303) {
    const again = await as.sam.post('/records/incident/new', { ...formOf(second.html), ...reportForm(title) })
    t.ok(again.status === 303, 'sending the form of the second answer again')
  }
  t.equal(await countTitled(title), 1, 'one record, however the person goes on')
})

t.test(
  'a stale edit sent twice is explained as a conflict both times and never offers the newer version',
  async (t) => {
    const rec = await apiCreate('incident', incidentPayload({ title: 'Stale twice' }))
    const form = formOf((await as.sam.get(`/records/incident/${rec.id}/edit`)).html)
    await server.request('PATCH', `/api/v1/records/${rec.id}`, { body: { payload: { site: 'Ghent' } } })
    const entries = { ...form, site: 'Rotterdam' }
    const first = await as.sam.post(`/records/incident/${rec.id}/edit`, entries)
    t.equal(first.status, 412)
    t.match(first.html, /name="version" value="1"/, 'the first answer keeps the version the form was opened at')
    // A double click: the browser shows the answer to the second send, the replay of the first.
    const second = await as.sam.post(`/records/incident/${rec.id}/edit`, entries)
    t.equal(second.status, 412, 'the replay is the same conflict')
    t.match(second.html, /Someone else changed/, 'explained the same way')
    t.match(second.html, /name="version" value="1"/, 'and keeps the old version')
    const resent = await as.sam.post(`/records/incident/${rec.id}/edit`, formOf(second.html))
    t.not(resent.status, 303, 'so sending it once more does not overwrite the other change')
    t.equal((await record(rec.id)).payload.site, 'Ghent', "the other person's change stands")
  }
)

// ---------------------------------------------------------------------------------------------------------------
// CSRF and origin
// ---------------------------------------------------------------------------------------------------------------

t.test('every form of the workspace refuses a send without the session token or from another site', async (t) => {
  const rec = await apiCreate('incident', incidentPayload({ title: 'Forgery target' }))
  const routes = [
    ['/records/incident/new', reportForm('Forged report')],
    [`/records/incident/${rec.id}/edit`, { ...reportForm('Forged edit'), version: '1' }],
    [`/records/incident/${rec.id}/transition/start-investigation`, { version: '1', investigationLead: ivy.id }],
    [`/records/incident/${rec.id}/delete`, { version: '1' }]
  ] as const
  const sam = as.sam
  for (const [path, fields] of routes) {
    const tries: Array<[string, Promise<Page>]> = [
      ['no token', sendPage(server, 'POST', path, { cookie: sam.cookie, form: { ...fields, submitKey: `k1${path}` } })],
      [
        "another session's token",
        sendPage(server, 'POST', path, {
          cookie: sam.cookie,
          form: { ...fields, csrf: as.rita.csrf, submitKey: `k2${path}` }
        })
      ],
      ['a cross-site send', sam.post(path, { ...fields, submitKey: `k3${path}` }, { 'sec-fetch-site': 'cross-site' })],
      ['a same-site send', sam.post(path, { ...fields, submitKey: `k4${path}` }, { 'sec-fetch-site': 'same-site' })],
      ['a foreign Origin', sam.post(path, { ...fields, submitKey: `k5${path}` }, { origin: 'https://evil.example' })],
      ['Origin null', sam.post(path, { ...fields, submitKey: `k6${path}` }, { origin: 'null' })],
      ['a text/plain body', sam.post(path, { ...fields, submitKey: `k7${path}` }, { 'content-type': 'text/plain' })]
    ]
    for (const [what, sent] of tries) {
      const page = await sent
      t.ok(page.status === 403 || page.status === 415, `${path}, ${what}: ${page.status}`)
    }
  }
  const after = await record(rec.id)
  t.match(after, { version: 1, state: 'reported' }, 'the record is untouched and not deleted')
  t.equal(await countTitled('Forged report'), 0, 'no record was made')
  const api = await server.request('POST', '/api/v1/records', {
    token: null,
    body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Forged through the API' }) },
    headers: { cookie: `records_session=${sam.cookie}` }
  })
  t.ok(api.status === 401 || api.status === 403, `the API refuses the cookie without X-CSRF-Token (${api.status})`)
})

t.test('signing in never leads off the site, whatever next says', async (t) => {
  for (const next of [
    '//evil.example/',
    '/\\evil.example',
    'https://evil.example/',
    '/%2F%2Fevil.example',
    '/%5C%5Cevil.example',
    '/records/..//evil.example',
    '/.//evil.example',
    '\t//evil.example',
    '/\t/evil.example',
    'javascript:alert(1)',
    `/records${evil('next')}`
  ]) {
    const page = await sendPage(server, 'POST', '/sign-in', {
      form: { tenant: 'acme', userName: 'sam', password, next }
    })
    t.equal(page.status, 303, JSON.stringify(next))
    const to = new URL(page.location!, 'http://records.invalid')
    t.equal(to.origin, 'http://records.invalid', `${JSON.stringify(next)} → ${page.location}`)
    const form = await sendPage(server, 'GET', `/sign-in?next=${encodeURIComponent(next)}`)
    assertInert(t, form, `the sign-in form with next=${JSON.stringify(next)}`)
  }
})

// ---------------------------------------------------------------------------------------------------------------
// Bounds
// ---------------------------------------------------------------------------------------------------------------

/** A page's answer and how long it took. */
async function timed(p: Promise<Page>): Promise<Page & { ms: number }> {
  const start = performance.now()
  const page = await p
  return { ...page, ms: performance.now() - start }
}

t.test('huge, deep or wide list queries are answered at once with a 4xx', async (t) => {
  const many = Array.from({ length: 1000 }, (_, i) => `payload[f${i}]=1`).join('&')
  const manyValues = Array.from({ length: 900 }, () => `payload[site]=a`).join('&')
  const cases: Array<[string, string]> = [
    ['1000 filters', `/records/incident?${many}`],
    ['900 values of one filter', `/records/incident?${manyValues}`],
    ['a deep filter', `/records/incident?payload[site][a][b][c][d][e][f][g][h]=1`],
    ['a deep array', `/records/incident?${'payload'.padEnd(7, '')}${'[]'.repeat(40)}=1`],
    ['a huge search', `/records/incident?q=${'word '.repeat(2000)}`],
    ['a huge query string', `/records/incident?q=${'a'.repeat(70_000)}`],
    ['a sort by nothing', `/records/incident?sort=payload.nothing`],
    ['relevance without a search', `/records/incident?sort=relevance`],
    ['a filter that is a list', `/records/incident?payload=a&payload=b`],
    ['an object search', `/records/incident?q[a]=1`]
  ]
  for (const [what, path] of cases) {
    const page = await timed(as.sam.get(path))
    t.ok(page.status >= 400 && page.status < 500, `${what}: ${page.status}`)
    t.ok(page.ms < 3000, `${what}: in ${Math.round(page.ms)} ms`)
    if (page.status !== 431 && page.status !== 414) assertInert(t, page, what)
  }
})

t.test('a cursor from another module, view or tenant is refused', async (t) => {
  for (let i = 0; i < 2; i++) {
    await apiCreate('incident', incidentPayload({ title: `Globex ${i}` }), server.keys.globex)
    await apiCreate('hostile', { name: `Paged ${i}` })
  }
  const cursorOf = async (path: string, token: string) => {
    const res = await server.request('GET', path, { token })
    t.ok(res.body.nextCursor, `a cursor from ${path}`)
    return encodeURIComponent(res.body.nextCursor)
  }
  const otherModule = await cursorOf('/api/v1/records?moduleKey=hostile&limit=1&sort=-createdAt', key)
  const otherTenant = await cursorOf('/api/v1/records?moduleKey=incident&limit=1&sort=-createdAt', server.keys.globex)
  const otherView = await cursorOf(
    '/api/v1/records?moduleKey=incident&limit=1&sort=-createdAt&payload[site]=Leeds%20DC',
    key
  )
  for (const [what, path] of [
    ['another module', `/records/incident?cursor=${otherModule}`],
    ['another tenant', `/records/incident?cursor=${otherTenant}`],
    ['another filter', `/records/incident?cursor=${otherView}`],
    ['another order', `/records/incident?sort=number&cursor=${otherModule}`],
    ['a cursor of nonsense', '/records/incident?cursor=AAAA']
  ]) {
    const page = await as.sam.get(path)
    t.equal(page.status, 400, `${what}: ${page.status}`)
    t.notMatch(page.html, /Globex/, `${what}: nothing of the other tenant`)
  }
  const gus = await as.gus.get(
    `/records/incident?cursor=${await cursorOf('/api/v1/records?moduleKey=incident&limit=1&sort=-createdAt', key)}`
  )
  t.equal(gus.status, 400, "and Acme's cursor at Globex")
})

t.test('form bodies past their cap and group rows past the form are refused or ignored, at once', async (t) => {
  const rec = await apiCreate('hostile', { name: 'Bounded' })
  const big = await timed(
    as.sam.post('/records/incident/new', { ...reportForm('Big'), description: 'x'.repeat(1100 * 1024) })
  )
  t.equal(big.status, 413, `a 1,100 KiB form: ${big.status}`)
  const del = await timed(as.sam.post(`/records/hostile/${rec.id}/delete`, { version: '1', pad: 'x'.repeat(9 * 1024) }))
  t.equal(del.status, 413, `a 9 KiB delete: ${del.status}`)
  // Headers only: the answer must come before any of the 50 MiB it announces.
  const declared = await new Promise<number>((resolve, reject) => {
    const req = request(`${server.url}/records/incident/new`, {
      method: 'POST',
      headers: {
        cookie: `records_session=${as.sam.cookie}`,
        'content-type': 'application/x-www-form-urlencoded',
        'content-length': String(50 * 1024 * 1024)
      }
    })
    req.on('response', (res) => {
      res.resume()
      resolve(res.statusCode!)
      req.destroy()
    })
    req.on('error', reject)
    req.flushHeaders()
  })
  t.equal(declared, 413, 'a body declared as 50 MiB is refused before it is read')
  const rows: Record<string, string> = { submitKey: 'k-rows-far', name: 'Far rows' }
  for (let i = 0; i < 2000; i++) rows[`rows.${i}.item`] = `row ${i}`
  rows['rows.99999999.item'] = 'far away'
  const made = await timed(as.mal.post('/records/hostile/new', rows))
  t.ok(made.status === 303 || (made.status >= 400 && made.status < 500), `2000 rows: ${made.status}`)
  t.ok(made.ms < 3000, `in ${Math.round(made.ms)} ms`)
  for (const ms of [big.ms, del.ms]) t.ok(ms < 3000, `refused in ${Math.round(ms)} ms`)
})

t.test('a user picker in a tenant of more than 500 people is bounded and still offers the newest person', async (t) => {
  await make('initech', 'ian', 'Ian Initech', ['safety-manager'])
  const values: string[] = []
  for (let i = 0; i < 520; i++) values.push(`('initech', 'bulk-${i}', 'Bulk User ${String(i).padStart(3, '0')}')`)
  const owner = ownerPool(server.platform.config.database.url!)
  t.teardown(() => owner.end())
  await owner.query(`INSERT INTO users (tenant_id, user_name, display_name) VALUES ${values.join(', ')}`)
  const newest = await server.platform.users.create('initech', {
    userName: 'aaron',
    displayName: 'Aaron Newcomer',
    roles: []
  })
  const ian = await signIn('ian', 'initech')
  const rec = await apiCreate('incident', incidentPayload({ title: 'Initech slip' }), server.keys.initech)
  const form = await timed(ian.get(`/records/incident/${rec.id}/transition/start-investigation`))
  t.equal(form.status, 200)
  t.ok(form.ms < 3000, `answered in ${Math.round(form.ms)} ms`)
  t.ok(form.html.length < 400_000, `${form.html.length} bytes`)
  t.ok(
    form.html.includes('Aaron Newcomer') || !/<select id="f-investigationLead"/.test(form.html),
    'the newest person can be named (offered, or typed)'
  )
  const list = await ian.get('/records/incident')
  t.ok(list.html.includes(newest.id) || !/<select id="filter-investigationLead"/.test(list.html), 'and filtered by')

  // Typed: the name as the suggestions offer it, or the user name in any case.
  t.match(form.html, /<input type="text" id="f-investigationLead" name="investigationLead"[^>]*list="people"/)
  const ambiguous = await ian.post(`/records/incident/${rec.id}/transition/start-investigation`, {
    ...formOf(form.html),
    investigationLead: 'Nobody Such'
  })
  t.equal(ambiguous.status, 400)
  t.match(ambiguous.html, /names nobody \(&quot;Nobody Such&quot;\)/, 'a name of nobody is a problem beside the field')
  const moved = await ian.post(`/records/incident/${rec.id}/transition/start-investigation`, {
    ...formOf(ambiguous.html),
    investigationLead: 'AARON'
  })
  t.equal(moved.status, 303, 'the user name, in any case')
  const after = await server.request('GET', `/api/v1/records/${rec.id}`, { token: server.keys.initech })
  t.equal(after.body.payload.investigationLead, newest.id, 'names the newest person')
  const filtered = await ian.get('/records/incident?payload[investigationLead]=Aaron%20Newcomer')
  t.match(filtered.html, /Initech slip/, 'the list filtered by a typed name')
  const unknown = await ian.get('/records/incident?payload[investigationLead]=Nobody%20Such')
  t.equal(unknown.status, 400, 'a typed name of nobody is a 400 that says so')
  t.match(unknown.html, /names nobody/)
})

// ---------------------------------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------------------------------

t.test(
  'a failure of the service or of a page is the failure page with a trace reference, never its text or stack',
  async (t) => {
    let failWith: Error | undefined
    server.running.app.service('api/v1/records').hooks({
      around: {
        all: [
          async (_context: unknown, next: () => Promise<void>) => {
            if (failWith) throw failWith
            await next()
          }
        ]
      }
    })
    t.teardown(() => {
      failWith = undefined
    })
    const { GeneralError } = await import('@feathersjs/errors')
    const rec = await apiCreate('incident', incidentPayload({ title: 'Fails later' }))
    const failures: Array<[string, Error]> = [
      ['a thrown Error', new Error('connection to 10.0.0.7 refused at /srv/app/core/db.ts:12')],
      ['a 500 of the framework', new GeneralError('internal detail: pool exhausted at /srv/app/core/db.ts:12')],
      ['a TypeError', new TypeError("Cannot read properties of undefined (reading '/srv/app/core/db.ts')")],
      ['a 503 of the service', problems.unavailable('service.not_ready', 'pool exhausted at /srv/app/core/db.ts:12')]
    ]
    for (const [what, err] of failures) {
      failWith = err
      for (const [method, path, form] of [
        ['GET', '/records', undefined],
        ['GET', '/records/incident', undefined],
        ['GET', `/records/incident/${rec.id}`, undefined],
        ['POST', '/records/incident/new', { ...reportForm('Failing create'), submitKey: `k-fail-${what}` }],
        [
          'POST',
          `/records/incident/${rec.id}/edit`,
          { ...reportForm('Failing edit'), version: '1', submitKey: `k-fail-e-${what}` }
        ]
      ] as const) {
        const page = method === 'GET' ? await as.sam.get(path) : await as.sam.post(path, form)
        const label = `${what}, ${method} ${path.replace(rec.id, ':id')}`
        t.ok(page.status >= 500, `${label}: ${page.status}`)
        const trace = page.headers.get('x-trace-id')
        t.ok(
          trace && page.html.includes(`Quote this reference if you report it: ${trace}`),
          `${label}: the trace reference of the request`
        )
        t.notMatch(
          page.html,
          /10\.0\.0\.7|\/srv\/app|pool exhausted|Cannot read|at [\w.]+ \(/,
          `${label}: no text or stack`
        )
        t.match(page.headers.get('content-type'), /text\/html/, `${label}: a page`)
      }
    }
    failWith = undefined
    t.equal((await as.sam.get(`/records/incident/${rec.id}`)).status, 200, 'the pages work again')
    t.equal(await countTitled('Failing create'), 0)
  }
)
