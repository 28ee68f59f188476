import t from '../helpers/tap.ts'
import type { Browser, BrowserContext } from 'playwright-core'
import { chromiumMissing, launchChromium } from '../helpers/browser.ts'
import { startTestServer } from '../helpers/server.ts'

/**
 * The reference page of the real service in Debian's headless Chromium: the generic
 * document for a visitor, the tenant's module operations once authorized with an API key,
 * and straight away for a signed-in user. Set SCREENSHOT_DIR to keep pictures.
 */
const skip = chromiumMissing((m) => t.fail(m))
if (skip) t.plan(0, skip)
else await browserTests()

async function browserTests() {
  const server = await startTestServer()
  const password = 'correct horse battery staple'
  await server.platform.users.create('initech', { userName: 'pat', password, roles: ['safety-manager'] })
  let browser: Browser | undefined
  t.teardown(async () => {
    await browser?.close()
    await server.close()
  })
  browser = await launchChromium()
  const problems: string[] = []
  const open = async () => {
    const context = await browser.newContext({ baseURL: server.url })
    context.setDefaultTimeout(15_000)
    const page = await context.newPage()
    page.on('pageerror', (e) => problems.push(e.message))
    page.on('console', (m) => {
      if (/Content.Security.Policy/i.test(m.text())) problems.push(m.text())
    })
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`)
    })
    return { context, page }
  }
  const operation = (page: Awaited<ReturnType<typeof open>>['page'], path: string) =>
    page.locator(`.opblock-summary-path[data-path="${path}"]`)
  /** Authorize in the reference page's dialog with a token, and wait for the tenant's modules to appear. */
  const authorizeAs = async (page: Awaited<ReturnType<typeof open>>['page'], token: string) => {
    await page.locator('.scheme-container button.authorize').click()
    const dialog = page.locator('.modal-ux')
    await dialog.locator('input[type="text"], input[type="password"]').first().fill(token)
    await dialog.locator('button.authorize').first().click()
    await dialog.locator('button.btn-done').first().click()
    await operation(page, '/api/modules/incident/bulk').waitFor()
  }
  const shot = async (page: Awaited<ReturnType<typeof open>>['page'], name: string) => {
    if (process.env.SCREENSHOT_DIR)
      await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/${name}.png`, fullPage: true })
  }
  let visitor: BrowserContext | undefined

  await t.test(
    "a visitor sees the generic reference, and authorizing with an API key brings in the tenant's modules",
    async (t) => {
      const { context, page } = await open()
      visitor = context
      await page.goto('/api/docs')
      await operation(page, '/api/v1/records/{id}:transition').waitFor()
      t.equal(await operation(page, '/api/modules/{moduleKey}/bulk').count(), 1, 'the generic bulk operation')
      t.equal(await operation(page, '/api/modules/incident/bulk').count(), 0, 'no tenant module before authorizing')
      await shot(page, 'reference-generic')

      await authorizeAs(page, server.keys.acme)
      for (const key of ['corrective-action', 'inspection'])
        t.equal(await operation(page, `/api/modules/${key}/bulk`).count(), 1, `${key} is one of Acme's modules`)
      await page.getByText('Records Platform API: Acme Chemicals').first().waitFor()
      t.pass('the title names the tenant')
      await shot(page, 'reference-acme')
    }
  )

  await t.test("a signed-in user gets their tenant's reference without authorizing", async (t) => {
    const { context, page } = await open()
    await page.goto('/sign-in')
    await page.getByLabel('Organisation').fill('initech')
    await page.getByLabel('User name').fill('pat')
    await page.getByLabel('Password').fill(password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL((u) => u.pathname !== '/sign-in')
    await page.goto('/api/docs')
    await operation(page, '/api/modules/incident/bulk').waitFor()
    t.equal(await operation(page, '/api/modules/inspection/bulk').count(), 0, 'Initech has only incidents')
    await shot(page, 'reference-initech-session')
    await context.close()
  })

  await t.test('Try it out on the records list starts with no payload filter, and Execute sends none', async (t) => {
    const { context, page } = await open()
    await page.goto('/api/docs')
    await authorizeAs(page, server.keys.acme)
    const list = page.locator('#operations-Records-listRecords')
    await list.locator('.opblock-summary').click()
    await list.locator('button.try-out__btn').click()
    const payload = list.locator('tr[data-param-name="payload"]')
    await payload.locator('textarea').waitFor()
    // “No filter” is the value {} (an example object needs a value): shown as {} or nothing, sent as no parameter.
    t.match(await payload.locator('textarea').inputValue(), /^\s*(\{\s*\})?\s*$/, 'the payload filter is empty')
    t.match(
      await payload.innerText(),
      /Examples:[\s\S]*No filter/,
      'the example is offered as a named example to pick, “No filter” first'
    )
    const [response] = await Promise.all([
      page.waitForResponse((r) => new URL(r.url()).pathname === '/api/v1/records'),
      list.locator('button.execute').click()
    ])
    const sent = new URL(response.url())
    t.same(
      [...sent.searchParams.keys()].filter((k) => k.startsWith('payload')),
      [],
      `no payload filter sent (${sent.search})`
    )
    t.equal(response.status(), 200, 'and the list answers')
    await context.close()
  })

  await t.test('the pages ran without errors or CSP violations', async (t) => {
    await visitor?.close()
    t.same(problems, [])
  })
}
