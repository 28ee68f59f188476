import t from '../helpers/tap.ts'
import type { Browser, Page } from 'playwright-core'
import { chromiumMissing, launchChromium } from '../helpers/browser.ts'
import { startTestServer } from '../helpers/server.ts'

/**
 * The settings pages as a person uses them, in Debian's headless Chromium: sign in,
 * create a token, copy it, use it, revoke it. Set SCREENSHOT_DIR to keep a picture of
 * each page.
 */
const skip = chromiumMissing((m) => t.fail(m))
if (skip) t.plan(0, skip)
else await browserTests()

async function browserTests() {
  const server = await startTestServer()
  const password = 'correct horse battery staple'
  await server.platform.users.create('acme', { userName: 'sam', password, roles: ['safety-manager'] })
  let browser: Browser | undefined
  t.teardown(async () => {
    await browser?.close()
    await server.close()
  })
  browser = await launchChromium()
  // http://127.0.0.1 directly: Chromium keeps Secure cookies from loopback origins (checked below).
  const context = await browser.newContext({ baseURL: server.url })
  context.setDefaultTimeout(5_000)
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url })
  const page = await context.newPage()
  const cspViolations: string[] = []
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) cspViolations.push(m.text())
  })
  const shot = async (p: Page, name: string) => {
    if (process.env.SCREENSHOT_DIR)
      await p.screenshot({ path: `${process.env.SCREENSHOT_DIR}/${name}.png`, fullPage: true })
  }
  const bearer = (token: string, path: string) =>
    fetch(server.url + path, { headers: { authorization: `Bearer ${token}` } })
  let token = ''

  await t.test('a visitor without a session is sent to sign in, and signing in brings them back', async (t) => {
    await page.goto('/settings/api-keys')
    t.equal(new URL(page.url()).pathname + new URL(page.url()).search, '/sign-in?next=/settings/api-keys')
    await shot(page, 'sign-in')
    await page.getByLabel('Organisation').fill('acme')
    await page.getByLabel('User name').fill('sam')
    await page.getByLabel('Password').fill('a wrong password')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('alert').waitFor()
    t.equal(await page.getByRole('alert').innerText(), 'The organisation, user name or password is not right.')
    await page.getByLabel('Password').fill(password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL('**/settings/api-keys')
    await page.getByRole('heading', { name: 'API keys and tokens' }).waitFor()
    const cookie = (await context.cookies()).find((c) => c.name === 'records_session')
    t.ok(cookie, 'the browser kept the session cookie over plain http://127.0.0.1')
    t.match(cookie, { httpOnly: true, secure: true, sameSite: 'Lax', path: '/' })
    t.equal(await page.evaluate(() => document.cookie), '', 'scripts cannot read it (HttpOnly)')
  })

  await t.test('creating a personal token with a scope shows it once, and Copy puts it on the clipboard', async (t) => {
    await page.getByLabel('Name').fill('browser token')
    await page.locator('input[name="scopes"][value="records:read"]').check()
    await page.getByLabel('In 7 days').check()
    await shot(page, 'list-empty')
    await page.getByRole('button', { name: 'Create token' }).click()
    await page.getByRole('heading', { name: 'Token created' }).waitFor()
    token = await page.locator('#token').inputValue()
    t.match(token, /^svc_p_[A-Za-z0-9]{40}$/, 'a personal access token')
    t.ok(await page.locator('#token').evaluate((el) => (el as HTMLInputElement).readOnly), 'in a read-only field')
    t.match(await page.getByRole('alert').innerText(), 'will not be shown again')
    await page.getByRole('button', { name: 'Copy' }).click()
    await page.getByText('Copied to the clipboard.').waitFor()
    t.equal(await page.evaluate(() => navigator.clipboard.readText()), token, 'the clipboard holds the token')
    await shot(page, 'created')
  })

  await t.test('the token works against the API with Node’s fetch', async (t) => {
    const me = await bearer(token, '/api/v1/me')
    t.equal(me.status, 200)
    t.match(await me.json(), { tenantId: 'acme', credential: { type: 'personal' }, scopes: ['records:read'] })
    t.equal((await bearer(token, '/api/v1/records?moduleKey=incident')).status, 200, 'records:read lists incidents')
  })

  await t.test(
    'the list shows only the token’s prefix, also after a reload, and Back does not show the token again',
    async (t) => {
      await page.getByRole('link', { name: 'Back to API keys and tokens' }).click()
      await page.getByRole('heading', { name: 'API keys and tokens' }).waitFor()
      const prefix = token.slice(0, 12)
      for (const when of ['after creation', 'after a reload']) {
        const htmlNow = await page.content()
        t.notMatch(htmlNow, token, `${when}: the full token is nowhere in the page`)
        t.match(htmlNow, `${prefix}…`, `${when}: its prefix is`)
        if (when === 'after creation') await page.reload()
      }
      await shot(page, 'list')
      await page.goBack()
      t.notMatch(
        await page.content(),
        token,
        'going back in history does not bring the creation page back with the token'
      )
      await page.goto('/settings/api-keys')
    }
  )

  await t.test(
    'a scope is narrowed to one module with the keyboard, and the token reads that module only',
    async (t) => {
      await page.getByLabel('Name').fill('incidents only')
      await page.locator('input[name="scopes"][value="records:read"]').focus()
      await page.keyboard.press('Space')
      await page.keyboard.press('Tab')
      t.equal(
        await page.evaluate(() => document.activeElement?.getAttribute('name')),
        'module:records:read',
        'the module picker follows its scope'
      )
      await page.getByLabel('Modules for records:read').selectOption({ label: 'only Incident' })
      await shot(page, 'narrowed')
      await page.getByRole('button', { name: 'Create token' }).click()
      await page.getByRole('heading', { name: 'Token created' }).waitFor()
      const narrowed = await page.locator('#token').inputValue()
      t.equal((await bearer(narrowed, '/api/v1/records?moduleKey=incident')).status, 200, 'incidents are read')
      t.equal((await bearer(narrowed, '/api/v1/records?moduleKey=inspection')).status, 403, 'inspections are not')
      await page.goto('/settings/api-keys')
    }
  )

  await t.test('revoking with the button makes the next call with the token fail with auth.revoked', async (t) => {
    await page.getByRole('button', { name: 'Revoke browser token' }).click()
    await page.getByText('The token was revoked').waitFor()
    t.equal(
      await page.getByRole('button', { name: 'Revoke browser token' }).count(),
      0,
      'no revoke button for it any more'
    )
    const me = await bearer(token, '/api/v1/me')
    t.equal(me.status, 401)
    t.equal((await me.json()).code, 'auth.revoked')
  })

  await t.test('signing out ends the session in the browser', async (t) => {
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL('**/sign-in')
    t.equal(
      (await context.cookies()).find((c) => c.name === 'records_session'),
      undefined,
      'the cookie is gone'
    )
    await page.goto('/settings/api-keys')
    t.match(page.url(), /\/sign-in\?next=\/settings\/api-keys$/)
  })

  await t.test('no page broke its Content-Security-Policy: styles and the copy script carry the nonce', async (t) => {
    t.same(cspViolations, [])
  })
}
