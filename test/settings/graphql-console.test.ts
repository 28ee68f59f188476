import { mkdirSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import type { Browser, Page } from 'playwright-core'
import { projectRoot } from '../../core/paths.ts'
import { chromiumMissing, launchChromium } from '../helpers/browser.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * The GraphQL console (/settings/graphql) as a person uses it, in Debian's headless
 * Chromium: sign in, open it, run the example query it opens with, read the tenant's
 * records in the result. UPDATE_SCREENSHOTS=1 writes docs/images/graphql-console.png.
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
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) cspViolations.push(m.text())
  })
  page.on('pageerror', (err) => scriptErrors.push(err.message))
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
      await page.getByLabel('Organisation').fill('acme')
      await page.getByLabel('User name').fill('sam')
      await page.getByLabel('Password').fill(password)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.waitForURL('**/settings/graphql')
      await page.getByRole('heading', { name: 'GraphQL console' }).waitFor()
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

  await t.test('no script failed and the page kept its Content-Security-Policy', async (t) => {
    t.same(scriptErrors, [])
    t.same(cspViolations, [])
  })
}
