import type { BrowserContext, Page as BrowserPage } from 'playwright-core'
import { readFile } from 'node:fs/promises'
import { PutBucketCorsCommand, S3Client } from '@aws-sdk/client-s3'
import t from '../helpers/tap.ts'
import { chromiumMissing, launchChromium } from '../helpers/browser.ts'
import { sendPage, signInBrowser } from '../helpers/pages.ts'
import { startS3 } from '../helpers/s3.ts'
import { incidentPayload, startTestServer, type TestServer } from '../helpers/server.ts'

/**
 * Attachments on the record page: uploaded by the browser script through the public API (signed URL, progress),
 * listed with thumbnails, downloaded through the workspace route that signs the URL as the person, refused to those
 * whose role may not attach files. Set SCREENSHOT_DIR to keep pictures of the phone-sized page.
 */
const maxBytes = 4 * 1024 * 1024
// Several people sign in from one address within a minute.
const server = await startTestServer({ attachments: { maxBytes }, limits: { signInAttemptsPerMinute: 50 } })
t.teardown(() => server.close())

const password = 'correct horse battery staple'
const users = server.platform.users
const ivy = await users.create('acme', { userName: 'ivy', password, roles: ['investigator'] })
await users.create('acme', { userName: 'hana', password, roles: ['health-officer'] })
await users.create('acme', { userName: 'rory', password, roles: ['reporter'] })

const incident = (
  await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload({ investigationLead: ivy.id }) }
  })
).body
const recordPath = `/records/incident/${incident.id}`

/** A signed-in browser without JavaScript: its session cookie and the CSRF token. */
const signIn = (s: TestServer, userName: string) => signInBrowser(s, userName, password)

const apiAsBrowser = (s: TestServer, who: { cookie: string }, path: string, body: unknown, csrf?: string) =>
  fetch(s.url + path, {
    method: 'POST',
    headers: {
      cookie: `records_session=${who.cookie}`,
      'content-type': 'application/json',
      ...(csrf ? { 'x-csrf-token': csrf } : {})
    },
    body: JSON.stringify(body)
  })

/** An attachment made through the API with the tenant key (the local driver's PUT completes it). */
async function attachWithKey(s: TestServer, recordId: string, fileName: string, bytes: Buffer, contentType: string) {
  const created = await s.request('POST', '/api/v1/attachments', {
    body: { recordId, fileName, contentType, size: bytes.length }
  })
  const put = await fetch(created.body.upload.url, {
    method: 'PUT',
    headers: created.body.upload.headers,
    body: new Uint8Array(bytes)
  })
  if (put.status !== 200) throw new Error(`upload answered ${put.status}`)
  const done = await s.request('POST', `/api/v1/attachments/${created.body.id}:complete`)
  return done.body as { id: string }
}

t.test('without JavaScript the record page says that uploading needs it, and keeps the control hidden', async (t) => {
  const ivyBrowser = await signIn(server, 'ivy')
  const page = await sendPage(server, 'GET', recordPath, { cookie: ivyBrowser.cookie })
  t.equal(page.status, 200)
  t.match(page.html, /<form class="upload" id="upload" hidden /)
  t.match(page.html, /<noscript><p class="hint">Attaching a file needs JavaScript/)
  t.match(page.html, `data-csrf="${ivyBrowser.csrf}"`, 'the script reads the session CSRF token from the page')
  t.match(page.html, /<input type="file" id="upload-camera" name="photo" accept="image\/\*" capture="environment"/)
  t.match(page.html, /<input type="file" id="upload-file" name="file" multiple accept="application\/pdf,image\/\*,/)
  t.match(page.html, /<script defer src="\/records\/assets\/attachments\.js\?v=[^"]+" nonce="/)
  const csp = page.headers.get('content-security-policy') ?? ''
  t.match(csp, `img-src 'self' ${server.url}`, 'thumbnails may load from where the local driver signs')
  t.match(csp, `connect-src 'self' ${server.url}`, 'the script may call the API and PUT to storage')
  t.match(csp, "default-src 'none'", 'the rest of the policy is the pages’ own')
  const script = await fetch(`${server.url}/records/assets/attachments.js`)
  t.equal(script.status, 200)
  t.match(script.headers.get('content-type'), /^text\/javascript/)
})

t.test('an upload by session cookie without X-CSRF-Token is refused by identify; with it, signed', async (t) => {
  const ivyBrowser = await signIn(server, 'ivy')
  const body = { recordId: incident.id, fileName: 'note.txt', contentType: 'text/plain', size: 5 }
  const without = await apiAsBrowser(server, ivyBrowser, '/api/v1/attachments', body)
  t.equal(without.status, 403)
  t.match(await without.json(), { code: 'auth.csrf' })
  const wrong = await apiAsBrowser(server, ivyBrowser, '/api/v1/attachments', body, 'not-the-token')
  t.equal(wrong.status, 403)
  const right = await apiAsBrowser(server, ivyBrowser, '/api/v1/attachments', body, ivyBrowser.csrf)
  t.equal(right.status, 201)
  t.match(await right.json(), { state: 'pending', upload: { method: 'PUT' } })
})

t.test(
  'a health officer sees and downloads the files but has no upload control, and the API refuses them',
  async (t) => {
    const bytes = Buffer.from('%PDF-1.4 toolbox talk record\n')
    const file = await attachWithKey(server, incident.id, 'toolbox talk.pdf', bytes, 'application/pdf')
    const hana = await signIn(server, 'hana')
    const page = await sendPage(server, 'GET', recordPath, { cookie: hana.cookie })
    t.equal(page.status, 200)
    t.match(page.html, `<a class="name" href="${recordPath}/attachments/${file.id}">toolbox talk.pdf</a>`)
    t.notMatch(page.html, 'id="upload"', 'no upload control')
    t.notMatch(page.html, '<noscript><p class="hint">Attaching', 'nor the word about JavaScript')
    t.notMatch(page.html, `<img src="${recordPath}/attachments/${file.id}"`, 'a PDF has no thumbnail')

    const download = await sendPage(server, 'GET', `${recordPath}/attachments/${file.id}`, { cookie: hana.cookie })
    t.equal(download.status, 303)
    t.match(download.headers.get('cache-control'), /^private, max-age=\d+$/)
    t.ok(download.location?.startsWith(`${server.url}/storage/acme/${incident.id}/${file.id}?`), 'to the signed URL')
    const got = await fetch(download.location!)
    t.same(Buffer.from(await got.arrayBuffer()), bytes, 'the bytes uploaded')

    const refused = await apiAsBrowser(
      server,
      hana,
      '/api/v1/attachments',
      { recordId: incident.id, fileName: 'x.txt', contentType: 'text/plain', size: 1 },
      hana.csrf
    )
    t.equal(refused.status, 403, 'the API refuses them anyway')
  }
)

t.test('the download route has the rights of the API: outside the row rule it is 404, as the API is', async (t) => {
  const file = await attachWithKey(server, incident.id, 'plan.txt', Buffer.from('plan'), 'text/plain')
  const rory = await signIn(server, 'rory')
  const page = await sendPage(server, 'GET', `${recordPath}/attachments/${file.id}`, { cookie: rory.cookie })
  t.equal(page.status, 404, 'a reporter who did not report the incident')
  t.notMatch(page.html, '/storage/')
  const api = await fetch(`${server.url}/api/v1/attachments/${file.id}`, {
    headers: { cookie: `records_session=${rory.cookie}` }
  })
  t.equal(api.status, 404)
  const other = (
    await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })
  ).body
  const ivyBrowser = await signIn(server, 'ivy')
  const elsewhere = await sendPage(server, 'GET', `/records/incident/${other.id}/attachments/${file.id}`, {
    cookie: ivyBrowser.cookie
  })
  t.equal(elsewhere.status, 404, 'an attachment under another record’s address is not found')
  const anonymous = await sendPage(server, 'GET', `${recordPath}/attachments/${file.id}`)
  t.equal(anonymous.status, 303)
  t.match(anonymous.location, /^\/sign-in\?next=/)
})

t.test('with the S3 driver the page allows the bucket’s origin and the download route redirects there', async (t) => {
  const s3 = await startS3()
  const s3Server = await startTestServer({ attachments: { driver: 's3', s3: s3.config } } as never)
  t.teardown(async () => {
    await s3Server.close()
    await s3.close()
  })
  await s3Server.platform.users.create('acme', { userName: 'ivy', password, roles: ['safety-manager'] })
  const rec = (
    await s3Server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload() }
    })
  ).body
  const file = await attachWithKey(s3Server, rec.id, 'gauge.png', Buffer.from('not really a png'), 'image/png')
  const who = await signIn(s3Server, 'ivy')
  const page = await sendPage(s3Server, 'GET', `/records/incident/${rec.id}`, { cookie: who.cookie })
  const csp = page.headers.get('content-security-policy') ?? ''
  t.match(csp, `img-src 'self' ${s3.endpoint};`)
  t.match(csp, `connect-src 'self' ${s3.endpoint}`)
  t.match(page.html, `<img src="/records/incident/${rec.id}/attachments/${file.id}" alt="gauge.png" loading="lazy"`)
  const download = await sendPage(s3Server, 'GET', `/records/incident/${rec.id}/attachments/${file.id}`, {
    cookie: who.cookie
  })
  t.equal(download.status, 303)
  t.ok(download.location?.startsWith(`${s3.endpoint}/${s3.bucket}/acme/${rec.id}/${file.id}?`))
})

const skip = chromiumMissing((m) => t.fail(m))
if (skip) t.test('in Chromium', { skip }, () => {})
else await browserTests()

async function browserTests() {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const shot = async (p: BrowserPage, name: string) => {
    if (process.env.SCREENSHOT_DIR) await p.screenshot({ path: `${process.env.SCREENSHOT_DIR}/${name}.png` })
  }

  /** A browser signed in as `userName`, phone-sized (a touch screen) or desktop-sized; CSP reports are collected. */
  async function browse(userName: string, phone: boolean, s = server, path = recordPath) {
    const context: BrowserContext = await browser.newContext({
      baseURL: s.url,
      ...(phone
        ? { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }
        : { viewport: { width: 1280, height: 800 } })
    })
    context.setDefaultTimeout(15_000)
    t.teardown(() => context.close())
    const page = await context.newPage()
    const violations: string[] = []
    page.on('console', (m) => {
      if (/Content.Security.Policy/i.test(m.text())) violations.push(m.text())
    })
    await page.goto(`/sign-in?next=${path}`)
    await page.getByLabel('Organisation').fill('acme')
    await page.getByLabel('User name').fill(userName)
    await page.getByLabel('Password').fill(password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(`**${path}`)
    return { page, violations }
  }

  await t.test(
    'an investigator takes a photo on a phone-sized page: progress, then the photo listed with its preview, downloaded',
    async (t) => {
      const { page, violations } = await browse('ivy', true)
      const camera = page.getByLabel('Take a photo')
      await camera.waitFor({ state: 'visible' })
      t.ok(await page.getByLabel('Attach files').isVisible(), 'choosing files is offered too')
      // A real JPEG, made by the browser, large enough for the upload to report progress.
      const photo = Buffer.from(
        await page.evaluate<string>(`(async () => {
          const c = document.createElement('canvas'); c.width = 1200; c.height = 900
          const g = c.getContext('2d'), img = g.createImageData(c.width, c.height)
          for (let i = 0; i < img.data.length; i++) img.data[i] = (i * 2654435761) >>> 24
          g.putImageData(img, 0, 0)
          const blob = await new Promise((ok) => c.toBlob(ok, 'image/jpeg', 0.95))
          const bytes = new Uint8Array(await blob.arrayBuffer())
          let s = ''; for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000))
          return btoa(s)
        })()`),
        'base64'
      )
      t.ok(photo.length > 100_000 && photo.length < maxBytes, `a photo of ${photo.length} bytes`)

      const asked = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith('/api/v1/attachments'))
      // The completion waits until the test has seen the progress finish (the page reloads right after it).
      let release!: () => void
      const held = new Promise<void>((resolve) => (release = resolve))
      await page.route('**/api/v1/attachments/*:complete', async (route) => {
        await held
        await route.continue()
      })
      await camera.setInputFiles({ name: 'spill-bay-7.jpg', mimeType: 'image/jpeg', buffer: photo })
      const request = await asked
      const csrf = await page.locator('#upload').getAttribute('data-csrf')
      t.equal(request.headers()['x-csrf-token'], csrf, 'the script sends the session CSRF token')
      t.match(JSON.parse(request.postData() ?? '{}'), {
        recordId: incident.id,
        fileName: 'spill-bay-7.jpg',
        contentType: 'image/jpeg',
        size: photo.length,
        sha256: /^[0-9a-f]{64}$/
      })
      await page.waitForFunction(
        () => (document.getElementById('upload-progress') as HTMLProgressElement | null)?.value === 100
      )
      t.match(await page.locator('#upload-status').innerText(), /“spill-bay-7\.jpg”: 100% of [\d.]+ [KM]B sent\./)
      t.ok(await page.getByLabel('Upload progress').isVisible(), 'a labelled progress bar')
      await page.locator('#upload').scrollIntoViewIfNeeded()
      await shot(page, 'attachments-phone-progress')
      release()

      await page.waitForURL(`**${recordPath}?done=uploaded`)
      await page.getByText('The file was attached.').waitFor()
      const link = page.getByRole('link', { name: 'spill-bay-7.jpg' })
      const thumb = page.getByRole('img', { name: 'spill-bay-7.jpg' })
      await thumb.scrollIntoViewIfNeeded()
      await page.waitForFunction(() => {
        const img = document.querySelector<HTMLImageElement>('ul.files img[alt="spill-bay-7.jpg"]')
        return !!img && img.complete && img.naturalWidth > 0
      })
      t.same(
        await thumb.evaluate((i: HTMLImageElement) => [i.naturalWidth, i.naturalHeight, i.loading]),
        [1200, 900, 'lazy'],
        'the preview shows the photo'
      )
      t.equal(
        await page.evaluate(() => document.scrollingElement?.scrollWidth),
        390,
        'nothing wider than the phone’s screen'
      )
      await shot(page, 'attachments-phone-listed')

      const [download] = await Promise.all([page.waitForEvent('download'), link.click()])
      t.equal(download.suggestedFilename(), 'spill-bay-7.jpg')
      t.same(await readFile(await download.path()), photo, 'the bytes downloaded are the photo’s')
      t.same(violations, [], 'no Content-Security-Policy violations')
    }
  )

  await t.test('a refused type and a file over the size limit are explained beside the control', async (t) => {
    const { page } = await browse('ivy', false)
    t.notOk(await page.getByLabel('Take a photo').isVisible(), 'no camera button where the pointer is a mouse')
    const chooser = page.getByLabel('Attach files')
    const problem = page.locator('#upload-problem')
    await chooser.setInputFiles({ name: 'setup.exe', mimeType: 'application/x-msdownload', buffer: Buffer.from('MZ') })
    await problem.filter({ hasText: 'setup.exe' }).waitFor()
    t.match(
      await problem.innerText(),
      /“setup\.exe” cannot be attached: files of its type \(application\/x-msdownload\)/
    )
    t.equal(await problem.getAttribute('role'), 'alert')
    t.match(await chooser.getAttribute('aria-describedby'), 'upload-problem')
    t.notOk(await chooser.isDisabled(), 'the control is usable again')

    const big = Buffer.alloc(maxBytes + 1024 * 1024, 1)
    await chooser.setInputFiles({ name: 'scan.pdf', mimeType: 'application/pdf', buffer: big })
    await problem.filter({ hasText: 'scan.pdf' }).waitFor()
    t.match(await problem.innerText(), '“scan.pdf” is 5 MB, more than the 4 MB a file may have.')
    await shot(page, 'attachments-refused')
  })

  await t.test('a health officer’s record page has no upload control', async (t) => {
    const { page } = await browse('hana', true)
    await page.getByRole('heading', { name: 'Attachments' }).waitFor()
    t.equal(await page.locator('#upload').count(), 0)
    t.equal(await page.getByLabel('Take a photo').count(), 0)
  })

  await t.test(
    'reloading a record page reuses its thumbnails’ signed URLs instead of asking for new ones',
    async (t) => {
      // Three signed URLs a minute: one for the upload, one for the first view; a new one per view would break the image.
      const limited = await startTestServer({ limits: { attachmentUrlsPerMinute: 3 } })
      t.teardown(() => limited.close())
      await limited.platform.users.create('acme', { userName: 'sam', password, roles: ['safety-manager'] })
      const rec = (
        await limited.request('POST', '/api/v1/records', {
          body: { moduleKey: 'incident', payload: incidentPayload() }
        })
      ).body
      const { page } = await browse('sam', false, limited, `/records/incident/${rec.id}`)
      const png = Buffer.from(
        'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
        'base64'
      )
      await page.getByLabel('Attach files').setInputFiles({ name: 'dot.png', mimeType: 'image/png', buffer: png })
      await page.waitForURL('**?done=uploaded')
      const shown: number[] = []
      for (let i = 0; i < 4; i++) {
        await (i % 2 ? page.reload() : page.goto(`/records/incident/${rec.id}`))
        await page.waitForFunction(() => document.querySelector<HTMLImageElement>('ul.files img')?.complete)
        shown.push(await page.locator('ul.files img').evaluate((i: HTMLImageElement) => i.naturalWidth))
      }
      t.same(shown, [1, 1, 1, 1], 'the thumbnail shows on every view')
    }
  )

  await t.test('with the S3 driver the script PUTs the photo to the bucket and completes it', async (t) => {
    const s3 = await startS3()
    const s3Server = await startTestServer({ attachments: { driver: 's3', s3: s3.config } } as never)
    t.teardown(async () => {
      await s3Server.close()
      await s3.close()
    })
    // What an operator sets on the bucket for the pages' uploads (docs/workspace.md): PUT from the service's origin.
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: s3.config.region,
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }
    })
    await client.send(
      new PutBucketCorsCommand({
        Bucket: s3.bucket,
        CORSConfiguration: {
          CORSRules: [{ AllowedOrigins: [s3Server.url], AllowedMethods: ['PUT'], AllowedHeaders: ['content-type'] }]
        }
      })
    )
    client.destroy()
    await s3Server.platform.users.create('acme', { userName: 'sam', password, roles: ['safety-manager'] })
    const rec = (
      await s3Server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })
    ).body
    const { page, violations } = await browse('sam', true, s3Server, `/records/incident/${rec.id}`)
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
      'base64'
    )
    const put = page.waitForRequest((r) => r.method() === 'PUT')
    const completed = page.waitForResponse((r) => r.url().endsWith(':complete'))
    await page.getByLabel('Take a photo').setInputFiles({ name: 'gauge.png', mimeType: 'image/png', buffer: png })
    t.ok((await put).url().startsWith(`${s3.endpoint}/${s3.bucket}/acme/${rec.id}/`), 'the bytes go to the bucket')
    t.equal((await completed).status(), 200, 'and the script completes the attachment')
    await page.waitForURL('**?done=uploaded')
    await page.waitForFunction(() => document.querySelector<HTMLImageElement>('ul.files img')?.complete)
    t.equal(
      await page.getByRole('img', { name: 'gauge.png' }).evaluate((i: HTMLImageElement) => i.naturalWidth),
      1,
      'the preview loads from the bucket'
    )
    t.same(violations, [], 'no Content-Security-Policy violations')
  })
}
