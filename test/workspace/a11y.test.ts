import t, { type Test } from '../helpers/tap.ts'
import type { Page } from 'playwright-core'
import { inTenant } from '../../core/db/tenant-scope.ts'
import { renderExport } from '../../plugins/exports/exports.job.ts'
import { axeReport, axeViolations } from '../helpers/axe.ts'
import { chromiumMissing, launchChromium } from '../helpers/browser.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { webhookTestConfig } from '../webhooks/receiver.ts'

/**
 * Accessibility of the pages in Chromium: axe-core (test/helpers/axe.ts) finds no WCAG 2.0/2.1 A or AA violation on
 * each page of the workspace (home, list with and without its further filters open, record, create, edit, transition
 * and delete forms, a form showing the server's problems, export progress queued and done), on its error pages (404,
 * 403, 400 and the 412 of an edit from a stale version) and on the settings (API keys as an admin and as a reporter,
 * the created token, the webhook subscriptions' list, forms, created and delete pages), at a desktop width and at a
 * phone's (390 px), each page reached as a person reaches it; and a reporter fills and sends the report form with the
 * keyboard alone.
 */
const widths = [
  { name: 'desktop', viewport: { width: 1280, height: 800 } },
  { name: 'phone', viewport: { width: 390, height: 844 } }
]

// Longer than tap's two minutes on a busy machine: axe on some thirty-five pages at two widths.
t.setTimeout(180_000)
const skip = chromiumMissing((m) => t.fail(m))
if (skip) t.plan(0, skip)
else await browserTests()

async function browserTests() {
  // Webhooks over plain http to loopback, as their own tests allow them: a subscription is made without a public host.
  const server = await startTestServer(webhookTestConfig())
  const password = 'correct horse battery staple'
  const ada = await server.platform.users.create('acme', {
    userName: 'ada',
    displayName: 'Ada Admin',
    password,
    roles: ['admin', 'safety-manager']
  })
  await server.platform.users.create('acme', {
    userName: 'rita',
    displayName: 'Rita Reporter',
    password,
    roles: ['reporter']
  })
  // A record with something in most of its fields, moved on once, so its page has values, a timeline and transitions.
  const created = await server.request('POST', '/api/v1/records', {
    body: {
      moduleKey: 'incident',
      payload: incidentPayload({
        location: { latitude: 53.8, longitude: -1.55, label: 'Aisle 4' },
        bodyParts: ['hands', 'arms'],
        injuredPeople: 1,
        immediateActions: 'Area cordoned off; racking inspected.'
      })
    }
  })
  const moved = await server.request('POST', `/api/v1/records/${created.body.id}:transition`, {
    body: { transition: 'start-investigation', payload: { investigationLead: ada.id }, comment: 'Ada leads.' }
  })
  if (moved.status !== 200) throw new Error(`the record to show: ${moved.text}`)
  const record = `/records/incident/${created.body.id as string}`
  // A record to edit from a stale version: changed through the API while its edit form is open.
  const toEdit = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Pallet dropped from a reach truck' }) }
  })
  if (toEdit.status !== 201) throw new Error(`the record to edit: ${toEdit.text}`)
  const staleId = toEdit.body.id as string
  const browser = await launchChromium()
  t.teardown(async () => {
    await browser.close()
    await server.close()
  })
  const context = await browser.newContext({ baseURL: server.url, viewport: widths[0].viewport })
  context.setDefaultTimeout(10_000)
  const page = await context.newPage()
  const cspViolations: string[] = []
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) cspViolations.push(m.text())
  })

  /**
   * axe's report of `path` at each width ('' when clean), after `ready` says the page is drawn; a page that answers
   * another status than `status` is reported too (an error page must be the error, not a page that merely says so).
   */
  const atEachWidth = async (
    p: Page,
    path: string,
    ready: (p: Page, width: string) => Promise<unknown> = () => Promise.resolve(),
    status = 200
  ) => {
    const found: string[] = []
    for (const w of widths) {
      await p.setViewportSize(w.viewport)
      const answer = await p.goto(path)
      if (answer?.status() !== status) found.push(`${path}, ${w.name}: answered ${answer?.status()}, not ${status}`)
      await ready(p, w.name)
      const report = await axeReport(p, `${path}, ${w.name}`)
      if (report) found.push(report)
    }
    return found.join('\n')
  }

  /** Sends the page's form with `submit` and waits for the answer to the POST, which must be `status`. */
  const answered = async (p: Page, status: number, submit: () => Promise<unknown>) => {
    const [answer] = await Promise.all([
      p.waitForResponse((r) => r.request().method() === 'POST' && r.request().resourceType() === 'document'),
      submit()
    ])
    if (answer.status() !== status) throw new Error(`${answer.url()} answered ${answer.status()}, not ${status}`)
    await p.waitForLoadState()
  }

  /** Signs `userName` in through the sign-in form, asking for `next`, and waits for it. */
  const signIn = async (p: Page, userName: string, next: string) => {
    await p.goto(`/sign-in?next=${next}`)
    await p.getByLabel('Organisation').fill('acme')
    await p.getByLabel('User name').fill(userName)
    await p.getByLabel('Password').fill(password)
    await p.getByRole('button', { name: 'Sign in' }).click()
    await p.waitForURL((u) => u.pathname === next)
  }

  /** A browser of another person (their own cookies), signed in and on `next`; closed with the test. */
  const personOn = async (t: Test, userName: string, next: string) => {
    const own = await browser.newContext({ baseURL: server.url, viewport: widths[0].viewport })
    t.teardown(() => own.close())
    own.setDefaultTimeout(10_000)
    const p = await own.newPage()
    p.on('console', (m) => {
      if (/Content.Security.Policy/i.test(m.text())) cspViolations.push(m.text())
    })
    await signIn(p, userName, next)
    return p
  }

  const heading = (name: string | RegExp) => (p: Page) => p.getByRole('heading', { level: 1, name }).waitFor()

  await t.test(
    'the helper runs axe under the pages’ own Content-Security-Policy and names what it finds',
    async (t) => {
      await page.goto('/sign-in')
      t.match(
        (await page.request.get('/sign-in')).headers()['content-security-policy'],
        /script-src 'nonce-/,
        'the page allows only scripts with its nonce'
      )
      const complaint = page.waitForEvent('console', (m) => /Content.Security.Policy/i.test(m.text()))
      await page.addScriptTag({ content: 'window.injected = true' }).catch(() => undefined)
      await complaint
      t.equal(await page.evaluate('window.injected'), undefined, 'an inline script without the nonce does not run')
      // That refusal was this test's own doing, not a page's.
      cspViolations.length = 0
      t.same(await axeViolations(page), [], 'the sign-in page has no violation')
      // An unlabelled box, added to the page as a defect would be.
      await page.evaluate(`(() => {
      const input = document.createElement('input')
      input.id = 'unlabelled-box'
      document.querySelector('main, body').append(input)
    })()`)
      const found = await axeViolations(page)
      t.same(
        found.map((v) => v.id),
        ['label'],
        'the unlabelled box is found'
      )
      t.match(found[0], {
        impact: 'critical',
        help: /Form elements must have labels/,
        nodes: [{ target: '#unlabelled-box' }]
      })
      t.match(
        await axeReport(page, 'sign-in with a defect'),
        /^axe on sign-in with a defect \(.*\/sign-in\):\nlabel \(critical\): Form elements must have labels <https:\/\/dequeuniversity\.com\/rules\/axe\/[\d.]+\/label\?application=axeAPI>\n {4}at #unlabelled-box: Fix any of the following: /
      )
    }
  )

  await t.test('the sign-in page has no A/AA violation at either width', async (t) => {
    t.equal(await atEachWidth(page, '/sign-in'), '')
  })

  await t.test('the settings pages have no A/AA violation at either width', async (t) => {
    await signIn(page, 'ada', '/settings/api-keys')
    t.equal(await atEachWidth(page, '/settings/api-keys'), '', 'API keys and tokens')
    t.equal(await atEachWidth(page, '/settings/webhooks'), '', 'webhooks')
  })

  await t.test(
    'a reporter’s API keys page and the page of the token they create have no A/AA violation at either width',
    async (t) => {
      const rita = await personOn(t, 'rita', '/settings/api-keys')
      t.equal(await atEachWidth(rita, '/settings/api-keys'), '', 'API keys and tokens, as a reporter')
      t.equal(
        await atEachWidth(rita, '/settings/api-keys', async (p, width) => {
          await p.getByLabel('Name', { exact: true }).fill(`Rita’s script on a ${width}`)
          await answered(p, 201, () => p.getByRole('button', { name: 'Create token' }).click())
          await heading('Token created')(p)
        }),
        '',
        'the token created, shown once'
      )
    }
  )

  await t.test('the webhook subscription pages have no A/AA violation at either width', async (t) => {
    // Signed in as ada, an admin, by the test before. The create form is on the list page.
    const fill = async (p: Page, url: string, description: string) => {
      await p.getByLabel('URL', { exact: true }).fill(url)
      await p.getByLabel('Description', { exact: true }).fill(description)
      await p.getByRole('checkbox', { name: /webhook\.test/ }).check()
    }
    t.equal(
      await atEachWidth(page, '/settings/webhooks', async (p) => {
        await fill(p, 'not a url', 'Refused')
        await answered(p, 422, () => p.getByRole('button', { name: 'Create subscription' }).click())
        await p.getByRole('alert').filter({ hasText: 'The subscription was not saved' }).waitFor()
      }),
      '',
      'create form with the service’s problems beside its fields'
    )
    t.equal(
      await atEachWidth(page, '/settings/webhooks', async (p, width) => {
        await fill(p, 'http://127.0.0.1:9/hook', `Line-of-business hook (${width})`)
        await answered(p, 201, () => p.getByRole('button', { name: 'Create subscription' }).click())
        await heading('Subscription created')(p)
      }),
      '',
      'the subscription created, its secret shown once'
    )
    // From the secret page back to the list, which now shows the subscriptions and says what was done.
    await page.getByRole('link', { name: 'Back to webhooks' }).click()
    await page.waitForURL((u) => u.pathname === '/settings/webhooks' && u.searchParams.get('done') === 'created')
    const listed = new URL(page.url())
    t.equal(
      await atEachWidth(page, listed.pathname + listed.search, (p) =>
        p.getByRole('status').filter({ hasText: 'The subscription was created' }).waitFor()
      ),
      '',
      'the list with its subscriptions and the notice of the one created'
    )
    await page.getByRole('link', { name: 'Edit Line-of-business hook (desktop)' }).click()
    await page.waitForURL(/\/settings\/webhooks\/[^/]+\/edit$/)
    const edit = new URL(page.url()).pathname
    t.equal(await atEachWidth(page, edit, heading('Edit subscription')), '', 'edit form')
    await page.getByRole('link', { name: 'Delete this subscription…' }).click()
    await page.waitForURL(/\/settings\/webhooks\/[^/]+\/delete$/)
    const remove = new URL(page.url()).pathname
    t.equal(await atEachWidth(page, remove, heading('Delete subscription')), '', 'delete confirmation')
  })

  await t.test('every workspace page has no A/AA violation at either width', async (t) => {
    // Signed in as ada by the test before.
    t.equal(await atEachWidth(page, '/records'), '', 'home')
    t.equal(await atEachWidth(page, '/records/incident'), '', 'list')
    t.equal(
      await atEachWidth(page, '/records/incident?q=forklift&state=investigating&sort=number'),
      '',
      'list, filtered'
    )
    t.equal(await atEachWidth(page, '/records/incident?q=nothing-matches-this'), '', 'list, empty')
    t.equal(
      await atEachWidth(page, '/records/incident', async (p) => {
        await p.locator('summary', { hasText: 'More filters' }).click()
        // Open: its date ranges and the people picker (ada may change incidents, so she is offered everyone).
        await p.getByLabel('Occurred at: from').waitFor()
        await p.getByLabel('Regulator notified on: to').waitFor()
        await p.getByRole('combobox', { name: 'Investigation lead' }).waitFor()
      }),
      '',
      'list with "More filters" open'
    )
    t.equal(await atEachWidth(page, record), '', 'record')
    t.equal(await atEachWidth(page, '/records/incident/new'), '', 'create form')
    t.equal(
      await atEachWidth(page, '/records/incident/new', async (p) => {
        await p.getByLabel('Title').fill('x'.repeat(10))
        await p.getByRole('button', { name: 'Create incident' }).click()
        await p.locator('#form-problems').waitFor()
      }),
      '',
      'create form with the problems the server found beside its fields'
    )
    t.equal(await atEachWidth(page, `${record}/edit`), '', 'edit form')
    t.equal(await atEachWidth(page, `${record}/transition/record-root-cause`), '', 'transition form')
    t.equal(await atEachWidth(page, `${record}/delete`), '', 'delete confirmation')
    await page.goto('/records/incident')
    // Ada is a safety manager, whose role may export: a list without the export form is a failure, not a skip.
    if (!(await page.getByRole('button', { name: 'Export this view' }).count()))
      t.fail('the list offers a safety manager no export form: no export progress page to check')
    else
      t.equal(
        await atEachWidth(page, '/records/incident', async (p) => {
          await p.getByRole('button', { name: 'Export this view' }).click()
          await p.waitForURL(/\/exports\/[0-9a-f-]{36}$/)
          await p.getByRole('status').filter({ hasText: 'Waiting to start' }).waitFor()
        }),
        '',
        'export progress, queued'
      )
  })

  await t.test('the export progress page of a finished export has no A/AA violation at either width', async (t) => {
    /** Runs the tenant's queued exports, oldest first, as the job runner would (jobs are off in this server). */
    const runQueued = async () => {
      const { rows } = await server.platform.db.system.query(
        `SELECT id FROM export_jobs WHERE tenant_id = 'acme' AND status = 'queued' ORDER BY created_at, id`
      )
      for (const { id } of rows as Array<{ id: string }>) {
        const done = await inTenant('acme', () =>
          renderExport(
            server.running.app,
            server.platform,
            { tenantId: 'acme', exportId: id },
            { touch: async () => undefined, signal: new AbortController().signal }
          )
        )
        const { status } = (await server.request('GET', `/api/v1/exports/${id}`)).body
        if (status !== 'succeeded') throw new Error(`export ${id} is ${status} after its run: ${JSON.stringify(done)}`)
      }
    }
    const download = (p: Page) => p.getByRole('link', { name: /^Download incident-export-/ }).waitFor()
    for (const w of widths) {
      await page.setViewportSize(w.viewport)
      await page.goto('/records/incident')
      await page.getByRole('button', { name: 'Export this view' }).click()
      await page.waitForURL(/\/exports\/[0-9a-f-]{36}$/)
      await page.getByRole('status').filter({ hasText: 'Waiting to start' }).waitFor()
      await runQueued()
      // The open page learns of the end by itself (export.js) and shows the link in place.
      await download(page)
      await page.getByRole('status').filter({ hasText: 'Done' }).waitFor()
      t.equal(await axeReport(page, `export progress, done in place, ${w.name}`), '', `done in place, ${w.name}`)
      const progress = new URL(page.url()).pathname
      t.equal(await atEachWidth(page, progress, download), '', `done, as served (the one made on a ${w.name})`)
    }
  })

  await t.test(
    'the error pages (404, 403, 400 and the 412 of an edit from a stale version) have no A/AA violation at either width',
    async (t) => {
      // Ada, signed in by the tests before.
      t.equal(
        await atEachWidth(page, '/records/incident/00000000-0000-4000-8000-000000000000', heading('Not found'), 404),
        '',
        '404: a record that does not exist'
      )
      t.equal(
        await atEachWidth(
          page,
          '/records/incident?payload[noSuchField]=x',
          (p) => p.getByRole('alert').filter({ hasText: 'These filters cannot be used' }).waitFor(),
          400
        ),
        '',
        '400: a list whose filter the service refuses'
      )
      t.equal(
        await atEachWidth(page, `/records/incident/${staleId}/edit`, async (p, width) => {
          await p.getByLabel('Title').fill(`Pallet dropped from a reach truck (seen on a ${width})`)
          // Someone else changes the record while the form is open.
          const other = await server.request('PATCH', `/api/v1/records/${staleId}`, {
            body: { payload: { site: `Changed meanwhile (${width})` } }
          })
          if (other.status !== 200) throw new Error(`the change made meanwhile: ${other.text}`)
          await answered(p, 412, () => p.getByRole('button', { name: 'Save changes' }).click())
          await p.getByRole('alert').filter({ hasText: 'Someone else changed' }).waitFor()
        }),
        '',
        '412: an edit sent from a stale version'
      )
      // A reporter's own record, made through the report form, and a transition only a safety manager may fire.
      const rita = await personOn(t, 'rita', '/records/incident/new')
      await rita.getByLabel('Title').fill('Spilt coolant by lathe 2')
      await rita.getByLabel('What happened').fill('A coolant line split; the floor was slippery for an hour.')
      // Yesterday (the form's times are UTC): an incident is reported after it happened.
      await rita.getByLabel('Occurred at').fill(new Date(Date.now() - 86_400_000).toISOString().slice(0, 16))
      await rita.getByLabel('Site').fill('Leeds DC')
      await rita.getByLabel('Category').selectOption('near-miss')
      await rita.getByLabel('Severity').selectOption('low')
      await rita.getByRole('button', { name: 'Create incident' }).click()
      await rita.waitForURL((u) => /^\/records\/incident\/[0-9a-f-]{36}$/.test(u.pathname))
      const own = new URL(rita.url()).pathname
      t.equal(
        await atEachWidth(rita, `${own}/transition/start-investigation`, heading('Not allowed'), 403),
        '',
        '403: a reporter opening a transition they may not fire'
      )
    }
  )

  await t.test('a menu says "current page" only of the page a person is on (a section is not a page)', async (t) => {
    for (const path of ['/records', '/records/incident', record, '/settings/api-keys']) {
      await page.goto(path)
      const current = await page.evaluate<Array<string | null>>(
        `[...document.querySelectorAll('nav a[aria-current="page"]')].map((a) => a.getAttribute('href'))`
      )
      t.same(
        current.filter((href) => href !== path),
        [],
        `${path}: aria-current="page" on no link to another page (a section's link may say aria-current="true")`
      )
    }
  })

  /**
   * A browser of its own for `userName`, who signs in with the keyboard alone (at `viewport`) and lands on `next`; its
   * Tab walk (keyboardOf) starts there.
   */
  const signInByKeyboard = async (
    t: Test,
    userName: string,
    next: string,
    viewport: { width: number; height: number }
  ) => {
    const keyboard = await browser.newContext({ baseURL: server.url, viewport, locale: 'en-US' })
    t.teardown(() => keyboard.close())
    keyboard.setDefaultTimeout(10_000)
    const p = await keyboard.newPage()
    p.on('console', (m) => {
      if (/Content.Security.Policy/i.test(m.text())) cspViolations.push(m.text())
    })
    await p.goto(`/sign-in?next=${next}`)
    const walk = keyboardOf(p, t)
    await walk.tabTo('tenant')
    await p.keyboard.type('acme')
    await walk.tabTo('userName')
    await p.keyboard.type(userName)
    await walk.tabTo('password')
    await p.keyboard.type(password)
    await p.keyboard.press('Enter')
    await p.waitForURL((u) => u.pathname === next)
    walk.visited.length = 0
    return { p, ...walk }
  }

  await t.test('a reporter fills and sends the report form with the keyboard alone', async (t) => {
    const { p, tabTo, tabToNamed } = await signInByKeyboard(t, 'rita', '/records/incident/new', widths[1].viewport)
    await tabTo('f-title')
    await p.keyboard.type('Keyboard-only report: trolley wheel sheared')
    await tabTo('f-description')
    await p.keyboard.type('A loaded trolley lost a wheel on the ramp; it tipped but nobody was near.')
    await tabTo('f-occurredAt')
    // A datetime-local box takes its parts typed in the locale's order (en-US: month, day, year, then the time; the
    // year takes up to six digits, so the arrow moves on to the hours).
    for (const part of ['11', '20', '2026', 'ArrowRight', '08', '30', 'a'])
      if (part.startsWith('Arrow')) await p.keyboard.press(part)
      else await p.keyboard.type(part)
    t.equal(await p.locator('#f-occurredAt').inputValue(), '2026-11-20T08:30', 'the date and time typed')
    await tabTo('f-site')
    await p.keyboard.type('Leeds DC')
    await tabTo('f-category')
    await p.keyboard.type('Near')
    t.equal(await p.locator('#f-category').inputValue(), 'near-miss', 'a choice picked by typing its label')
    await tabTo('f-severity')
    await p.keyboard.type('low')
    t.equal(await p.locator('#f-severity').inputValue(), 'low')
    // On to the button that sends the form, past the optional fields.
    await tabToNamed('Create incident', 60)
    t.pass('the submit button is reached by Tab')
    await p.keyboard.press('Enter')
    await p.waitForURL(/\/records\/incident\/[0-9a-f-]{36}/)
    t.match(await p.getByRole('heading', { level: 1 }).innerText(), /^INC-\d{4}-\d{5}: Keyboard-only report/)
    t.equal(await atEachWidth(p, new URL(p.url()).pathname), '', "the reporter's record page (transitions not theirs)")
  })

  await t.test('a safety manager starts an investigation from the record page with the keyboard alone', async (t) => {
    const fresh = await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Keyboard-only move: loose handrail' }) }
    })
    t.equal(fresh.status, 201)
    const at = `/records/incident/${fresh.body.id as string}`
    const { p, tabTo, tabToNamed } = await signInByKeyboard(t, 'ada', at, widths[0].viewport)
    await tabToNamed('Start investigation', 80)
    await p.keyboard.press('Enter')
    await p.waitForURL((u) => u.pathname === `${at}/transition/start-investigation`)
    await tabTo('f-investigationLead')
    await p.keyboard.type('Ada')
    t.equal(await p.locator('#f-investigationLead').inputValue(), ada.id, 'the lead picked by typing a name')
    await tabToNamed('Start investigation')
    await p.keyboard.press('Enter')
    await p.waitForURL((u) => u.pathname === at && u.searchParams.get('done') === 'moved')
    t.match(await p.locator('.badge').first().innerText(), /Under investigation/, 'the record moved on')
  })

  await t.test('no page broke its Content-Security-Policy', async (t) => {
    t.same(cspViolations, [])
  })
}

/**
 * Moving through a page with Tab as a person does: `tabTo` a control by id, `tabToNamed` a link or button by its text,
 * each step failing the test when the focused element shows no focus ring.
 */
function keyboardOf(p: Page, t: Test) {
  const focused = () =>
    p.evaluate<{ id: string; name: string; ring: boolean; style: string }>(`(() => {
      const e = document.activeElement
      const style = getComputedStyle(e)
      return {
        id: e.id || e.tagName.toLowerCase(),
        name: e.getAttribute('name') || (e.innerText || '').trim(),
        // A date box's parts take the focus in turn inside it, each shown highlighted, while the box itself stops
        // matching :focus-visible: its ring is the highlighted part.
        ring:
          (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0) ||
          style.boxShadow !== 'none' ||
          ['date', 'datetime-local', 'time'].includes(e.type),
        style: [style.outlineStyle, style.outlineWidth, style.boxShadow, e.matches(':focus-visible')].join(' ')
      }
    })()`)
  const visited: string[] = []
  /** Presses Tab until the focused element is the one `wanted` (at most `max` times), as a person moves through a page. */
  const tabUntil = async (wanted: (f: { id: string; name: string }) => boolean, what: string, max: number) => {
    for (let i = 0; i < max; i++) {
      await p.keyboard.press('Tab')
      const f = await focused()
      visited.push(f.id)
      if (!f.ring) t.fail(`${f.id} (${f.name}) has the focus and shows no focus ring (${f.style})`)
      if (wanted(f)) return
    }
    throw new Error(`Tab never reached ${what}; it went through ${visited.slice(-max).join(', ')}`)
  }
  /** Tab to the control `id` (a page may have put the focus there itself: autofocus). */
  const tabTo = async (id: string, max = 40) => {
    if ((await focused()).id === id) return
    await tabUntil((f) => f.id === id, `#${id}`, max)
  }
  /** Tab to the link or button `name`. */
  const tabToNamed = (name: string, max = 40) => tabUntil((f) => f.name === name, `"${name}"`, max)
  return { tabTo, tabToNamed, visited }
}
