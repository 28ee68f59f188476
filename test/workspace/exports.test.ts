// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import type { Browser } from 'playwright-core'
import t from '../helpers/tap.ts'
import { chromiumMissing, launchChromium } from '../helpers/browser.ts'
import { parseCsv } from '../helpers/csv.ts'
import { eventually } from '../helpers/identity.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { sendPage, signInBrowser, type Page } from '../helpers/pages.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { exportGate } from '../helpers/side-channel.ts'

/**
 * Export of a list view from the records workspace: the list page's form, the job through the exports service with
 * the signed-in person's rights, its progress page (with and without JavaScript) and the file it gives.
 */
const server = await startTestServer({
  jobs: { enabled: true, processEverySeconds: 1 },
  limits: { signInAttemptsPerMinute: 100 }
})
const gate = exportGate(server.platform.storage)
t.teardown(async () => {
  gate.releaseAll()
  await server.close()
  // Agenda leaves a referenced timer behind job runs (see test/idempotency/purge-job.test.ts).
  setTimeout(() => process.exit(), 200).unref()
})

const password = 'correct horse battery staple'
for (const [userName, roles] of [
  ['sam', ['safety-manager']],
  ['max', ['safety-manager']],
  ['rita', ['reporter']]
] as const)
  await server.platform.users.create('acme', { userName, password, roles: [...roles] })

// 30 incidents: every third is high severity.
await bulkCall(
  server.url,
  '/api/modules/incident/bulk',
  server.keys.acme,
  ndjson(
    Array.from({ length: 30 }, (_, i) => ({
      payload: incidentPayload({ title: `Incident ${i + 1}`, severity: i % 3 === 0 ? 'high' : 'low' })
    }))
  )
)
const view = '/records/incident?payload[severity]=high&sort=number'

const signIn = async (userName: string) => (await signInBrowser(server, userName, password)).cookie
const cookies = { sam: await signIn('sam'), max: await signIn('max'), rita: await signIn('rita') }
const get = (who: keyof typeof cookies, path: string) => sendPage(server, 'GET', path, { cookie: cookies[who] })

/** The list page's export form, as a browser would send it: its hidden fields and a format. */
function exportFormOf(page: Page): Record<string, string> | undefined {
  const form = /<form class="export"[^>]*action="([^"]+)"[\s\S]*?<\/form>/.exec(page.html)
  if (!form) return undefined
  const fields: Record<string, string> = { action: form[1] }
  for (const m of form[0].matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    fields[m[1]] = m[2]
      .replace(/&amp;/g, '&')
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
  return fields
}

async function postExport(who: keyof typeof cookies, fields: Record<string, string>, format: string) {
  const { action, ...form } = fields
  return sendPage(server, 'POST', action, { cookie: cookies[who], form: { ...form, format } })
}

const exportsOfAcme = async () =>
  (await server.platform.db.system.query(`SELECT count(*)::int AS n FROM export_jobs WHERE tenant_id = 'acme'`)).rows[0]
    .n as number

/** The progress page once it says the job is done (read until then, as a browser without JavaScript does). */
async function whenDone(who: keyof typeof cookies, location: string): Promise<Page> {
  let page = await get(who, location)
  await eventually(async () => {
    page = await get(who, location)
    return /id="export-state" role="status">(Done|Failed)</.test(page.html)
  }, 30_000)
  return page
}

const highNumbers = async () => {
  const list = await server.request('GET', '/api/v1/records?moduleKey=incident&payload[severity]=high&sort=number')
  return (list.body.items as Array<{ number: string }>).map((r) => r.number)
}

t.test('exporting a filtered view as CSV makes a job whose file holds exactly the view’s records', async (t) => {
  const list = await get('sam', view)
  t.equal(list.status, 200)
  const form = exportFormOf(list)
  t.ok(form, 'the list page offers the export form to a safety manager')
  t.equal(form!.action, '/records/incident/export')
  t.ok(form!.csrf, 'the form carries the CSRF token')
  t.match(list.html, /<label for="export-format">Export format<\/label><select id="export-format" name="format"/)
  t.match(list.html, '<button type="submit" class="secondary">Export this view</button>')
  const started = await postExport('sam', form!, 'csv')
  t.equal(started.status, 303)
  t.match(started.location, /^\/exports\/[0-9a-f-]{36}$/)

  const page = await whenDone('sam', started.location!)
  t.equal(page.status, 200)
  t.match(page.html, '<h1>Export of Incident records (CSV)</h1>')
  t.match(
    page.html,
    /<progress id="export-progress" aria-labelledby="export-state" max="10" value="10">10 rows<\/progress>/
  )
  t.match(page.html, /id="export-rows">10 rows</)
  t.match(page.html, `<a href="${started.location}/download" id="export-link">Download incident-export-`)
  t.notMatch(page.html, 'http-equiv="refresh"', 'a finished job no longer reloads the page')
  const back = /<a href="([^"]+)">Back to the view<\/a>/.exec(page.html)![1].replace(/&amp;/g, '&')
  const backQuery = new URL(back, server.url).searchParams
  t.same(
    [...backQuery].sort(),
    [
      ['payload[severity]', 'high'],
      ['sort', 'number']
    ],
    'the way back to the view, from the filters the job keeps'
  )

  const download = await get('sam', `${started.location}/download`)
  t.equal(download.status, 303, 'the download link sends the browser to a fresh signed URL')
  const file = await fetch(new URL(download.location!, server.url))
  t.equal(file.status, 200)
  const table = parseCsv(await file.text())
  const numbers = table.slice(1).map((row) => row[table[0].indexOf('Number')])
  t.same(numbers, await highNumbers(), 'the view’s records, in the view’s order, and no others')
  t.equal(numbers.length, 10)
})

t.test('a double submit of the same form makes one job and lands on its page both times', async (t) => {
  const form = exportFormOf(await get('sam', view))!
  const before = await exportsOfAcme()
  const [first, second] = await Promise.all([postExport('sam', form, 'xlsx'), postExport('sam', form, 'xlsx')])
  const third = await postExport('sam', form, 'xlsx')
  // Two sends at once (a double click without JavaScript): the second waits for the first's job, never a refusal.
  t.same([first.status, second.status, third.status], [303, 303, 303], 'every send lands on the job')
  const locations = new Set([first, second, third].map((p) => p.location))
  t.equal(locations.size, 1, 'every answer names the same job')
  t.equal(await exportsOfAcme(), before + 1, 'one job')
  const another = await postExport('sam', form, 'csv')
  t.equal(another.status, 303, 'the same form with another format is another export')
  t.not(another.location, [...locations][0])
  t.equal(await exportsOfAcme(), before + 2)
})

t.test('a person whose roles may not export sees no export form, and a forged POST is refused 403', async (t) => {
  const list = await get('rita', '/records/incident')
  t.equal(list.status, 200, 'a reporter may read the list')
  t.equal(exportFormOf(list), undefined, 'without the export right the form is not there')
  t.notMatch(list.html, 'Export this view')
  const csrf = /name="csrf" value="([^"]+)"/.exec(list.html)![1]
  const before = await exportsOfAcme()
  const forged = await postExport(
    'rita',
    { action: '/records/incident/export', csrf, submitKey: 'forged-1', view: '' },
    'csv'
  )
  t.equal(forged.status, 403)
  t.match(forged.headers.get('content-type'), /^text\/html/)
  t.match(forged.html, '<h1>Not allowed</h1>')
  t.equal(await exportsOfAcme(), before, 'no job was made')
  const noToken = await postExport('sam', { action: '/records/incident/export', csrf: 'wrong', view: '' }, 'csv')
  t.equal(noToken.status, 403, 'a form without the session’s CSRF token is refused too')
  t.equal(await exportsOfAcme(), before)
})

t.test('another person’s export is a 404 page, and so is an export that does not exist', async (t) => {
  const started = await postExport('sam', exportFormOf(await get('sam', view))!, 'csv')
  const id = started.location!.split('/').pop()!
  const other = await get('max', `/exports/${id}`)
  t.equal(other.status, 404)
  t.match(other.headers.get('content-type'), /^text\/html/)
  t.match(other.html, '<h1>Not found</h1>')
  t.notMatch(other.html, 'export-progress', 'nothing of the job is shown')
  t.equal((await get('max', `/exports/${id}/download`)).status, 404, 'nor its file')
  t.equal((await get('sam', `/exports/${id}`)).status, 200, 'its requester sees it')
  t.equal((await get('sam', '/exports/00000000-0000-4000-8000-000000000000')).status, 404)
  const anonymous = await sendPage(server, 'GET', `/exports/${id}`)
  t.equal(anonymous.status, 303, 'nobody signed in is sent to sign in')
  t.equal(anonymous.location, `/sign-in?next=/exports/${id}`)
})

t.test(
  'a PDF of more rows than the exports’ cap is refused in words, with the form to choose another format',
  async (t) => {
    const o = server.platform.config.exports
    const cap = o.pdfMaxRows
    o.pdfMaxRows = 3
    t.teardown(() => void (o.pdfMaxRows = cap))
    const before = await exportsOfAcme()
    const refused = await postExport('sam', exportFormOf(await get('sam', view))!, 'pdf')
    t.equal(refused.status, 422)
    t.match(refused.html, '<h1>The export was not started</h1>')
    t.match(
      refused.html,
      /<div class="alert error" role="alert">A PDF export holds at most 3 rows and these filters select 10\. Narrow the filters/
    )
    t.match(refused.html, '<option value="csv" selected>CSV</option>', 'the form again, on CSV')
    t.match(refused.html, 'href="/records/incident?payload%5Bseverity%5D=high&amp;sort=number">Back to the view</a>')
    t.equal(await exportsOfAcme(), before, 'nothing was queued')
  }
)

t.test('the progress page shows a running job’s rows and reloads itself without JavaScript', async (t) => {
  gate.hold('acme')
  t.teardown(() => gate.release('acme'))
  const started = await postExport('sam', exportFormOf(await get('sam', view))!, 'csv')
  await gate.arrived('acme')
  const page = await get('sam', started.location!)
  t.match(page.html, '<p class="state" id="export-state" role="status">Exporting…</p>')
  t.match(
    page.html,
    /<progress id="export-progress" aria-labelledby="export-state" max="10" value="10">10 of 10 rows<\/progress>/
  )
  t.match(page.html, /<noscript><meta http-equiv="refresh" content="2">/)
  t.match(page.html, /<p id="export-file" hidden>/, 'no link before the file is there')
  const csp = page.headers.get('content-security-policy') ?? ''
  t.match(csp, "connect-src 'self'", 'export.js may read the job from the API')
  t.match(csp, "script-src 'nonce-")
  t.match(page.html, /<script defer src="\/records\/assets\/export\.js\?v=[\w-]+" nonce="/)
  const notYet = await get('sam', `${started.location}/download`)
  t.equal(notYet.status, 409)
  t.match(notYet.html, 'This export is not done yet.')
  gate.release('acme')
  const done = await whenDone('sam', started.location!)
  t.match(done.html, 'id="export-state" role="status">Done<')
})

const skip = chromiumMissing((m) => t.fail(m))
if (skip) t.test('the progress page in Chromium', { skip }, () => {})
else
  t.test('in Chromium, the progress page follows the job to "done" and offers the file', async (t) => {
    let browser: Browser | undefined
    t.teardown(() => browser?.close())
    browser = await launchChromium()
    for (const javaScriptEnabled of [true, false]) {
      const context = await browser.newContext({ baseURL: server.url, javaScriptEnabled })
      // Set SCREENSHOT_DIR to keep a picture of each step (with JavaScript; at the phone width too).
      const shot = async (p: typeof page, name: string) => {
        if (!process.env.SCREENSHOT_DIR || !javaScriptEnabled) return
        await p.screenshot({ path: `${process.env.SCREENSHOT_DIR}/${name}.png`, fullPage: true })
        await p.setViewportSize({ width: 390, height: 844 })
        await p.screenshot({ path: `${process.env.SCREENSHOT_DIR}/${name}-phone.png`, fullPage: true })
        await p.setViewportSize({ width: 1280, height: 720 })
      }
      context.setDefaultTimeout(20_000)
      const page = await context.newPage()
      const csp: string[] = []
      page.on('console', (m) => {
        if (/Content.Security.Policy/i.test(m.text())) csp.push(m.text())
      })
      await page.goto('/sign-in?next=' + encodeURIComponent(view))
      await page.getByLabel('Organisation').fill('acme')
      await page.getByLabel('User name').fill('sam')
      await page.getByLabel('Password').fill(password)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('heading', { name: 'Incident' }).waitFor()
      await shot(page, 'export-list')
      gate.hold('acme')
      await page.getByLabel('Export format').selectOption('csv')
      await page.getByRole('button', { name: 'Export this view' }).click()
      await page.waitForURL(/\/exports\/[0-9a-f-]{36}$/)
      const state = page.locator('#export-state')
      if (javaScriptEnabled) await page.evaluate(() => ((window as unknown as { kept: boolean }).kept = true))
      await gate.arrived('acme')
      await state.filter({ hasText: 'Exporting…' }).waitFor()
      // The page may show a poll (or a render) from before the rows were counted: it catches up on its next one.
      const rowsLine = page.locator('#export-rows')
      await rowsLine
        .filter({ hasText: /^10 of 10 rows$/ })
        .waitFor()
        .catch(() => undefined)
      t.equal(
        await rowsLine.innerText(),
        '10 of 10 rows',
        `${javaScriptEnabled ? 'with' : 'without'} JavaScript: the rows`
      )
      t.notOk(await page.getByRole('link', { name: /^Download/ }).isVisible(), 'no link while it runs')
      await shot(page, 'export-running')
      gate.release('acme')
      await state.filter({ hasText: 'Done' }).waitFor()
      const link = page.getByRole('link', { name: /^Download incident-export-\d{4}-\d{2}-\d{2}\.csv$/ })
      t.ok(await link.isVisible(), 'the download link, once done')
      await shot(page, 'export-done')
      t.equal(await page.locator('#export-progress').evaluate((p) => (p as HTMLProgressElement).position), 1)
      if (javaScriptEnabled) {
        t.equal(
          await page.evaluate(() => (window as unknown as { kept?: boolean }).kept),
          true,
          'export.js updated the page in place (no reload)'
        )
        const [download] = await Promise.all([page.waitForEvent('download'), link.click()])
        const rows = parseCsv(
          await (await download.createReadStream()).toArray().then((c) => Buffer.concat(c).toString())
        )
        t.equal(rows.length - 1, 10, 'the file downloads with the view’s ten records')
      }
      t.same(csp, [], 'nothing was blocked by the page’s policy')
      await context.close()
    }
  })
