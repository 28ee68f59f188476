import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import { logger, type Level } from '../../core/logger.ts'
import { userWithToken } from '../helpers/identity.ts'
import { sendPage } from '../helpers/pages.ts'
import { signatureOf } from '../helpers/secrets.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from '../webhooks/receiver.ts'

// The server's whole log, read back from a file of this test's own (stderr stays quiet).
const dir = mkdtempSync(join(tmpdir(), 'records-request-log-'))
const logFile = join(dir, 'server.ndjson')
const server = await startTestServer({ ...webhookTestConfig(), log: { file: logFile, requests: 'info' } })
t.teardown(async () => {
  await server.close()
  // Back to the run's own file (npm test's LOG_FILE), if any.
  logger.setFile({
    file: process.env.LOG_FILE ?? null,
    fileLevel: process.env.LOG_FILE_LEVEL as Level,
    fileMaxBytes: Number(process.env.LOG_FILE_MAX_BYTES) || undefined
  })
  rmSync(dir, { recursive: true, force: true })
})
const receiver = await startReceiver()
t.teardown(() => receiver.close())

/** Every line of the server's log, parsed (a line that is not JSON fails the test). */
function logLines(): Record<string, any>[] {
  logger.flush()
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
}

/** The request line of a response, by its X-Trace-Id (written once the response has ended). */
async function requestLine(traceId: string | null): Promise<Record<string, any>[]> {
  for (let i = 0; i < 40; i++) {
    const found = logLines().filter((l) => l.msg === 'request' && l.traceId === traceId)
    if (found.length) return found
    await new Promise((r) => setTimeout(r, 25))
  }
  return []
}

const password = 'log-test password 7c1e94'
const secrets: Record<string, string> = {}
const sent: {
  what: string
  traceId: string | null
  status: number
  method: string
  tenant?: string
  credentialId?: string
  notInRoute?: string
}[] = []
const acmeKeyId = (await server.platform.credentials.list('acme'))[0].id

t.test(
  'one JSON line per request: tenant, credential id, route template, method, status, latency, bytes, trace id; no secret in the log',
  async (t) => {
    secrets.apiKey = server.keys.acme
    const modules = await server.request('GET', '/api/v1/modules')
    sent.push({
      what: 'an API key',
      traceId: modules.headers.get('x-trace-id'),
      status: 200,
      method: 'GET',
      tenant: 'acme',
      credentialId: acmeKeyId
    })

    const user = await userWithToken(server, 'acme', ['admin'], { userName: 'log.checker', password })
    secrets.personalToken = user.token
    secrets.password = password
    const me = await server.request('GET', '/api/v1/me', { token: user.token })
    sent.push({
      what: 'a personal token',
      traceId: me.headers.get('x-trace-id'),
      status: 200,
      method: 'GET',
      tenant: 'acme',
      credentialId: me.body.credential.id
    })

    secrets.unknownToken = `svc_k_${'Q'.repeat(40)}`
    const refused = await server.request('GET', '/api/v1/modules', { token: secrets.unknownToken })
    sent.push({ what: 'an unknown token', traceId: refused.headers.get('x-trace-id'), status: 401, method: 'GET' })

    secrets.wrongPassword = 'not the password 1a2b3c'
    const wrong = await sendPage(server, 'POST', '/sign-in', {
      form: { tenant: 'acme', userName: 'log.checker', password: secrets.wrongPassword, next: '/settings/api-keys' }
    })
    sent.push({
      what: 'a wrong password',
      traceId: wrong.headers.get('x-trace-id'),
      status: wrong.status,
      method: 'POST'
    })
    const signedIn = await sendPage(server, 'POST', '/sign-in', {
      form: { tenant: 'acme', userName: 'log.checker', password, next: '/settings/api-keys' }
    })
    t.equal(signedIn.status, 303, 'signed in')
    sent.push({ what: 'a password', traceId: signedIn.headers.get('x-trace-id'), status: 303, method: 'POST' })
    secrets.sessionCookie = /records_session=([^;]+)/.exec(signedIn.setCookie.join('\n'))![1]
    const session = await server.request('GET', '/api/v1/me', {
      token: null,
      headers: { cookie: `records_session=${secrets.sessionCookie}` }
    })
    secrets.csrfToken = session.body.csrfToken
    t.ok(secrets.csrfToken, 'the session has a CSRF token')
    sent.push({
      what: 'a session cookie',
      traceId: session.headers.get('x-trace-id'),
      status: 200,
      method: 'GET',
      tenant: 'acme',
      credentialId: session.body.credential.id
    })
    const forged = await server.request('POST', '/api/v1/records', {
      token: null,
      headers: { cookie: `records_session=${secrets.sessionCookie}`, 'x-csrf-token': `${secrets.csrfToken}x` },
      body: { moduleKey: 'incident', payload: incidentPayload() }
    })
    sent.push({
      what: 'a wrong CSRF token',
      traceId: forged.headers.get('x-trace-id'),
      status: 403,
      method: 'POST',
      tenant: 'acme'
    })

    const hook = await server.request('POST', '/api/v1/webhooks', {
      body: { url: receiver.url, kinds: ['webhook.test'] }
    })
    t.equal(hook.status, 201)
    secrets.webhookSecret = hook.body.secret
    sent.push({
      what: 'a webhook secret',
      traceId: hook.headers.get('x-trace-id'),
      status: 201,
      method: 'POST',
      tenant: 'acme',
      credentialId: acmeKeyId
    })
    const rotated = await server.request('POST', `/api/v1/webhooks/${hook.body.id}:rotate-secret`)
    secrets.rotatedSecret = rotated.body.secret
    sent.push({
      what: 'a rotated webhook secret',
      traceId: rotated.headers.get('x-trace-id'),
      status: 200,
      method: 'POST',
      tenant: 'acme',
      notInRoute: hook.body.id
    })

    const record = await server.request('POST', '/api/v1/records', {
      body: { moduleKey: 'incident', payload: incidentPayload() }
    })
    const pdf = Buffer.from('%PDF-1.4\n% log test\n%%EOF\n')
    const attachment = await server.request('POST', '/api/v1/attachments', {
      body: {
        recordId: record.body.id,
        fileName: 'log.pdf',
        contentType: 'application/pdf',
        size: pdf.length,
        sha256: createHash('sha256').update(pdf).digest('hex')
      }
    })
    t.equal(attachment.status, 201)
    secrets.signature = signatureOf(attachment.body.upload.url)!
    const put = await fetch(attachment.body.upload.url, {
      method: 'PUT',
      headers: attachment.body.upload.headers,
      body: new Uint8Array(pdf)
    })
    await put.arrayBuffer()
    sent.push({
      what: 'a signed URL',
      traceId: put.headers.get('x-trace-id'),
      status: put.status,
      method: 'PUT',
      notInRoute: 'sig='
    })
    const tampered = await fetch(attachment.body.upload.url.replace(/sig=[^&]+/, 'sig=forgedsignature0123456789'), {
      method: 'PUT',
      headers: attachment.body.upload.headers,
      body: new Uint8Array(pdf)
    })
    await tampered.arrayBuffer()
    sent.push({
      what: 'a forged signature',
      traceId: tampered.headers.get('x-trace-id'),
      status: 403,
      method: 'PUT',
      notInRoute: 'forgedsignature'
    })
    const unknown = await server.request(
      'GET',
      `/nowhere/${record.body.id}?X-Amz-Signature=0123456789abcdef&token=${secrets.apiKey}`
    )
    sent.push({
      what: 'an unknown path with a signature',
      traceId: unknown.headers.get('x-trace-id'),
      status: 404,
      method: 'GET',
      notInRoute: record.body.id
    })

    for (const s of sent) {
      const lines = await requestLine(s.traceId)
      t.equal(lines.length, 1, `${s.what}: one request line`)
      const line = lines[0] ?? {}
      t.match(
        line,
        {
          level: 'info',
          msg: 'request',
          method: s.method,
          status: s.status,
          route: String,
          ms: Number,
          bytes: Number,
          traceId: s.traceId
        },
        `${s.what}: its fields`
      )
      t.ok(line.bytes > 0, `${s.what}: bytes written`)
      t.notMatch(line.route, /\?/, `${s.what}: the route has no query`)
      if (s.notInRoute) t.notOk(line.route.includes(s.notInRoute), `${s.what}: the route is a template (${line.route})`)
      if (s.tenant) t.equal(line.tenant, s.tenant, `${s.what}: its tenant`)
      if (s.credentialId) t.equal(line.credentialId, s.credentialId, `${s.what}: its credential id`)
    }
    const rotateLine = (await requestLine(sent.find((s) => s.what === 'a rotated webhook secret')!.traceId))[0]
    t.equal(rotateLine?.route, '/api/v1/webhooks/:id:rotate-secret')

    const text = readFileSync(logFile, 'utf8')
    for (const [name, value] of Object.entries(secrets))
      t.notOk(text.includes(value), `the log does not hold the ${name}`)
  }
)

t.test(
  'a value holding secrets is scrubbed wherever it is: an error quoting URLs, a nested header, the message itself',
  async (t) => {
    const token = `svc_p_${'a1B2'.repeat(10)}`
    logger.warn(
      `request to https://files.example/x?X-Amz-Signature=abcdef0123456789&X-Amz-Credential=AKIA/2026 failed with Bearer ${token}`,
      {
        error: 'connect ECONNREFUSED postgres://records:pg-password-42@db:5432/records',
        request: {
          headers: { authorization: `Bearer ${token}`, cookie: 'records_session=abcdefghijklmnop' },
          secret: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0'
        },
        attempt: {
          to: 'https://hook.example/?sig=0123456789abcdef&keep=yes',
          body: 'webhook secret whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0 and sa_' + 'Z'.repeat(40)
        }
      }
    )
    const line = logLines().at(-1)!
    const text = JSON.stringify(line)
    for (const secret of [
      token,
      'abcdef0123456789',
      'pg-password-42',
      'abcdefghijklmnop',
      'c2VjcmV0c2VjcmV0',
      '0123456789abcdef',
      'Z'.repeat(40)
    ])
      t.notOk(text.includes(secret), `${secret.slice(0, 8)}… is not in the line`)
    t.match(line.msg, 'X-Amz-Signature=[REDACTED]')
    t.match(line.msg, 'Bearer [REDACTED]')
    t.match(line.error, 'postgres://records:[REDACTED]@db:5432/records', 'the URL keeps all but its password')
    t.equal(line.request.headers.authorization, '[REDACTED]', 'a known field, by name')
    t.match(line.attempt.to, '?sig=[REDACTED]&keep=yes', 'other parameters stay')
  }
)
