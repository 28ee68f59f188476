import { generateKeyPairSync } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import Provider from 'oidc-provider'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import t from '../helpers/tap.ts'
import { oidcConfigProblems, type AppConfig } from '../../core/config.ts'
import { logger } from '../../core/logger.ts'
import { chromiumMissing, launchChromium } from '../helpers/browser.ts'
import { startTestServer } from '../helpers/server.ts'

/**
 * Single sign-on of provisioned users against a real OpenID provider (the oidc-provider
 * package, its development login and consent pages), in Debian's headless Chromium: acme
 * finds users by the ID token's `sub` (their SCIM externalId), globex by email (which this
 * provider returns from UserInfo, not in the ID token). Users are created as SCIM does:
 * with an externalId or email and no password. Set SCREENSHOT_DIR to keep a picture of
 * each of our pages.
 */

t.test('the oidc block of a tenant is checked at start, each problem naming the tenant and the setting', async (t) => {
  const tenant = (oidc: Record<string, unknown>) =>
    ({ tenants: { acme: { modules: [], oidc: { clientId: 'c', match: 'sub', ...oidc } } } }) as unknown as AppConfig
  t.same(oidcConfigProblems(tenant({ issuer: 'https://login.example.com/t/v2.0', clientSecret: 's' })), [])
  t.same(
    oidcConfigProblems(tenant({ issuer: 'http://127.0.0.1:9000', clientSecret: 's' })),
    [],
    'plain http on this machine'
  )
  t.same(oidcConfigProblems(tenant({ issuer: 'http://idp.example.com', clientSecret: 's' })), [
    '/tenants/acme/oidc/issuer must use https (plain http only on localhost): "http://idp.example.com"'
  ])
  t.same(oidcConfigProblems(tenant({ issuer: 'https://idp.example.com', clientSecret: 's', clientSecretEnv: 'X' })), [
    '/tenants/acme/oidc must have exactly one of clientSecret and clientSecretEnv'
  ])
  t.same(
    oidcConfigProblems(tenant({ issuer: 'https://idp.example.com', clientSecretEnv: 'RECORDS_TEST_UNSET_SECRET' }), {}),
    ['/tenants/acme/oidc/clientSecretEnv names the environment variable RECORDS_TEST_UNSET_SECRET, which is not set']
  )
  t.same(
    oidcConfigProblems(
      tenant({ issuer: 'https://idp.example.com', clientSecret: 's', match: 'email', scopes: 'openid profile' })
    ),
    ['/tenants/acme/oidc/scopes must include email when match is email: "openid profile"']
  )
})

const skip = chromiumMissing((m) => t.fail(m))
if (skip) t.test('OIDC sign-in in the browser', { skip }, async () => {})
else await browserTests()

async function browserTests() {
  // The provider listens first: its issuer URL goes into the records service's config, and the records service's URL into the provider's clients.
  const idpServer = createServer()
  idpServer.listen(0, '127.0.0.1')
  await once(idpServer, 'listening')
  const issuer = `http://127.0.0.1:${(idpServer.address() as AddressInfo).port}`
  process.env.RECORDS_TEST_OIDC_ACME_SECRET = 'acme-client-secret-for-tests-only'
  const globexSecret = 'globex-client-secret-for-tests-only'
  const modules = ['incident', 'corrective-action', 'inspection']
  const server = await startTestServer({
    tenants: {
      acme: {
        name: 'Acme Chemicals',
        modules,
        oidc: {
          issuer,
          clientId: 'records-acme',
          clientSecretEnv: 'RECORDS_TEST_OIDC_ACME_SECRET',
          match: 'sub',
          label: 'Sign in with Acme Okta'
        }
      },
      globex: {
        name: 'Globex Logistics',
        modules,
        oidc: {
          issuer,
          clientId: 'records-globex',
          clientSecret: globexSecret,
          tokenEndpointAuthMethod: 'client_secret_post',
          match: 'email'
        }
      }
    }
  } as any)

  // Accounts at the IdP; okta-nobody was never assigned the app, so it has no user here.
  const idpAccounts: Record<string, { email: string; email_verified: boolean; name: string }> = {
    'okta-sam': { email: 'sam@acme.test', email_verified: true, name: 'Sam Okta' },
    'okta-nobody': { email: 'nobody@acme.test', email_verified: true, name: 'No Body' },
    'idp-dana': { email: 'dana@globex.test', email_verified: true, name: 'Dana Idp' }
  }
  const jwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' })
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'records-acme',
        client_secret: process.env.RECORDS_TEST_OIDC_ACME_SECRET,
        redirect_uris: [`${server.url}/sign-in/oidc/acme/callback`],
        response_types: ['code'],
        grant_types: ['authorization_code']
      },
      {
        client_id: 'records-globex',
        client_secret: globexSecret,
        token_endpoint_auth_method: 'client_secret_post',
        redirect_uris: [`${server.url}/sign-in/oidc/globex/callback`],
        response_types: ['code'],
        grant_types: ['authorization_code']
      }
    ],
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    findAccount: async (_ctx, id) =>
      idpAccounts[id] ? { accountId: id, claims: async () => ({ sub: id, ...idpAccounts[id] }) } : undefined,
    jwks: { keys: [jwk] },
    cookies: { keys: ['oidc-provider-test-cookie-key'] },
    features: { devInteractions: { enabled: true } }
  })
  const idpHandler = provider.callback()
  // Koa's handler answers its own errors (ctx.onerror): its promise has nothing left to report.
  idpServer.on('request', (req, res) => void idpHandler(req, res))

  // Sam is provisioned as Okta does it, through SCIM (no password), and made a safety manager by a group.
  const scim = async (method: string, path: string, body: unknown) => {
    const r = await server.request(method, `/api/scim/v2/${path}`, {
      token: server.keys.acme,
      raw: JSON.stringify(body),
      headers: { 'content-type': 'application/scim+json' }
    })
    if (r.status >= 300) throw new Error(`setup: SCIM ${method} ${path} answered ${r.status} ${r.text}`)
    return r.body
  }
  const sam = await scim('POST', 'Users', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: 'sam@acme.test',
    externalId: 'okta-sam',
    name: { givenName: 'Sam', familyName: 'Taylor' },
    displayName: 'Sam Taylor',
    emails: [{ value: 'sam@acme.test', type: 'work', primary: true }],
    active: true
  })
  await scim('POST', 'Groups', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
    displayName: 'safety-manager',
    members: [{ value: sam.id }]
  })
  const dana = await server.platform.users.create('globex', {
    userName: 'dana',
    displayName: 'Dana Reyes',
    email: 'Dana@Globex.test',
    externalId: 'e2c1',
    roles: ['admin']
  })

  let browser: Browser | undefined
  t.teardown(async () => {
    await browser?.close()
    idpServer.closeAllConnections()
    idpServer.close()
    await server.close()
  })
  browser = await launchChromium()

  /** A browser of its own per person: no cookies of the IdP's or ours carried over. Nothing outside this machine is fetched (the IdP's pages link a web font). */
  async function freshPage(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser!.newContext({ baseURL: server.url })
    context.setDefaultTimeout(8_000)
    await context.route(/^https?:\/\/(?!127\.0\.0\.1[:/])/, (route) => route.abort())
    return { context, page: await context.newPage() }
  }
  /** The IdP's development login (any password) and consent pages. */
  async function atProvider(page: Page, login: string) {
    await page.locator('input[name="login"]').fill(login)
    await page.locator('input[name="password"]').fill('any password at the IdP')
    await page.getByRole('button', { name: 'Sign-in' }).click()
    await page.getByRole('button', { name: 'Continue' }).click()
  }
  const shot = async (page: Page, name: string) => {
    if (process.env.SCREENSHOT_DIR)
      await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/${name}.png`, fullPage: true })
  }
  const cookie = async (context: BrowserContext, name: string) => (await context.cookies()).find((c) => c.name === name)
  const sessionsOf = async (tenantId: string) =>
    Number(
      (await server.platform.db.system.query('SELECT count(*) FROM sessions WHERE tenant_id = $1', [tenantId])).rows[0]
        .count
    )
  /** Follows a sign-in at the IdP to the callback's own answer (before any redirect it gives). */
  const callbackAnswer = (page: Page, tenantId: string) =>
    page.waitForResponse((res) => res.url().startsWith(`${server.url}/sign-in/oidc/${tenantId}/callback`))

  const first = await freshPage()

  await t.test(
    'a provisioned user without a password signs in through the IdP and lands on the page they came for',
    async (t) => {
      const { context, page } = first
      await page.goto('/settings/api-keys')
      t.equal(new URL(page.url()).pathname + new URL(page.url()).search, '/sign-in?next=/settings/api-keys')
      await shot(page, 'oidc-sign-in-any')
      await page.getByLabel('Organisation').fill('acme')
      await page.getByRole('button', { name: 'Use single sign-on' }).click()
      await page.waitForURL('**/sign-in?tenant=acme&next=/settings/api-keys')
      await shot(page, 'oidc-sign-in-acme')
      const authorize = page.waitForRequest((req) => req.url().startsWith(`${issuer}/auth?`))
      await page.getByRole('link', { name: 'Sign in with Acme Okta' }).click()
      const request = new URL((await authorize).url())
      t.match(
        Object.fromEntries(request.searchParams),
        {
          client_id: 'records-acme',
          response_type: 'code',
          redirect_uri: `${server.url}/sign-in/oidc/acme/callback`,
          scope: 'openid email profile',
          code_challenge_method: 'S256',
          code_challenge: /^[A-Za-z0-9_-]{43}$/,
          state: /^[A-Za-z0-9_-]{20,}$/,
          nonce: /^[A-Za-z0-9_-]{20,}$/
        },
        'authorization code with PKCE (S256), state and nonce'
      )
      const flow = await cookie(context, 'records_oidc')
      t.match(
        flow,
        { httpOnly: true, secure: true, sameSite: 'Lax', path: '/sign-in/oidc' },
        'the flow waits in a sealed HttpOnly cookie'
      )
      t.notMatch(flow?.value ?? '', request.searchParams.get('state')!, 'which does not show its state')
      await atProvider(page, 'okta-sam')
      await page.waitForURL('**/settings/api-keys')
      await page.getByRole('heading', { name: 'API keys and tokens' }).waitFor()
      t.match(await page.locator('header .who').innerText(), 'Signed in as Sam Taylor · Acme Chemicals')
      t.match(
        await cookie(context, 'records_session'),
        { httpOnly: true, secure: true, sameSite: 'Lax', path: '/' },
        'the same session cookie as a password sign-in'
      )
      t.equal(await cookie(context, 'records_oidc'), undefined, 'the flow cookie is spent')
      const me = await (await context.request.get('/api/v1/me')).json()
      t.match(
        me,
        { tenantId: 'acme', actor: { type: 'user', id: sam.id }, roles: ['safety-manager'] },
        'the API sees the provisioned user, with the role its SCIM group grants'
      )
      t.ok((await server.platform.users.get('acme', sam.id))?.lastSignInAt, 'the sign-in is recorded')
    }
  )

  await t.test('a user matched by email (from UserInfo, in any case) is sent to the page named in next', async (t) => {
    const { context, page } = await freshPage()
    await page.goto('/sign-in/oidc/globex?next=/settings/api-keys?via=sso')
    await atProvider(page, 'idp-dana')
    await page.waitForURL('**/settings/api-keys?via=sso')
    t.match(await page.locator('header .who').innerText(), 'Signed in as Dana Reyes · Globex Logistics')
    t.match(await (await context.request.get('/api/v1/me')).json(), { tenantId: 'globex', actor: { id: dana.id } })
    await context.close()
  })

  await t.test('an answer whose state was changed is refused with a page, and no session is made', async (t) => {
    const { context, page } = await freshPage()
    const before = await sessionsOf('acme')
    // The redirect to the IdP with another state than the one this browser's flow holds: the
    // IdP signs in and sends a real code back with that state (Playwright routes only the
    // first request of a redirect chain, so the change is made on the way out).
    await context.route(/\/sign-in\/oidc\/acme$/, async (route) => {
      const response = await route.fetch({ maxRedirects: 0 })
      const location = new URL(response.headers().location)
      location.searchParams.set('state', 'a-state-this-browser-never-sent')
      await route.fulfill({ response, headers: { ...response.headers(), location: location.href } })
    })
    await page.goto('/sign-in/oidc/acme')
    const answer = callbackAnswer(page, 'acme')
    await atProvider(page, 'okta-sam')
    t.equal((await answer).status(), 400)
    await page.getByRole('heading', { name: 'Sign-in does not match' }).waitFor()
    await shot(page, 'oidc-state-mismatch')
    t.match(await page.getByRole('alert').innerText(), 'its state does not match')
    t.notMatch(await page.content(), /at .*\.ts:\d+/, 'no stack trace')
    t.equal(await cookie(context, 'records_session'), undefined)
    t.equal(await sessionsOf('acme'), before)
    await context.close()
  })

  await t.test(
    'an IdP account with no user here gets a page telling them to ask their administrator, and the refusal is logged with its reason',
    async (t) => {
      const { context, page } = await freshPage()
      const before = await sessionsOf('acme')
      const logged: string[] = []
      const write = process.stderr.write
      process.stderr.write = ((chunk: string | Uint8Array, ...rest: any[]) =>
        String(chunk).includes('oidc sign-in refused')
          ? (logged.push(String(chunk)), true)
          : write.call(process.stderr, chunk, ...rest)) as typeof write
      logger.setLevel('warn')
      try {
        await page.goto('/sign-in/oidc/acme')
        const answer = callbackAnswer(page, 'acme')
        await atProvider(page, 'okta-nobody')
        t.equal((await answer).status(), 403)
      } finally {
        logger.setLevel('error')
        process.stderr.write = write
      }
      await page.getByRole('heading', { name: 'No account here for you' }).waitFor()
      await shot(page, 'oidc-unknown-user')
      const alert = await page.getByRole('alert').innerText()
      t.match(alert, 'You signed in at your identity provider (account okta-nobody)', 'naming the IdP account')
      t.match(alert, 'Ask your administrator to assign you the Records app in Entra ID or Okta')
      t.equal(await cookie(context, 'records_session'), undefined, 'no session cookie')
      t.equal(await sessionsOf('acme'), before, 'no session')
      t.match(JSON.parse(logged[0] ?? '{}'), {
        msg: 'oidc sign-in refused',
        tenantId: 'acme',
        reason: 'unknown-user',
        sub: 'okta-nobody'
      })
      await page.getByRole('link', { name: 'Back to sign in' }).click()
      await page.getByRole('link', { name: 'Sign in with Acme Okta' }).waitFor()
      await context.close()
    }
  )

  await t.test('a deactivated user is refused with a page saying so, and their open session has ended', async (t) => {
    // As Entra deactivates: a PATCH with a capitalised op and a string boolean.
    await scim('PATCH', `Users/${sam.id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'Replace', path: 'active', value: 'False' }]
    })
    await first.page.goto('/settings/api-keys')
    t.match(
      first.page.url(),
      /\/sign-in\?next=\/settings\/api-keys$/,
      'the session of the first sign-in no longer works'
    )
    const { context, page } = await freshPage()
    await page.goto('/sign-in/oidc/acme')
    const answer = callbackAnswer(page, 'acme')
    await atProvider(page, 'okta-sam')
    t.equal((await answer).status(), 403)
    await page.getByRole('heading', { name: 'Account deactivated' }).waitFor()
    await shot(page, 'oidc-inactive-user')
    t.match(await page.getByRole('alert').innerText(), 'is deactivated')
    t.equal(await cookie(context, 'records_session'), undefined)
    t.equal(await sessionsOf('acme'), 0)
    await context.close()
  })

  await t.test(
    'an organisation without single sign-on gets no button and a page saying so at its start address',
    async (t) => {
      const res = await fetch(`${server.url}/sign-in/oidc/initech`, { redirect: 'manual' })
      t.equal(res.status, 404)
      t.match(await res.text(), 'does not sign in through an identity provider here')
      const page = await (await fetch(`${server.url}/sign-in?tenant=initech`)).text()
      t.notMatch(page, 'Sign in with', 'no single sign-on button')
      t.match(page, 'Use single sign-on', 'but the way to look one up')
    }
  )
}
