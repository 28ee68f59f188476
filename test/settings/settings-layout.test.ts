import t from '../helpers/tap.ts'
import type { Page } from 'playwright-core'
import { chromiumMissing, launchChromium } from '../helpers/browser.ts'
import { startTestServer } from '../helpers/server.ts'
import { webhookTestConfig } from '../webhooks/receiver.ts'

/**
 * The settings pages in Chromium: one header on every page (API keys, webhooks, GraphQL
 * console), and an admin creating a webhook subscription with the form. Set
 * SCREENSHOT_DIR to keep a picture of each page.
 */
const skip = chromiumMissing((m) => t.fail(m))
if (skip) t.plan(0, skip)
else await browserTests()

type HeaderFacts = Record<string, unknown> & { links: string[][]; html: string }

async function browserTests() {
  const server = await startTestServer(webhookTestConfig())
  const password = 'correct horse battery staple'
  await server.platform.users.create('acme', { userName: 'ada', password, roles: ['admin'] })
  const browser = await launchChromium()
  t.teardown(async () => {
    await browser.close()
    await server.close()
  })
  const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 } })
  context.setDefaultTimeout(10_000)
  const page = await context.newPage()
  const cspViolations: string[] = []
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) cspViolations.push(m.text())
  })
  const shot = async (p: Page, name: string) => {
    if (process.env.SCREENSHOT_DIR)
      await p.screenshot({ path: `${process.env.SCREENSHOT_DIR}/${name}.png`, fullPage: false })
  }

  await page.goto('/sign-in?next=/settings/webhooks')
  await page.getByLabel('Organisation').fill('acme')
  await page.getByLabel('User name').fill('ada')
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL('**/settings/webhooks')

  /** The header as a person sees it: its boxes, and its markup without the mark of the current page. */
  const header = async (path: string) => {
    await page.goto(path)
    await page.locator('header').waitFor()
    if (path === '/settings/graphql') await page.locator('.graphiql-container').waitFor()
    // A string, not a function: the test runner's transform would name the inner functions with a helper the page lacks.
    return page.evaluate<HeaderFacts>(`(() => {
      const box = (el) => {
        const r = el.getBoundingClientRect()
        return [r.x, r.y, r.width, r.height].map((n) => Math.round(n * 10) / 10)
      }
      const h = document.querySelector('header')
      return {
        header: box(h),
        bar: box(h.querySelector('.bar')),
        brand: box(h.querySelector('.brand')),
        nav: box(h.querySelector('nav')),
        links: [...h.querySelectorAll('nav a')].map((a) => [a.textContent, ...box(a)]),
        who: box(h.querySelector('.who')),
        font: getComputedStyle(h).font,
        html: h.outerHTML.replace(/ aria-current="page"/g, '').replace(/name="csrf" value="[^"]+"/, '')
      }
    })()`)
  }

  await t.test('the header is the same on the API keys, webhooks and GraphQL pages', async (t) => {
    const keys = await header('/settings/api-keys')
    await shot(page, 'layout-api-keys')
    const hooks = await header('/settings/webhooks')
    await shot(page, 'layout-webhooks')
    const graphql = await header('/settings/graphql')
    await shot(page, 'layout-graphql')
    t.same(
      keys.links.map((l) => l[0]),
      ['Home', 'API keys and tokens', 'GraphQL', 'Webhooks'],
      'the menu'
    )
    t.same(hooks, keys, 'webhooks: the same header, to the pixel')
    t.same(graphql, keys, 'GraphQL console: the same header, to the pixel')
    for (const [path, label] of [
      ['/settings/api-keys', 'API keys and tokens'],
      ['/settings/webhooks', 'Webhooks'],
      ['/settings/graphql', 'GraphQL']
    ]) {
      await page.goto(path)
      t.equal(await page.locator('header nav a[aria-current="page"]').innerText(), label, `${path} marks its link`)
      const named = page.locator('header nav').getByRole('link', { name: label, exact: true })
      t.equal(await named.count(), 1, 'its accessible name is the label alone (the width-keeping copy is not read)')
    }
  })

  await t.test(
    'an admin creates a subscription with the form: a refused URL is explained beside the field',
    async (t) => {
      await page.goto('/settings/webhooks')
      await page.getByLabel('URL', { exact: true }).fill('http://10.1.2.3/hook')
      await page.getByLabel('Description').fill('Browser-made hook')
      await page.getByRole('checkbox', { name: /record\.created/ }).check()
      await page.getByRole('checkbox', { name: 'incident', exact: true }).check()
      await page.getByRole('button', { name: 'Create subscription' }).click()
      await page.locator('#url-error').waitFor()
      t.match(await page.locator('#url-error').innerText(), /The target http:\/\/10\.1\.2\.3\/hook is refused/)
      t.match(await page.getByRole('alert').innerText(), 'The subscription was not saved')
      t.equal(await page.getByLabel('URL', { exact: true }).getAttribute('aria-invalid'), 'true')
      t.ok(await page.getByRole('checkbox', { name: /record\.created/ }).isChecked(), 'the ticks are kept')
      await page.getByLabel('URL', { exact: true }).scrollIntoViewIfNeeded()
      await shot(page, 'webhooks-refused-url')
      await page.getByLabel('URL', { exact: true }).fill('http://127.0.0.1:9/browser-hook')
      await page.getByRole('button', { name: 'Create subscription' }).click()
      await page.getByRole('heading', { name: 'Subscription created' }).waitFor()
      t.match(await page.locator('#secret').inputValue(), /^whsec_/)
      await shot(page, 'webhooks-created')
      await page.getByRole('link', { name: 'Back to webhooks' }).click()
      await page.getByText('The subscription was created.').waitFor()
      await page.getByRole('link', { name: 'Edit Browser-made hook' }).click()
      await page.getByRole('heading', { name: 'Edit subscription' }).waitFor()
      await shot(page, 'webhooks-edit')
      await page.getByRole('checkbox', { name: /Active/ }).uncheck()
      await page.getByRole('button', { name: 'Save changes' }).click()
      await page.getByText('The subscription was saved.').waitFor()
      await page.locator('.webhook', { hasText: 'Browser-made hook' }).scrollIntoViewIfNeeded()
      await shot(page, 'webhooks-list')
      t.match(await page.locator('.webhook', { hasText: 'Browser-made hook' }).innerText(), 'Disabled')
      await page.getByRole('link', { name: 'Delete Browser-made hook' }).click()
      await shot(page, 'webhooks-delete')
      await page.getByRole('button', { name: 'Delete subscription' }).click()
      await page.getByText('The subscription was deleted').waitFor()
      t.equal(await page.getByText('Browser-made hook').count(), 0)
    }
  )

  await t.test('no page broke its Content-Security-Policy', async (t) => {
    t.same(cspViolations, [])
  })
}
