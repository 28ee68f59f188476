import t from '../helpers/tap.ts'
import type { Page } from 'playwright-core'
import { axeReport, axeViolations } from '../helpers/axe.ts'
import { chromiumMissing, launchChromium } from '../helpers/browser.ts'
import { startTestServer } from '../helpers/server.ts'

/**
 * Accessibility of the pages in Chromium: axe-core (test/helpers/axe.ts) finds no WCAG 2.0/2.1 A or AA violation on
 * each page, at a desktop width and at a phone's (390 px).
 */
const widths = [
  { name: 'desktop', viewport: { width: 1280, height: 800 } },
  { name: 'phone', viewport: { width: 390, height: 844 } }
]

const skip = chromiumMissing((m) => t.fail(m))
if (skip) t.plan(0, skip)
else await browserTests()

async function browserTests() {
  const server = await startTestServer()
  const password = 'correct horse battery staple'
  await server.platform.users.create('acme', {
    userName: 'ada',
    displayName: 'Ada Admin',
    password,
    roles: ['admin', 'safety-manager']
  })
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
      // An unlabelled box and an image without a text alternative, added to the page as a defect would be.
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
    await page.waitForURL('**/settings/api-keys')
    t.equal(await atEachWidth(page, '/settings/api-keys'), '', 'API keys and tokens')
    t.equal(await atEachWidth(page, '/settings/webhooks'), '', 'webhooks')
  })

  await t.test('no page broke its Content-Security-Policy', async (t) => {
    t.same(cspViolations, [])
  })
}
