import { mkdirSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import type { Browser, Page } from 'playwright-core'
import { projectRoot } from '../../core/paths.ts'
import { axeReport } from '../helpers/axe.ts'
import { chromiumMissing, launchChromium } from '../helpers/browser.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * The GraphQL console (/settings/graphql) as a person uses it, in Debian's headless
 * Chromium: sign in, open it, run the example query it opens with, read the tenant's
 * records in the result; and axe-core (test/helpers/axe.ts) finds no WCAG 2.0/2.1 A or AA
 * violation on it. UPDATE_SCREENSHOTS=1 writes docs/images/graphql-console.png.
 */
const skip = chromiumMissing((m) => t.fail(m))
if (skip) t.plan(0, skip)
else await consoleTests()

/** The text of a CodeMirror editor of GraphiQL's (its query editor, its result pane): all of it, not only the lines in view. */
function editorText(page: Page, selector: string): Promise<string> {
  return page
    .locator(`${selector} .CodeMirror`)
    .first()
    .evaluate((el) => (el as any).CodeMirror.getValue() as string)
}

/** Signs in on the sign-in page the console sent `page` to, and waits for the console. */
async function signIn(page: Page, userName: string, password: string) {
  await page.getByLabel('Organisation').fill('acme')
  await page.getByLabel('User name').fill(userName)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL('**/settings/graphql')
  await page.getByRole('heading', { name: 'GraphQL console' }).waitFor()
}

/** Runs the query in the editor and waits for its result in the response pane. */
async function runQuery(page: Page) {
  await page.getByRole('button', { name: 'Execute query' }).click()
  await page.waitForFunction(() =>
    (
      document
        .querySelector<HTMLElement & { CodeMirror?: { getValue(): string } }>('.graphiql-response .CodeMirror')
        ?.CodeMirror?.getValue() ?? ''
    ).includes('"data"')
  )
}

async function consoleTests() {
  const server = await startTestServer()
  let browser: Browser | undefined
  t.teardown(async () => {
    await browser?.close()
    await server.close()
  })
  const password = 'correct horse battery staple'
  await server.platform.users.create('acme', {
    userName: 'sam',
    displayName: 'Sam Okafor',
    password,
    roles: ['safety-manager']
  })
  // The accessibility check's users besides sam: an administrator and a reporter.
  await server.platform.users.create('acme', { userName: 'ada', displayName: 'Ada Admin', password, roles: ['admin'] })
  await server.platform.users.create('acme', {
    userName: 'rita',
    displayName: 'Rita Reporter',
    password,
    roles: ['reporter']
  })
  const titles = ['Forklift clipped racking', 'Solvent drum leaking in bay 3', 'Slip on wet loading dock']
  const mine: Array<{ number: string; id: string }> = []
  for (const [i, title] of titles.entries()) {
    const r = await server.request('POST', '/api/v1/records', {
      token: server.keys.acme,
      body: {
        moduleKey: 'incident',
        payload: incidentPayload({
          title,
          severity: ['medium', 'high', 'low'][i],
          site: ['Leeds DC', 'Hull works', 'Leeds DC'][i]
        })
      }
    })
    if (r.status !== 201) throw new Error(`setup: create answered ${r.status} ${r.text}`)
    mine.push(r.body)
  }
  const theirs = 'Globex only: trailer rolled away'
  if (
    (
      await server.request('POST', '/api/v1/records', {
        token: server.keys.globex,
        body: { moduleKey: 'incident', payload: incidentPayload({ title: theirs }) }
      })
    ).status !== 201
  )
    throw new Error('setup: globex create failed')

  browser = await launchChromium()
  const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 } })
  context.setDefaultTimeout(10_000)
  const page = await context.newPage()
  const cspViolations: string[] = []
  const scriptErrors: string[] = []
  const watch = (p: Page) => {
    p.on('console', (m) => {
      if (/Content.Security.Policy/i.test(m.text())) cspViolations.push(m.text())
    })
    p.on('pageerror', (err) => scriptErrors.push(err.message))
  }
  watch(page)
  const assetUrls: string[] = []
  page.on('response', (r) => {
    if (new URL(r.url()).pathname.startsWith('/settings/graphql/assets/')) assetUrls.push(r.url())
  })

  await t.test(
    'without a session the console sends the visitor to sign in, and back to the console after it',
    async (t) => {
      const bare = await fetch(`${server.url}/settings/graphql`, { redirect: 'manual' })
      t.equal(bare.status, 303)
      t.equal(bare.headers.get('location'), '/sign-in?next=/settings/graphql')
      t.equal(bare.headers.get('cache-control'), 'no-store')
      await page.goto('/settings/graphql')
      t.equal(new URL(page.url()).pathname + new URL(page.url()).search, '/sign-in?next=/settings/graphql')
      await signIn(page, 'sam', password)
    }
  )

  await t.test('the settings menu links the console, marked as the current page, and the token page', async (t) => {
    const menu = page.getByRole('navigation', { name: 'Main' })
    t.equal(await menu.getByRole('link', { name: 'GraphQL' }).getAttribute('aria-current'), 'page')
    t.equal(await menu.getByRole('link', { name: 'API keys and tokens' }).getAttribute('href'), '/settings/api-keys')
  })

  await t.test("the console opens with an example query of the tenant's first module", async (t) => {
    await page.locator('.graphiql-query-editor .CodeMirror').waitFor()
    const query = await editorText(page, '.graphiql-query-editor')
    t.match(
      query,
      /query Incidents \{\s+incidents\(first: 10\) \{\s+edges \{\s+node \{\s+id\s+number\s+state\s+payload \{\s+title\s+site\s+category\s+severity\s+\}/,
      'incidents, with number, state and the summary columns'
    )
  })

  let result: any
  await t.test("running it shows the tenant's records by number, sent with the session's CSRF token", async (t) => {
    const sent = page.waitForRequest(
      (r) =>
        new URL(r.url()).pathname === '/api/graphql' &&
        r.method() === 'POST' &&
        (r.postData() ?? '').includes('incidents(first: 10)')
    )
    await page.getByRole('button', { name: 'Execute query' }).click()
    const request = await sent
    const headers = await request.allHeaders()
    t.ok(headers['x-csrf-token'], 'the X-CSRF-Token header is sent')
    t.equal(headers.accept, 'application/graphql-response+json, application/json')
    t.match(headers.cookie ?? '', /records_session=/, 'with the session cookie, no bearer token')
    t.notOk(headers.authorization)
    const response = await request.response()
    t.equal(response?.status(), 200)
    await page.waitForFunction(
      (n) =>
        (
          document
            .querySelector<HTMLElement & { CodeMirror?: { getValue(): string } }>('.graphiql-response .CodeMirror')
            ?.CodeMirror?.getValue() ?? ''
        ).includes(n),
      mine[2].number
    )
    await page.locator('.graphiql-response').getByText(mine[0].number).waitFor()
    result = JSON.parse(await editorText(page, '.graphiql-response'))
    const nodes = result.data.incidents.edges.map((e: any) => e.node)
    t.same(
      nodes.map((n: any) => n.number),
      mine.map((r) => r.number),
      "the numbers of acme's three incidents, oldest first"
    )
    t.same(
      nodes.map((n: any) => n.payload.title),
      titles
    )
    t.same(
      nodes.map((n: any) => n.state),
      ['reported', 'reported', 'reported']
    )
    t.notMatch(JSON.stringify(result), theirs, "nothing of globex's")
    if (process.env.UPDATE_SCREENSHOTS) {
      const dir = join(projectRoot, 'docs', 'images')
      mkdirSync(dir, { recursive: true })
      await page.screenshot({ path: join(dir, 'graphql-console.png') })
    }
  })

  await t.test(
    "each editor's text area is named after its editor, and its scrolling pane is a named region the keyboard reaches",
    async (t) => {
      // After the run above: the query editor, the (closed) variables and headers editors, the result.
      const editors = await page.evaluate(() =>
        [...document.querySelectorAll('#graphiql .CodeMirror')].map((cm) => {
          const pane = cm.querySelector(':scope > .CodeMirror-scroll')
          return {
            input: cm.querySelector('textarea')?.getAttribute('aria-label'),
            pane: [pane?.getAttribute('tabindex'), pane?.getAttribute('role'), pane?.getAttribute('aria-label')]
          }
        })
      )
      t.same(
        editors.map((e) => e.input),
        ['Query editor', 'Variables', 'Headers', 'Response']
      )
      t.same(
        editors.map((e) => e.pane),
        ['Query editor', 'Variables', 'Headers', 'Response'].map((name) => ['0', 'region', `${name} (scrollable)`]),
        'in the tab order, as regions named after their editors'
      )
      t.equal(await page.getByRole('textbox', { name: 'Query editor' }).count(), 1, 'the name the browser computes')
      const response = page.getByRole('region', { name: 'Response (scrollable)' })
      await response.focus()
      await page.keyboard.press('PageDown')
      await page.waitForFunction(() => (document.activeElement?.scrollTop ?? 0) > 0)
      t.pass('the result, longer than its pane, scrolls with the keyboard')
      await response.evaluate((el) => el.scrollTo(0, 0))
    }
  )

  await t.test('Tab indents in the query editor, and Escape then Tab leaves it', async (t) => {
    const focus = () =>
      page.evaluate(() => {
        const e = document.activeElement
        return e?.closest('.graphiql-query-editor .CodeMirror') ? (e.tagName === 'TEXTAREA' ? 'typing' : 'pane') : 'out'
      })
    await page.getByRole('textbox', { name: 'Query editor' }).focus()
    await page.keyboard.press('Tab')
    t.equal(await focus(), 'typing', 'Tab stays where one types (it indents)')
    await page.keyboard.press('Control+z')
    await page.keyboard.press('Escape')
    await page.keyboard.press('Tab')
    t.equal(await focus(), 'pane', 'after Escape, Tab moves on: to the scrolling pane of the editor')
    await page.keyboard.press('Tab')
    t.equal(await focus(), 'out', 'and on out of it')
    await page.getByRole('textbox', { name: 'Query editor' }).focus()
    await page.keyboard.press('Escape')
    await page.keyboard.press('Shift+Tab')
    t.equal(await focus(), 'out', 'Shift+Tab goes back')
    t.match(await page.locator('.intro').innerText(), /press Esc, then Tab, to move on/, 'the page says how')
  })

  await t.test("the Docs panel shows the caller's schema, and a dialog's style keeps to the page's CSP", async (t) => {
    await page.getByRole('button', { name: 'Show Documentation Explorer' }).click()
    const docs = page.getByRole('region', { name: 'Documentation Explorer' })
    await docs.getByText('Query', { exact: true }).first().click()
    for (const field of ['incidents', 'correctiveActions', 'inspections', 'me'])
      await docs.getByText(field, { exact: true }).first().waitFor()
    t.pass('the root fields of the modules acme installed, from the introspection the fetcher sent')
    await page.getByRole('button', { name: 'Open settings dialog' }).click()
    await page.getByRole('dialog').waitFor()
    // react-remove-scroll's <style>, which carries the nonce the console script handed it (else the CSP drops it).
    const styled = await page.evaluate(
      () =>
        [...document.querySelectorAll('style')].filter(
          (el) => el.nonce && /overflow: hidden/.test(el.textContent ?? '')
        ).length
    )
    t.ok(styled, 'the dialog locked the page scroll with a style that carries the nonce')
    await page.keyboard.press('Escape')
    await page.getByRole('dialog').waitFor({ state: 'detached' })
  })

  await t.test(
    'a POST to /api/graphql with the session cookie but without the CSRF token is refused with a 403 problem',
    async (t) => {
      const cookie = (await context.cookies()).find((c) => c.name === 'records_session')!
      const csrf = await page.locator('#graphiql').getAttribute('data-csrf')
      const body = { query: '{ incidents(first: 10) { nodes { number } } }' }
      const headers = {
        cookie: `records_session=${cookie.value}`,
        accept: 'application/graphql-response+json, application/json'
      }
      const refused = await server.request('POST', '/api/graphql', { token: null, headers, body })
      t.equal(refused.status, 403)
      t.match(refused.headers.get('content-type'), /^application\/problem\+json/)
      t.match(refused.body, { status: 403, code: 'auth.csrf' })
      const wrong = await server.request('POST', '/api/graphql', {
        token: null,
        headers: { ...headers, 'x-csrf-token': `${csrf}x` },
        body
      })
      t.match(wrong.body, { status: 403, code: 'auth.csrf' }, 'a wrong token is refused alike')
      const allowed = await server.request('POST', '/api/graphql', {
        token: null,
        headers: { ...headers, 'x-csrf-token': csrf! },
        body
      })
      t.equal(allowed.status, 200, 'with the token of the session it runs')
      t.same(
        allowed.body.data.incidents.nodes.map((n: any) => n.number),
        mine.map((r) => r.number)
      )
    }
  )

  await t.test('a page of another site that posts a query to /api/graphql gets it refused', async (t) => {
    // The other site: a page served from loopback (so Chromium lets it reach 127.0.0.1 at all)
    // and opened as localhost, another site than 127.0.0.1 to the browser. SameSite=Lax keeps
    // the session cookie back (had it gone, identify's CSRF check would refuse the request).
    const otherSite = createServer((_req, res) =>
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<!doctype html><title>You won</title><p>Claim your prize</p>')
    )
    await new Promise<void>((resolve) => otherSite.listen(0, '127.0.0.1', resolve))
    t.teardown(() => new Promise<void>((resolve) => otherSite.close(() => resolve())))
    const other = await context.newPage()
    await other.goto(`http://localhost:${(otherSite.address() as AddressInfo).port}/`)
    const target = `${server.url}/api/graphql`
    const answered = other.waitForResponse((r) => r.url() === target)
    await other.evaluate((url) => {
      void fetch(url, {
        method: 'POST',
        credentials: 'include',
        mode: 'no-cors',
        headers: { 'content-type': 'text/plain' },
        body: JSON.stringify({ query: '{ me { tenantId } }' })
      }).catch(() => undefined)
    }, target)
    const response = await answered
    t.equal(response.status(), 401, 'refused: no credential came with it')
    t.notOk((await response.request().allHeaders()).cookie, 'the browser sent no session cookie')
    await other.close()
  })

  await t.test(
    'the console files come from the service, versioned, cached for a year, with their content types',
    async (t) => {
      const names = assetUrls.map((u) => new URL(u).pathname.split('/').pop())
      t.same([...new Set(names)].sort(), [
        'console.css',
        'console.js',
        'graphiql.min.css',
        'graphiql.min.js',
        'react-dom.production.min.js',
        'react.production.min.js'
      ])
      for (const url of new Set(assetUrls)) {
        const res = await fetch(url)
        t.equal(res.status, 200, url)
        t.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable', `${url}: cached as immutable`)
        t.equal(
          res.headers.get('content-type'),
          url.includes('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8'
        )
        t.equal(res.headers.get('x-content-type-options'), 'nosniff')
        const again = await fetch(url, { headers: { 'if-none-match': res.headers.get('etag')! } })
        t.equal(again.status, 304, `${url}: revalidates by ETag`)
      }
      const unversioned = await fetch(`${server.url}/settings/graphql/assets/graphiql.min.js`)
      t.equal(
        unversioned.headers.get('cache-control'),
        'no-cache',
        'without the current version: revalidated, not kept'
      )
      for (const path of ['package.json', 'graphiql.min.js.map', '..%2F..%2Fpackage.json', 'react.development.js']) {
        t.equal(
          (await fetch(`${server.url}/settings/graphql/assets/${path}`)).status,
          404,
          `${path} is not on the list`
        )
      }
      const csp =
        (
          await fetch(`${server.url}/settings/graphql`, {
            headers: {
              cookie: `records_session=${(await context.cookies()).find((c) => c.name === 'records_session')!.value}`
            }
          })
        ).headers.get('content-security-policy') ?? ''
      t.match(csp, /script-src 'nonce-[^']+'(;|$)/, 'scripts only with the nonce: no CDN, nothing inline without it')
      t.match(csp, "connect-src 'self'")
      t.notMatch(csp, 'unsafe-inline')
    }
  )

  await t.test(
    'axe finds no A/AA violation on the console, at desktop and phone widths, before and after a query and with the docs open',
    async (t) => {
      const widths = [
        { name: 'desktop', viewport: { width: 1280, height: 800 } },
        { name: 'phone', viewport: { width: 390, height: 844 } }
      ]
      for (const user of ['ada', 'rita']) {
        const own = await browser.newContext({ baseURL: server.url, viewport: widths[0].viewport })
        t.teardown(() => own.close())
        own.setDefaultTimeout(10_000)
        const p = await own.newPage()
        watch(p)
        await p.goto('/settings/graphql')
        await signIn(p, user, password)
        for (const w of widths) {
          await p.setViewportSize(w.viewport)
          await p.goto('/settings/graphql')
          await p.locator('.graphiql-query-editor .CodeMirror').waitFor()
          const where = `${user}, ${w.name}`
          const found = [await axeReport(p, `${where}, as it opens`)]
          await runQuery(p)
          found.push(await axeReport(p, `${where}, with a result`))
          await p.getByRole('button', { name: 'Show Documentation Explorer' }).click()
          const docs = p.getByRole('region', { name: 'Documentation Explorer' })
          await docs.getByText('Query', { exact: true }).first().click()
          await docs.getByText('me', { exact: true }).first().waitFor()
          found.push(await axeReport(p, `${where}, with the docs open at Query`))
          t.equal(found.filter(Boolean).join('\n'), '', where)
        }
      }
    }
  )

  await t.test('no script failed and the page kept its Content-Security-Policy', async (t) => {
    t.same(scriptErrors, [])
    t.same(cspViolations, [])
  })
}
