import t from '../helpers/tap.ts'
import { sendPage, signInBrowser } from '../helpers/pages.ts'
import { startTestServer } from '../helpers/server.ts'

/**
 * The records workspace over HTTP, as a browser without JavaScript uses it: pages and forms with the session cookie
 * and its CSRF token. What each person sees and may do is what the records service lets them (the same rules as REST).
 */
const server = await startTestServer({ limits: { signInAttemptsPerMinute: 100 } })
t.teardown(() => server.close())

const password = 'correct horse battery staple'
const make = (userName: string, displayName: string, roles: string[]) =>
  server.platform.users.create('acme', { userName, displayName, password, roles })
await make('sam', 'Sam Safety', ['safety-manager'])
const rita = await make('rita', 'Rita Reporter', ['reporter'])
const ivy = await make('ivy', 'Ivy Investigator', ['investigator'])
await make('hana', 'Hana Health', ['health-officer'])
const key = server.keys.acme
const medical = 'Fractured left wrist, splinted on site'

const signIn = (userName: string) => signInBrowser(server, userName, password)

const incident = (title: string, extra: Record<string, unknown> = {}) => ({
  title,
  description: 'A forklift reversed out of bay 4 without a banksman',
  occurredAt: '2026-11-20T09:30:00.000Z',
  site: 'Rotterdam',
  category: 'near-miss',
  severity: 'low',
  ...extra
})

async function apiCreate(payload: Record<string, unknown>, token = key) {
  const res = await server.request('POST', '/api/v1/records', { token, body: { moduleKey: 'incident', payload } })
  if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`)
  return res.body as { id: string; number: string; version: number }
}

const record = async (id: string) => (await server.request('GET', `/api/v1/records/${id}`, { token: key })).body
const submitKey = (html: string) => /name="submitKey" value="([^"]+)"/.exec(html)![1]
const textOf = (html: string) =>
  html
    .replace(/<style[\s\S]*?<\/style>/g, '')
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')

/** An incident reported through the workspace's form (opened first, for its submit key): a near miss of low severity unless said. */
async function reportThroughForm(browser: (typeof browsers)['sam'], fields: Record<string, string>) {
  const form = await browser.get('/records/incident/new')
  return browser.post('/records/incident/new', {
    submitKey: submitKey(form.html),
    category: 'near-miss',
    severity: 'low',
    ...fields
  })
}

const browsers = {
  sam: await signIn('sam'),
  rita: await signIn('rita'),
  ivy: await signIn('ivy'),
  hana: await signIn('hana')
}

t.test('a person who is not signed in is sent to sign in and back; signing in lands on the workspace', async (t) => {
  const page = await sendPage(server, 'GET', '/records/incident?state=reported')
  t.equal(page.status, 303)
  t.equal(page.location, '/sign-in?next=/records/incident%3Fstate%3Dreported')
  const signedIn = await sendPage(server, 'POST', '/sign-in', { form: { tenant: 'acme', userName: 'sam', password } })
  t.equal(signedIn.location, '/records', 'with no next, the start page is the records workspace')
  const home = await browsers.sam.get('/records')
  t.equal(home.status, 200)
  t.match(home.html, /<a href="\/records" data-label="Home" aria-current="page">Home<\/a>/, 'the menu leads home first')
  t.match(home.html, /href="\/settings\/api-keys"/, 'and to the settings pages')
})

t.test(
  'a reporter reports an incident with the form: problems beside the fields, then one record for a double submit',
  async (t) => {
    const form = await browsers.rita.get('/records/incident/new')
    t.equal(form.status, 200)
    t.match(form.html, /<label for="f-title">Title/, 'fields are labelled')
    t.notMatch(form.html, /name="rootCause"/, 'fields the workflow asks for later are not on the report form')
    t.notMatch(form.html, /medicalDetails/, 'a field the reporter may not read is absent')
    const idem = submitKey(form.html)

    const missing = await browsers.rita.post('/records/incident/new', {
      submitKey: idem,
      title: 'Forklift reversing',
      site: ''
    })
    t.equal(missing.status, 400)
    t.match(
      missing.html,
      /id="f-description"[^>]*aria-describedby="f-description-problem-0"[^>]*aria-invalid="true"/,
      'the control is marked invalid and described by its problem'
    )
    t.match(
      missing.html,
      /<p class="problem" id="f-description-problem-0">What happened is required<\/p>/,
      "the service's problem stands beside its field"
    )
    t.match(missing.html, /value="Forklift reversing"/, 'what was entered is kept')

    t.not(
      submitKey(missing.html),
      idem,
      'the refused form was answered; the corrected one is a new request with a new key'
    )
    const good = {
      submitKey: submitKey(missing.html),
      title: 'Forklift reversing',
      description: 'Reversed out of bay 4',
      occurredAt: '2026-11-20T09:30',
      site: 'Rotterdam',
      category: 'near-miss',
      severity: 'low',
      bodyParts: ['hands', 'feet']
    }
    const [first, second] = await Promise.all([
      browsers.rita.post('/records/incident/new', good),
      browsers.rita.post('/records/incident/new', good)
    ])
    const done = [first, second].filter((p) => p.status === 303)
    t.equal(done.length, 2, 'both sends of a double click are answered with the record, not a refusal')
    t.equal(first.location, second.location, 'the same record')
    const id = /\/records\/incident\/([0-9a-f-]{36})\?done=created/.exec(done[0].location ?? '')![1]
    const again = await browsers.rita.post('/records/incident/new', good)
    t.equal(again.location, done[0].location, 'sending the same form again answers with the same record')
    const list = await server.request('GET', '/api/v1/records?moduleKey=incident&q=reversing', { token: key })
    t.equal(list.body.items.length, 1, 'one record was made')
    const rec = await record(id)
    t.equal(rec.payload.occurredAt, '2026-11-20T09:30:00.000Z', 'the time is read as UTC')
    t.same(rec.payload.bodyParts, ['hands', 'feet'])
    t.equal(rec.createdBy.id, rita.id, 'the record is the reporter’s')

    const page = await browsers.rita.get(`/records/incident/${id}?done=created`)
    t.match(
      page.html,
      /role="status">Created\. <a href="#h-attachments">Add a photo or a file<\/a>\./,
      'and the photo comes next'
    )
    t.match(textOf(page.html), /Body parts affected hands, feet/, 'choices show by their labels')
  }
)

t.test('rows and fields a person may not read never appear on any page', async (t) => {
  const other = await apiCreate(
    incident('Chemical splash in lab 2', { medicalDetails: medical, investigationLead: ivy.id })
  )
  const ritasList = await browsers.rita.get('/records/incident')
  t.notMatch(ritasList.html, /Chemical splash/, 'a reporter lists only what they reported')
  t.equal((await browsers.rita.get(`/records/incident/${other.id}`)).status, 404, 'and cannot open the rest')
  for (const who of ['sam', 'ivy'] as const) {
    const page = await browsers[who].get(`/records/incident/${other.id}`)
    t.equal(page.status, 200, `${who} opens it`)
    t.notMatch(page.html, /Fractured|Medical details/, `${who} sees no medical details, not even the field`)
    const edit = await browsers[who].get(`/records/incident/${other.id}/edit`)
    t.notMatch(edit.html, /Fractured|medicalDetails/, `nor on ${who}'s edit form`)
  }
  const hana = await browsers.hana.get(`/records/incident/${other.id}`)
  t.match(hana.html, /Medical details/, 'the health officer sees the field')
  t.match(hana.html, new RegExp(medical), 'and its value')
  t.match(textOf(hana.html), /Investigation lead Ivy Investigator/, 'user fields show names, not ids')
})

t.test('a transition asks for exactly what it requires, and explains a refusal', async (t) => {
  const rec = await apiCreate(incident('Slip on wet floor'))
  const page = await browsers.sam.get(`/records/incident/${rec.id}`)
  t.match(
    page.html,
    new RegExp(`href="/records/incident/${rec.id}/transition/start-investigation">Start investigation</a>`)
  )
  const ritas = await browsers.rita.get(`/records/incident/${rec.id}`)
  t.equal(ritas.status, 404, 'a reporter does not see what others reported')

  const form = await browsers.sam.get(`/records/incident/${rec.id}/transition/start-investigation`)
  t.match(
    form.html,
    /<select id="f-investigationLead" name="investigationLead"[^>]*required/,
    'the lead the target state requires is asked for'
  )
  t.notMatch(form.html, /name="title"/, 'and nothing else')
  const without = await browsers.sam.post(`/records/incident/${rec.id}/transition/start-investigation`, {
    submitKey: submitKey(form.html),
    version: '1'
  })
  t.equal(without.status, 400)
  t.match(without.html, /f-investigationLead-problem-0/, "the guard's problem is beside the lead")
  const moved = await browsers.sam.post(`/records/incident/${rec.id}/transition/start-investigation`, {
    submitKey: submitKey(without.html),
    version: '1',
    investigationLead: ivy.id,
    comment: 'Ivy leads'
  })
  t.equal(moved.status, 303)
  t.equal((await record(rec.id)).state, 'investigating')

  const ivys = await browsers.ivy.get(`/records/incident/${rec.id}`)
  t.match(ivys.html, /transition\/record-root-cause">Record root cause<\/a>/, 'the lead may record the root cause')
  t.match(
    textOf(ivys.html),
    /Sam Safety moved it from Under investigation|Sam Safety moved it from Reported to Under investigation/,
    'the timeline says who moved it'
  )
  t.match(ivys.html, /“Ivy leads”/, 'with the comment')
  const rootForm = await browsers.ivy.get(`/records/incident/${rec.id}/transition/record-root-cause`)
  const root = await browsers.ivy.post(`/records/incident/${rec.id}/transition/record-root-cause`, {
    submitKey: submitKey(rootForm.html),
    version: '2',
    rootCause: 'No banksman on the night shift'
  })
  t.equal(root.status, 303)
  t.equal((await record(rec.id)).state, 'actions-pending')
})

t.test('closing by the safety manager who reported it is refused with the four-eyes reason', async (t) => {
  // Sam reports it through the workspace, then it moves on to where it may be closed.
  const made = await reportThroughForm(browsers.sam, {
    title: 'Pallet fell from racking',
    description: 'Top pallet fell',
    occurredAt: '2026-11-21T14:00',
    site: 'Antwerp',
    severity: 'medium'
  })
  const id = /incident\/([0-9a-f-]{36})/.exec(made.location!)![1]
  for (const [transition, payload] of [
    ['start-investigation', { investigationLead: ivy.id }],
    ['record-root-cause', { rootCause: 'Damaged racking beam' }]
  ] as const) {
    const res = await server.request('POST', `/api/v1/records/${id}:transition`, {
      token: key,
      body: { transition, payload }
    })
    t.equal(res.status, 200, transition)
  }
  const page = await browsers.sam.get(`/records/incident/${id}`)
  t.match(
    page.html,
    /<button type="button" disabled aria-describedby="why-close">Close<\/button><p class="why" id="why-close">[^<]*created/,
    'Close is disabled with the reason'
  )
  const forced = await browsers.sam.post(`/records/incident/${id}/transition/close`, {
    submitKey: 'k-forced',
    version: '3',
    closureNote: 'done'
  })
  t.equal(forced.status, 403, 'and firing it anyway is refused')
  t.match(forced.html, /created/)
  t.equal((await record(id)).state, 'actions-pending', 'nothing moved')
  const ivys = await browsers.ivy.get(`/records/incident/${id}`)
  t.match(
    ivys.html,
    /<p class="why" id="why-close">Only a safety manager may do this\.<\/p>/,
    'a role that may not fire it is told who may'
  )
})

t.test(
  'a transition or a delete sent from an older version is explained, and sent again moves or deletes it as it is now',
  async (t) => {
    const rec = await apiCreate(incident('Ladder without feet'))
    const form = await browsers.sam.get(`/records/incident/${rec.id}/transition/start-investigation`)
    const confirm = await browsers.sam.get(`/records/incident/${rec.id}/delete`)
    await server.request('PATCH', `/api/v1/records/${rec.id}`, { token: key, body: { payload: { site: 'Ghent' } } })

    const stale = await browsers.sam.post(`/records/incident/${rec.id}/transition/start-investigation`, {
      submitKey: submitKey(form.html),
      version: '1',
      investigationLead: ivy.id
    })
    t.equal(stale.status, 412)
    t.match(textOf(stale.html), /Someone else changed INC-\d{4}-\d{5} after you opened this page, so it was not moved/)
    t.match(
      stale.html,
      new RegExp(
        `href="/records/incident/${rec.id}">Open the record as it is now</a> to see what changed, or send this form again`
      ),
      'with the record as it is now'
    )
    t.match(stale.html, /name="version" value="2"/, 'the form now holds the current version')
    t.match(stale.html, new RegExp(`<option value="${ivy.id}" selected>`), 'and what was chosen')
    t.equal((await record(rec.id)).state, 'reported', 'nothing moved')
    const again = await browsers.sam.post(`/records/incident/${rec.id}/transition/start-investigation`, {
      submitKey: submitKey(stale.html),
      version: '2',
      investigationLead: ivy.id
    })
    t.equal(again.status, 303, 'sent again, it moves')
    t.equal((await record(rec.id)).state, 'investigating')

    const staleDelete = await browsers.sam.post(`/records/incident/${rec.id}/delete`, {
      submitKey: submitKey(confirm.html),
      version: '1'
    })
    t.equal(staleDelete.status, 412)
    t.match(textOf(staleDelete.html), /so it was not deleted/)
    t.match(staleDelete.html, new RegExp(`href="/records/incident/${rec.id}">Open the record as it is now</a>`))
    t.match(staleDelete.html, /name="version" value="3"/, 'the button deletes the record as it is now')
    t.equal((await record(rec.id)).state, 'investigating', 'the record is still there')
    const deleted = await browsers.sam.post(`/records/incident/${rec.id}/delete`, {
      submitKey: submitKey(staleDelete.html),
      version: '3'
    })
    t.equal(deleted.status, 303)
    t.equal(deleted.location, '/records/incident?done=deleted')
    const list = await browsers.sam.get(deleted.location!)
    t.match(list.html, /role="status">The record was deleted\. It stays in the audit log\./, 'the list says so')
  }
)

t.test("the report form carries the module's hints: required fields, lengths and ranges", async (t) => {
  const form = await browsers.rita.get('/records/incident/new')
  t.match(
    form.html,
    /<input type="text" id="f-title" name="title"[^>]* required aria-required="true"[^>]* maxlength="200">/
  )
  t.match(form.html, /<input type="text" id="f-site" name="site"[^>]* required[^>]* maxlength="120">/)
  t.match(form.html, /<input type="number" step="1" inputmode="numeric" id="f-injuredPeople"[^>]* min="0" max="10000">/)
  t.match(form.html, /<input type="number" step="any" inputmode="decimal" id="f-lostTimeDays"[^>]* min="0">/)
  t.match(
    form.html,
    /<select id="f-severity" name="severity"[^>]* required[^>]*><option value="">[^<]*<\/option><option value="low">Low<\/option>/
  )
  t.notMatch(form.html, /id="f-medicalDetails"/, 'no control for a field the reporter may not read')
})

t.test(
  "a closed incident's concluded fields are read-only to the investigator and the health officer; a reporter has no edit form",
  async (t) => {
    const rec = await apiCreate(incident('Burn from steam line', { investigationLead: ivy.id }))
    for (const [transition, payload] of [
      ['start-investigation', { investigationLead: ivy.id }],
      ['record-root-cause', { rootCause: 'Lagging missing on the steam line' }]
    ] as const) {
      const res = await server.request('POST', `/api/v1/records/${rec.id}:transition`, {
        token: key,
        body: { transition, payload }
      })
      t.equal(res.status, 200, transition)
    }
    const samForm = await browsers.sam.get(`/records/incident/${rec.id}/transition/close`)
    const closed = await browsers.sam.post(`/records/incident/${rec.id}/transition/close`, {
      submitKey: submitKey(samForm.html),
      version: '3',
      closureNote: 'Lagging replaced'
    })
    t.equal(closed.status, 303, 'closed by a safety manager who did not create it')
    for (const [who, browser] of [
      ['the investigator', browsers.ivy],
      ['the health officer', browsers.hana]
    ] as const) {
      const form = await browser.get(`/records/incident/${rec.id}/edit`)
      t.equal(form.status, 200, `${who} may edit`)
      for (const field of ['title', 'site', 'rootCause', 'closureNote'])
        t.notMatch(form.html, new RegExp(`name="${field}"`), `${who}: no control for ${field}`)
      t.match(
        textOf(form.html),
        /Root cause Lagging missing on the steam line Locked while the record is closed\./,
        `${who}: the root cause is shown read-only, with why`
      )
      t.match(form.html, /id="f-immediateActions" name="immediateActions"/, `${who}: a field not locked is editable`)
      t.equal(/name="medicalDetails"/.test(form.html), who === 'the health officer', `${who}: medical details`)
      const forced = await browser.post(`/records/incident/${rec.id}/edit`, {
        submitKey: submitKey(form.html),
        version: '4',
        rootCause: 'Rewritten'
      })
      t.equal(
        (await record(rec.id)).payload.rootCause,
        'Lagging missing on the steam line',
        `${who}: a forged field is not written (${forced.status})`
      )
    }
    t.equal((await browsers.rita.get(`/records/incident/${rec.id}/edit`)).status, 404, 'the reporter does not see it')
    const reported = await reportThroughForm(browsers.rita, {
      title: 'Steam leak by the boiler',
      description: 'Hissing from a flange',
      occurredAt: '2026-11-22T07:15',
      site: 'Leeds DC'
    })
    const own = reported.location!.split('?')[0]
    const ownPage = await browsers.rita.get(own)
    t.equal(ownPage.status, 200, 'the reporter sees what they reported')
    t.notMatch(ownPage.html, /Edit details/, 'with no edit link')
    t.equal((await browsers.rita.get(`${own}/edit`)).status, 403, 'and no edit form')
  }
)

t.test('an edit made from a stale version is refused as a conflict and keeps what was typed', async (t) => {
  const rec = await apiCreate(incident('Noise complaint'))
  const form = await browsers.sam.get(`/records/incident/${rec.id}/edit`)
  t.match(form.html, /name="version" value="1"/)
  await server.request('PATCH', `/api/v1/records/${rec.id}`, { token: key, body: { payload: { site: 'Ghent' } } })
  const stale = await browsers.sam.post(`/records/incident/${rec.id}/edit`, {
    submitKey: submitKey(form.html),
    version: '1',
    title: 'Noise complaint from neighbours',
    description: 'Loud',
    occurredAt: '2026-11-20T09:30',
    site: 'Rotterdam',
    category: 'near-miss',
    severity: 'low'
  })
  t.equal(stale.status, 412)
  t.match(stale.html, /Someone else changed/, 'the conflict is explained')
  t.match(
    stale.html,
    new RegExp(`href="/records/incident/${rec.id}">Open the record as it is now`),
    'with a way to reload'
  )
  t.match(stale.html, /value="Noise complaint from neighbours"/, 'what was typed is kept')
  t.equal((await record(rec.id)).payload.site, 'Ghent', 'the other change stands')

  const fresh = await browsers.sam.get(`/records/incident/${rec.id}/edit`)
  const saved = await browsers.sam.post(`/records/incident/${rec.id}/edit`, {
    submitKey: submitKey(fresh.html),
    version: '2',
    title: 'Noise complaint from neighbours',
    description: 'Loud',
    occurredAt: '2026-11-20T09:30',
    site: 'Ghent',
    category: 'near-miss',
    severity: 'low'
  })
  t.equal(saved.status, 303)
  const after = await record(rec.id)
  t.equal(after.payload.title, 'Noise complaint from neighbours')
  t.equal(after.payload.description, 'Loud')
  t.equal(after.version, 3, 'one change')
})

t.test('the list filters, searches and sorts from its URL, and says so when a filter cannot be used', async (t) => {
  await apiCreate(incident('Gas leak at pump 3', { site: 'Hamburg', severity: 'high' }))
  await apiCreate(incident('Gas cylinder unsecured', { site: 'Rotterdam', severity: 'high' }))
  const page = await browsers.sam.get('/records/incident?q=gas&payload[site]=Hamburg')
  t.equal(page.status, 200)
  t.match(page.html, /Gas leak at pump 3/)
  t.notMatch(page.html, /Gas cylinder unsecured/)
  t.match(page.html, /<input type="search" id="filter-q" name="q" value="gas"/, 'the form shows the view it filters')
  t.match(page.html, /<details class="more" open><summary>More filters \(1 in use\)/)
  const bad = await browsers.sam.get('/records/incident?payload[severity]=catastrophic')
  t.equal(bad.status, 400)
  t.match(bad.html, /These filters cannot be used/)
  const range = await browsers.sam.get(
    '/records/incident?payload[occurredAt][gte]=2026-11-20&payload[occurredAt][lte]=2026-11-20&q=gas'
  )
  t.match(range.html, /2 records/, 'a day range on a date-time field covers the whole day')
})

t.test('delete asks first, then soft-deletes through the service', async (t) => {
  const rec = await apiCreate(incident('Duplicate report'))
  const confirm = await browsers.sam.get(`/records/incident/${rec.id}/delete`)
  t.match(confirm.html, /Delete .*\?<\/h1>/)
  const gone = await browsers.sam.post(`/records/incident/${rec.id}/delete`, {
    version: '1',
    submitKey: submitKey(confirm.html)
  })
  t.equal(gone.status, 303)
  t.equal((await server.request('GET', `/api/v1/records/${rec.id}`, { token: key })).status, 404)
  const refused = await browsers.ivy.post(`/records/incident/${rec.id}/delete`, { version: '1' })
  t.equal(refused.status, 404, 'the record is gone for everyone')
})

t.test('a form without the session CSRF token changes nothing', async (t) => {
  const page = await sendPage(server, 'POST', '/records/incident/new', {
    cookie: browsers.sam.cookie,
    form: {
      title: 'Forged',
      description: 'x',
      occurredAt: '2026-11-20T09:30',
      site: 'x',
      category: 'near-miss',
      severity: 'low'
    }
  })
  t.equal(page.status, 403)
  const list = await server.request('GET', '/api/v1/records?moduleKey=incident&q=forged', { token: key })
  t.equal(list.body.items.length, 0)
})

t.test('a module or record one may not open is a 404 page, and the record report is the PDF of the API', async (t) => {
  t.equal((await browsers.sam.get('/records/no-such-module')).status, 404)
  const rec = await apiCreate(incident('Report me'))
  const pdf = await fetch(`${server.url}/records/incident/${rec.id}/report.pdf`, {
    headers: { cookie: `records_session=${browsers.sam.cookie}` }
  })
  t.equal(pdf.status, 200)
  t.equal(pdf.headers.get('content-type'), 'application/pdf')
  t.equal(
    Buffer.from(await pdf.arrayBuffer())
      .subarray(0, 5)
      .toString(),
    '%PDF-'
  )
  t.equal(
    (await browsers.rita.get(`/records/incident/${rec.id}/report.pdf`)).status,
    404,
    'not for one who may not read it'
  )
})

t.test('home lists what names the person, with counts per module', async (t) => {
  const page = await browsers.ivy.get('/records')
  t.match(page.html, /Incident: Investigation lead is me/, 'records naming the investigator as lead')
  t.match(page.html, /Chemical splash in lab 2/)
  t.match(page.html, /<h2>Modules<\/h2>/)
  const cards = [
    ...page.html.matchAll(/<span class="count">~?([\d,]+)<\/span> <span class="muted">(records?)<\/span>/g)
  ]
  t.ok(cards.length > 0, 'a count per module')
  for (const [, n, noun] of cards) t.equal(noun, n === '1' ? 'record' : 'records', `${n} ${noun}`)
  const ritas = await browsers.rita.get('/records')
  t.match(ritas.html, /Incident: reported by me/, "the reporter's own reports")
  t.match(ritas.html, /Forklift reversing/)
  t.match(
    ritas.html,
    /href="\/records\/incident\?createdBy=[0-9a-f-]{36}&amp;sort=-createdAt">See all/,
    'linked to the list of them'
  )
})

t.test('an update of only fields one may not read is not in their timeline', async (t) => {
  const rec = await apiCreate(incident('Burn from hot pipe'))
  await server.request('PATCH', `/api/v1/records/${rec.id}`, {
    token: key,
    body: { payload: { medicalDetails: medical } }
  })
  const sams = await browsers.sam.get(`/records/incident/${rec.id}`)
  t.notMatch(textOf(sams.html), /changed it/, 'the safety manager is not told that something hidden changed')
  const hanas = await browsers.hana.get(`/records/incident/${rec.id}`)
  t.match(
    textOf(hanas.html),
    /changed it Medical details|changed it .* Medical details: nothing →/,
    'the health officer sees the change'
  )
})

t.test('home shows the records waiting for a step the person can take', async (t) => {
  const page = await browsers.sam.get('/records')
  t.match(page.html, /Incident: waiting for a step you can take/, 'reported incidents wait for a safety manager')
  const ritas = await browsers.rita.get('/records')
  t.notMatch(ritas.html, /waiting for a step you can take/, 'a reporter fires no transition')
})
