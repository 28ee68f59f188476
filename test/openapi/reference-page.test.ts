import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { once } from 'node:events'
import { get } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import Koa from 'koa'
import t, { type Test } from '../helpers/tap.ts'
import { chromiumMissing, launchChromium } from '../helpers/browser.ts'
import { referenceRoutes } from '../../plugins/api-docs/reference.ts'
import { startTestServer } from '../helpers/server.ts'

/**
 * The reference page, its assets and the Postman download, mounted on a bare Koa app with
 * a stub document: its `document(ctx)` adds a tenant-only operation when the request has
 * `Authorization`, as the service's does for a credential. Then the page in Debian's
 * headless Chromium: Swagger UI renders the document, and authorizing with a bearer token
 * fetches the spec again with it.
 */
const swaggerDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
const swaggerVersion: string = JSON.parse(readFileSync(join(swaggerDir, 'package.json'), 'utf8')).version

const token = 'svc_k_stubtoken0123456789'
const tenantSummary = 'Get an incident of Acme'

function stubDocument(authorized: boolean) {
  return {
    openapi: '3.1.0',
    info: { title: authorized ? 'Records Platform API: Acme' : 'Records Platform API', version: '0.1.0' },
    security: [{ bearerAuth: [] }],
    tags: [
      { name: 'Records', description: 'Records.' },
      ...(authorized ? [{ name: 'Incidents', description: 'Acme’s incident module.' }] : [])
    ],
    paths: {
      '/api/v1/records/{id}:transition': {
        post: {
          operationId: 'transitionRecord',
          tags: ['Records'],
          summary: 'Move a record through its workflow',
          parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' }, example: 'r1' }],
          requestBody: {
            content: { 'application/json': { schema: { type: 'object' }, example: { transition: 'close' } } }
          },
          responses: { 200: { description: 'Moved.' } }
        }
      },
      ...(authorized
        ? {
            '/api/v1/incidents/{id}': {
              get: {
                operationId: 'getIncident',
                tags: ['Incidents'],
                summary: tenantSummary,
                parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
                responses: { 200: { description: 'The incident.' } }
              }
            }
          }
        : {})
    },
    components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } } }
  }
}

/** The Authorization header of every spec request, in order ('' without one). */
const specAuthorizations: string[] = []
const app = new Koa()
app.use(referenceRoutes({ document: async (ctx) => stubDocument(Boolean(ctx.get('authorization'))) }))
// Stands in for the service's spec route (plugins/api-docs/api-docs.ts).
app.use(async (ctx, next) => {
  if (ctx.path !== '/api/docs/spec.json') return next()
  specAuthorizations.push(ctx.get('authorization'))
  ctx.set({ 'Cache-Control': 'private, no-cache', Vary: 'Authorization, Cookie' })
  ctx.body = stubDocument(Boolean(ctx.get('authorization')))
})
const server = app.listen(0, '127.0.0.1')
await once(server, 'listening')
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
t.teardown(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

/**
 * The status of a conditional GET as a browser revalidates: not with fetch(), which adds
 * `Cache-Control: no-cache` to a request with `If-None-Match`, and a server must then answer in full.
 */
function revalidate(path: string, etag: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url + path, { headers: { 'if-none-match': etag } }, (res) => {
      res.resume()
      resolve(res.statusCode!)
    }).on('error', reject)
  })
}

/** The page's script and stylesheet URLs, in order. */
async function pageAssets() {
  const html = await (await fetch(`${url}/api/docs`)).text()
  return {
    scripts: [...html.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]),
    styles: [...html.matchAll(/<link rel="stylesheet" href="([^"]+)"/g)].map((m) => m[1]),
    html
  }
}

t.test(
  'the reference page is HTML under a strict CSP, with only same-origin scripts and no inline script',
  async (t) => {
    for (const path of ['/api/docs', '/api/docs/']) {
      const res = await fetch(url + path)
      t.equal(res.status, 200, path)
      t.equal(res.headers.get('content-type'), 'text/html; charset=utf-8')
      t.equal(
        res.headers.get('content-security-policy'),
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
      )
      t.equal(res.headers.get('x-content-type-options'), 'nosniff')
      t.equal(res.headers.get('referrer-policy'), 'same-origin')
      await res.text()
    }
    const { scripts, styles, html } = await pageAssets()
    t.same(
      scripts.map((s) => s.replace(/\?v=.*$/, '')),
      [
        '/api/docs/assets/swagger-ui-bundle.js',
        '/api/docs/assets/swagger-ui-standalone-preset.js',
        '/api/docs/assets/init.js'
      ]
    )
    t.same(
      styles,
      [`/api/docs/assets/swagger-ui.css?v=${swaggerVersion}`],
      'the package’s stylesheet, its version in the URL'
    )
    t.notMatch(html, /<script>|<script [^>]*>[^<]/, 'no inline script')
    t.match(html, '<a href="/api/docs/postman.json"', 'a link to the Postman collection')
    t.match(html, '<a href="/api/docs/spec.json"', 'a link to the raw document')
    t.notMatch(html, /https?:\/\//, 'nothing from another origin')
  }
)

t.test(
  'each asset is served with its content type and a day of public caching, the package’s files byte for byte',
  async (t) => {
    const { scripts, styles } = await pageAssets()
    const expected: Record<string, string> = {
      'swagger-ui.css': 'text/css; charset=utf-8',
      'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
      'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
      'init.js': 'text/javascript; charset=utf-8',
      'favicon-32x32.png': 'image/png'
    }
    const urls = [...styles, ...scripts, '/api/docs/assets/favicon-32x32.png']
    for (const path of urls) {
      const name = new URL(path, url).pathname.split('/').pop()!
      const res = await fetch(url + path)
      t.equal(res.status, 200, name)
      t.equal(res.headers.get('content-type'), expected[name], `${name} content type`)
      t.equal(res.headers.get('cache-control'), 'public, max-age=86400', `${name} cached a day`)
      t.equal(res.headers.get('x-content-type-options'), 'nosniff')
      const body = Buffer.from(await res.arrayBuffer())
      if (name !== 'init.js') t.ok(body.equals(readFileSync(join(swaggerDir, name))), `${name} is the package’s file`)
      else t.match(body.toString(), 'SwaggerUIBundle(', 'init.js starts Swagger UI')
      t.equal(await revalidate(path, res.headers.get('etag')!), 304, `${name} answers 304 to its ETag`)
    }
    const head = await fetch(`${url}/api/docs/assets/swagger-ui.css`, { method: 'HEAD' })
    t.equal(head.status, 200, 'HEAD works')
    t.equal(Number(head.headers.get('content-length')), readFileSync(join(swaggerDir, 'swagger-ui.css')).length)
  }
)

t.test('an asset outside the allow-list is a 404, even a file the package has', async (t) => {
  for (const name of [
    'nope.js',
    'package.json',
    'swagger-ui.js.map',
    'index.html',
    '..%2Fpackage.json',
    '../../package.json',
    ''
  ]) {
    const res = await fetch(`${url}/api/docs/assets/${name}`)
    t.equal(res.status, 404, name || '(empty)')
    t.notOk(res.headers.get('cache-control'), 'not cached publicly')
    await res.text()
  }
})

t.test('other methods pass through to the rest of the app', async (t) => {
  for (const [method, path] of [
    ['POST', '/api/docs'],
    ['DELETE', '/api/docs/postman.json'],
    ['PUT', '/api/docs/assets/init.js']
  ]) {
    const res = await fetch(url + path, { method })
    t.equal(res.status, 404, `${method} ${path}`)
    t.equal(res.headers.get('content-security-policy'), null)
    await res.text()
  }
})

t.test(
  'postman.json is the caller’s document as a collection download, addressed to the request’s origin',
  async (t) => {
    const res = await fetch(`${url}/api/docs/postman.json`)
    t.equal(res.status, 200)
    t.match(res.headers.get('content-type'), /^application\/json/)
    t.equal(res.headers.get('content-disposition'), 'attachment; filename="records-api.postman_collection.json"')
    t.equal(res.headers.get('cache-control'), 'private, no-cache')
    t.equal(res.headers.get('vary'), 'Authorization, Cookie')
    const collection = await res.json()
    t.equal(collection.info.schema, 'https://schema.getpostman.com/json/collection/v2.1.0/collection.json')
    t.equal(collection.info.name, 'Records Platform API')
    t.same(
      collection.variable.find((v: any) => v.key === 'baseUrl'),
      { key: 'baseUrl', value: url, type: 'string' }
    )
    t.same(
      collection.item.map((f: any) => f.name),
      ['Records']
    )
    t.equal(collection.item[0].item[0].request.url.raw, '{{baseUrl}}/api/v1/records/{{records.id}}:transition')
    const authorized = await (
      await fetch(`${url}/api/docs/postman.json`, { headers: { authorization: `Bearer ${token}` } })
    ).json()
    t.same(
      authorized.item.map((f: any) => f.name),
      ['Records', 'Incidents'],
      'with a credential, the tenant’s document'
    )
    t.equal(authorized.info.name, 'Records Platform API: Acme')
    const head = await fetch(`${url}/api/docs/postman.json`, { method: 'HEAD' })
    t.equal(head.status, 200)
    t.equal(await head.text(), '')
  }
)

t.test('on the service, the same routes answer from its own document', async (t) => {
  const service = await startTestServer()
  // close() also fails the test if any response below broke the service's OpenAPI document.
  t.teardown(() => service.close())

  await t.test('the page, an asset and an unknown asset', async (t) => {
    const pageReply = await service.request('GET', '/api/docs', { token: null })
    t.equal(pageReply.status, 200)
    t.match(pageReply.headers.get('content-security-policy'), "script-src 'self';")
    t.match(pageReply.text, '<script src="/api/docs/assets/init.js?v=')
    const bundle = await service.request('GET', `/api/docs/assets/swagger-ui-bundle.js?v=${swaggerVersion}`, {
      token: null
    })
    t.equal(bundle.status, 200)
    t.equal(bundle.headers.get('content-type'), 'text/javascript; charset=utf-8')
    t.equal((await service.request('GET', '/api/docs/assets/package.json', { token: null })).status, 404)
  })

  await t.test('postman.json is the generic collection without a credential and the tenant’s with one', async (t) => {
    const generic = await service.request('GET', '/api/docs/postman.json', { token: null })
    t.equal(generic.status, 200)
    t.equal(generic.headers.get('content-disposition'), 'attachment; filename="records-api.postman_collection.json"')
    t.equal(generic.body.info.name, 'Records Platform API')
    const reply = await service.request('GET', '/api/docs/postman.json', { token: service.keys.acme })
    t.equal(reply.status, 200)
    const collection = reply.body
    t.equal(collection.info.name, 'Records Platform API: Acme Chemicals')
    t.same(
      collection.variable.find((v: any) => v.key === 'baseUrl'),
      { key: 'baseUrl', value: service.url, type: 'string' }
    )
    const spec = (await service.request('GET', '/api/docs/spec.json', { token: service.keys.acme })).body
    const operations = Object.values<any>(spec.paths).flatMap((item) =>
      Object.keys(item).filter((k) => ['get', 'put', 'post', 'patch', 'delete'].includes(k))
    )
    const requests = collection.item.flatMap((f: any) => f.item)
    t.equal(requests.length, operations.length, 'one request per operation of the tenant’s document')
    const folders: string[] = collection.item.map((f: any) => f.name)
    t.same(
      folders,
      [...spec.tags.map((tag: any) => tag.name).filter((name: string) => folders.includes(name)), 'Clean up'],
      'folders in the order of the document’s tags, none for untagged operations, and Clean up last'
    )
    t.same(
      collection.item.at(-1).item.map((i: any) => i.request.method),
      ['DELETE', 'DELETE', 'DELETE', 'DELETE', 'DELETE'],
      'Clean up holds the deletes (a record, a token, a SCIM user and group, a webhook subscription)'
    )
    const byName = (name: string) => requests.find((r: any) => r.name === name)?.request
    t.equal(
      byName('Move a record through its workflow')?.url.raw,
      '{{baseUrl}}/api/v1/records/{{records.id}}:transition'
    )
    const create = byName('Create a record')
    t.match(
      JSON.parse(create.body.raw),
      { moduleKey: String, payload: Object },
      'the create example of one of Acme’s modules'
    )
    t.same(create.header.find((h: any) => h.key === 'Idempotency-Key')?.value, '{{$guid}}')
    t.same(byName('Interactive API reference')?.auth, { type: 'noauth' })
  })
})

// One parent test, so the root waits for the browser while the HTTP tests above run.
const skip = chromiumMissing((m) => t.fail(m))
t.test('in headless Chromium', { skip }, browserTests)

async function browserTests(t: Test) {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const context = await browser.newContext({ baseURL: url, acceptDownloads: true })
  context.setDefaultTimeout(10_000)
  const page = await context.newPage()
  const problems: string[] = []
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content.Security.Policy/i.test(m.text())) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(e.message))
  const operation = (path: string) => page.locator(`.opblock-summary-path[data-path="${path}"]`)
  // Set SCREENSHOT_DIR to keep a picture of the page before and after authorizing.
  const shot = async (name: string) => {
    if (process.env.SCREENSHOT_DIR)
      await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/${name}.png`, fullPage: true })
  }

  await t.test('Swagger UI renders the document’s operations from the package’s scripts', async (t) => {
    specAuthorizations.length = 0
    await page.goto('/api/docs')
    await operation('/api/v1/records/{id}:transition').waitFor()
    t.ok(await page.getByText('Move a record through its workflow').isVisible(), 'the summary is shown')
    t.equal(await operation('/api/v1/incidents/{id}').count(), 0, 'no tenant operation without a credential')
    t.same(specAuthorizations, [''], 'the spec was fetched once, without Authorization')
    t.equal(await page.locator('.topbar').count(), 0, 'no top bar to load another URL')
    t.ok(await page.getByRole('link', { name: 'Download the Postman collection' }).isVisible())
    await shot('reference-generic')
  })

  await t.test(
    'authorizing with a bearer token fetches the spec again with it, and the tenant’s operation appears',
    async (t) => {
      await page.locator('.scheme-container button.authorize').click()
      const dialog = page.locator('.modal-ux')
      await dialog.locator('input[type="text"], input[type="password"]').first().fill(token)
      await dialog.locator('button.authorize').click()
      await dialog.locator('button.btn-done').click()
      await operation('/api/v1/incidents/{id}').waitFor()
      t.ok(await page.getByText(tenantSummary).isVisible(), 'the tenant’s operation is listed')
      t.ok(await operation('/api/v1/records/{id}:transition').isVisible(), 'and the generic ones still are')
      t.same(specAuthorizations, ['', `Bearer ${token}`], 'the second spec request carried the token')
      await shot('reference-authorized')
    }
  )

  await t.test('the Postman link downloads the tenant’s collection with the authorized token', async (t) => {
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download the Postman collection' }).click()
    ])
    t.equal(download.suggestedFilename(), 'records-api.postman_collection.json')
    const collection = JSON.parse(readFileSync(await download.path(), 'utf8'))
    t.same(
      collection.item.map((f: any) => f.name),
      ['Records', 'Incidents']
    )
  })

  await t.test('logging out fetches the spec again without the token, and the tenant’s operation goes', async (t) => {
    await page.locator('.scheme-container button.authorize').click()
    const dialog = page.locator('.modal-ux')
    // Its accessible name is "Remove authorization"; the text reads Logout.
    await dialog.locator('button', { hasText: 'Logout' }).click()
    await dialog.locator('button.btn-done').click()
    await operation('/api/v1/incidents/{id}').waitFor({ state: 'detached' })
    t.equal(specAuthorizations.at(-1), '', 'the last spec request had no Authorization')
    t.ok(await operation('/api/v1/records/{id}:transition').isVisible())
  })

  await t.test('nothing broke the page’s Content-Security-Policy or threw', async (t) => {
    t.same(problems, [])
  })
}
