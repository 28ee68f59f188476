import t from '../helpers/tap.ts'
import type { Page } from 'playwright-core'
import { axeReport, axeViolations } from '../helpers/axe.ts'
import { chromiumMissing, launchChromium } from '../helpers/browser.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * Accessibility of the pages in Chromium: axe-core (test/helpers/axe.ts) finds no WCAG 2.0/2.1 A or AA violation on
 * each page of the workspace (home, list, record, create, edit, transition and delete forms, a form showing the
 * server's problems, export progress when the list offers an export) and of the settings, at a desktop width and at a
 * phone's (390 px); and a reporter fills and sends the report form with the keyboard alone.
 */
const widths = [
  { name: 'desktop', viewport: { width: 1280, height: 800 } },
  { name: 'phone', viewport: { width: 390, height: 844 } }
]

// Longer than tap's two minutes on a busy machine: axe on some twenty pages at two widths.
t.setTimeout(180_000)
const skip = chromiumMissing((m) => t.fail(m))
if (skip) t.plan(0, skip)
else await browserTests()

async function browserTests() {
  const server = await startTestServer()
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

  /** axe's report of `path` at each width ('' when clean), after `ready` says the page is drawn. */
  const atEachWidth = async (p: Page, path: string, ready: (p: Page) => Promise<unknown> = () => Promise.resolve()) => {
    const found: string[] = []
    for (const w of widths) {
      await p.setViewportSize(w.viewport)
      await p.goto(path)
      await ready(p)
      const report = await axeReport(p, `${path}, ${w.name}`)
      if (report) found.push(report)
    }
    return found.join('\n')
  }

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
    await page.goto('/sign-in?next=/settings/api-keys')
    await page.getByLabel('Organisation').fill('acme')
    await page.getByLabel('User name').fill('ada')
    await page.getByLabel('Password').fill(password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL((u) => u.pathname === '/settings/api-keys')
    t.equal(await atEachWidth(page, '/settings/api-keys'), '', 'API keys and tokens')
    t.equal(await atEachWidth(page, '/settings/webhooks'), '', 'webhooks')
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
    const exportButton = page.getByRole('button', { name: /export/i })
    if (!(await exportButton.count())) t.comment('the list offers no export yet: no export progress page to check')
    else
      t.equal(
        await atEachWidth(page, '/records/incident', async (p) => {
          await p
            .getByRole('button', { name: /export/i })
            .first()
            .click()
          await p.waitForURL(/\/exports\//)
        }),
        '',
        'export progress'
      )
  })

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

  await t.test('a reporter fills and sends the report form with the keyboard alone', async (t) => {
    const keyboard = await browser.newContext({ baseURL: server.url, viewport: widths[1].viewport, locale: 'en-US' })
    t.teardown(() => keyboard.close())
    keyboard.setDefaultTimeout(10_000)
    const p = await keyboard.newPage()
    p.on('console', (m) => {
      if (/Content.Security.Policy/i.test(m.text())) cspViolations.push(m.text())
    })
    await p.goto('/sign-in?next=/records/incident/new')
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
    /** Presses Tab until the control `id` has the focus (at most `max` times), as a person moves through a page. */
    const tabTo = async (id: string, max = 40) => {
      // A page may put the focus there itself (autofocus).
      if ((await focused()).id === id) return
      for (let i = 0; i < max; i++) {
        await p.keyboard.press('Tab')
        const f = await focused()
        visited.push(f.id)
        if (!f.ring) t.fail(`${f.id} (${f.name}) has the focus and shows no focus ring (${f.style})`)
        if (f.id === id) return
      }
      throw new Error(`Tab never reached #${id}; it went through ${visited.slice(-max).join(', ')}`)
    }
    await tabTo('tenant')
    await p.keyboard.type('acme')
    await tabTo('userName')
    await p.keyboard.type('rita')
    await tabTo('password')
    await p.keyboard.type(password)
    await p.keyboard.press('Enter')
    await p.waitForURL((u) => u.pathname === '/records/incident/new')
    visited.length = 0
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
    for (let i = 0; i < 60; i++) {
      await p.keyboard.press('Tab')
      const f = await focused()
      if (!f.ring) t.fail(`${f.id} (${f.name}) has the focus and shows no focus ring (${f.style})`)
      if (f.name === 'Create incident') break
    }
    t.equal((await focused()).name, 'Create incident', 'the submit button is reached by Tab')
    await p.keyboard.press('Enter')
    await p.waitForURL(/\/records\/incident\/[0-9a-f-]{36}/)
    t.match(await p.getByRole('heading', { level: 1 }).innerText(), /^INC-\d{4}-\d{5}: Keyboard-only report/)
    t.equal(await atEachWidth(p, new URL(p.url()).pathname), '', "the reporter's record page (transitions not theirs)")
  })

  await t.test('no page broke its Content-Security-Policy', async (t) => {
    t.same(cspViolations, [])
  })
}
