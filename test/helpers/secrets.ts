import { appendFileSync } from 'node:fs'
import type { Middleware } from 'koa'
import type { Platform } from '../../core/declarations.ts'

/**
 * Every secret the tests create, one a line in the file `npm test` names in
 * RECORDS_TEST_SECRETS, so that after the run test/suite/log-check.ts can look for each in
 * the logs of every server of the run. Without the variable (one file run alone) nothing
 * is recorded. Values under 10 characters are left out (too likely to occur by chance).
 */
const file = process.env.RECORDS_TEST_SECRETS
const recorded = new Set<string>()

export function recordSecret(...values: unknown[]) {
  if (!file) return
  for (const v of values) {
    if (typeof v !== 'string' || v.length < 10 || /[\r\n]/.test(v) || recorded.has(v)) continue
    recorded.add(v)
    appendFileSync(file, v + '\n')
  }
}

/** The signature of a signed URL (local `sig`, S3 `X-Amz-Signature`), the part that grants access. */
export function signatureOf(url: string): string | undefined {
  const q = new URL(url, 'http://x').searchParams
  return q.get('sig') ?? q.get('X-Amz-Signature') ?? q.get('signature') ?? undefined
}

const wrapped = new WeakSet<object>()

/**
 * Records what the platform creates: tokens (every way of issuing one ends in
 * credentials.create), passwords given to users, session cookies and CSRF tokens, the
 * signatures of signed URLs, and the secrets in the configuration.
 */
export function recordPlatformSecrets(platform: Platform) {
  if (!file || wrapped.has(platform)) return
  wrapped.add(platform)
  const { credentials, users, sessions, storage, config } = platform
  const createCredential = credentials.create.bind(credentials)
  credentials.create = async (input) => {
    const created = await createCredential(input)
    recordSecret(created.token)
    return created
  }
  const createUser = users.create.bind(users)
  users.create = async (tenantId, input, o) => {
    recordSecret(input.password)
    return createUser(tenantId, input, o)
  }
  const createSession = sessions.create.bind(sessions)
  sessions.create = async (tenantId, userId) => {
    const created = await createSession(tenantId, userId)
    recordSecret(created.cookieValue, created.csrfToken)
    return created
  }
  for (const method of ['signUpload', 'signDownload'] as const) {
    const sign = storage[method].bind(storage) as (spec: any) => ReturnType<(typeof storage)[typeof method]>
    storage[method] = (async (spec: any) => {
      const signed = await sign(spec)
      recordSecret(signatureOf(signed.url))
      return signed
    }) as never
  }
  recordSecret(config.attachments.s3.secretAccessKey, ...Object.values(config.tenants).map((t) => t.oidc?.clientSecret))
}

const webhookSecret = /whsec_[A-Za-z0-9+/=]{20,}/g

/**
 * Records the webhook secrets responses show (created by the webhooks plugin itself, in the
 * create and rotate-secret answers and the settings page that shows one once).
 */
export const recordResponseSecrets: Middleware = async (ctx, next) => {
  await next()
  if (!file) return
  const body = ctx.body as unknown
  if (typeof body === 'string') {
    if (body.includes('whsec_')) recordSecret(...(body.match(webhookSecret) ?? []))
  } else if (
    body &&
    typeof body === 'object' &&
    !Buffer.isBuffer(body) &&
    typeof (body as { pipe?: unknown }).pipe !== 'function'
  ) {
    const secret = (body as { secret?: unknown }).secret
    if (typeof secret === 'string') recordSecret(secret)
  }
}
