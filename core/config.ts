import { Type, type Static } from '@feathersjs/typebox'
import { Ajv } from 'ajv'
import { resolve } from 'node:path'
import { createRequire } from 'node:module'
import { projectRoot } from './paths.ts'

const LimitsConfig = Type.Object(
  {
    /** Requests per credential in any 60-second window (sliding). */
    requestsPerMinute: Type.Integer({ minimum: 1 }),
    /** Bulk loads running at once per tenant. */
    bulkConcurrency: Type.Integer({ minimum: 1 }),
    /** Export jobs running at once per tenant. */
    exportConcurrency: Type.Integer({ minimum: 1 }),
    /** Signed upload URLs per credential per minute. */
    attachmentUrlsPerMinute: Type.Integer({ minimum: 1 }),
    /** Password attempts per user name and per client address per minute. */
    signInAttemptsPerMinute: Type.Integer({ minimum: 1 }),
    /** Work units one request may do (core/limits/budget.ts): fields resolved, rows read, array elements touched, lookups. */
    requestBudget: Type.Integer({ minimum: 1 }),
    /** Units of work that count as one request against requestsPerMinute (an expensive request counts as several). */
    budgetUnitsPerRequest: Type.Integer({ minimum: 1 })
  },
  { additionalProperties: false }
)

/**
 * Single sign-on through the tenant's OpenID provider (Entra ID, Okta, …) for the users
 * it provisions (docs/identity-and-access.md, "Single sign-on"). Checked beyond its shape
 * by oidcConfigProblems at start.
 */
const OidcConfig = Type.Object(
  {
    /** The issuer identifier, e.g. `https://login.microsoftonline.com/<directory id>/v2.0`: its discovery document is read from it. */
    issuer: Type.String({ minLength: 1 }),
    clientId: Type.String({ minLength: 1 }),
    /** The client secret itself, or (better) `clientSecretEnv`: the environment variable that holds it. */
    clientSecret: Type.Optional(Type.String({ minLength: 1 })),
    clientSecretEnv: Type.Optional(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' })),
    /** How the secret is sent to the token endpoint. Default `client_secret_basic`. */
    tokenEndpointAuthMethod: Type.Optional(Type.Union([Type.Literal('client_secret_basic'), Type.Literal('client_secret_post')])),
    /** Space-separated; must include `openid` (and `email` when matching by email). Default `openid email profile`. */
    scopes: Type.Optional(Type.String({ minLength: 1 })),
    /**
     * Which claim of the ID token finds the user: `sub` or `oid` (Entra's object id) equal to
     * the user's externalId, or `email` equal to the user's email or user name (any case).
     */
    match: Type.Union([Type.Literal('sub'), Type.Literal('oid'), Type.Literal('email')]),
    /** The button's text on the sign-in page. Default `Sign in with single sign-on`. */
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 80 }))
  },
  { additionalProperties: false }
)

export type OidcConfig = Static<typeof OidcConfig>

const TenantConfig = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1 })),
    modules: Type.Array(Type.String({ pattern: '^[a-z][a-z0-9-]*$' }), { uniqueItems: true }),
    /** Enterprise plans: any of the limits, raised (or lowered) for this tenant. */
    limits: Type.Optional(Type.Partial(LimitsConfig)),
    oidc: Type.Optional(OidcConfig)
  },
  { additionalProperties: false }
)

export const configSchema = Type.Object({
  host: Type.String(),
  port: Type.Integer({ minimum: 0, maximum: 65535 }),
  publicUrl: Type.Union([Type.String(), Type.Null()]),
  database: Type.Object({
    url: Type.Union([Type.String(), Type.Null()]),
    poolSize: Type.Integer({ minimum: 1 }),
    embedded: Type.Object({
      dataDir: Type.String(),
      port: Type.Integer({ minimum: 1, maximum: 65535 })
    })
  }),
  modules: Type.Object({
    directories: Type.Array(Type.String()),
    packages: Type.Array(Type.String())
  }),
  tenants: Type.Record(Type.String({ pattern: '^[a-z][a-z0-9-]{0,62}$' }), TenantConfig),
  http: Type.Object({ maxJsonBytes: Type.Integer({ minimum: 1024 }) }),
  pagination: Type.Object({
    defaultLimit: Type.Integer({ minimum: 1 }),
    maxLimit: Type.Integer({ minimum: 1 })
  }),
  idempotency: Type.Object({
    retentionHours: Type.Number({ exclusiveMinimum: 0 }),
    inFlightTimeoutSeconds: Type.Number({ exclusiveMinimum: 0 })
  }),
  events: Type.Object({
    /** Events older than this are removed by the events.purge job; a feed cursor past removed events is 410. */
    retentionDays: Type.Number({ exclusiveMinimum: 0 })
  }),
  redis: Type.Object({
    /** Shares rate-limit windows and concurrency slots across instances; memory when null. */
    url: Type.Union([Type.String(), Type.Null()]),
    prefix: Type.String()
  }),
  limits: LimitsConfig,
  attachments: Type.Object({
    driver: Type.Union([Type.Literal('local'), Type.Literal('s3')]),
    /** Largest file accepted, in bytes. */
    maxBytes: Type.Integer({ minimum: 1 }),
    /** Content types accepted (exact, or `type/*`). */
    contentTypes: Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
    uploadUrlSeconds: Type.Integer({ minimum: 1 }),
    downloadUrlSeconds: Type.Integer({ minimum: 1 }),
    /** Pending uploads older than this are removed by the attachments.purge job. */
    pendingHours: Type.Number({ exclusiveMinimum: 0 }),
    local: Type.Object({ dir: Type.String({ minLength: 1 }) }),
    s3: Type.Object({
      endpoint: Type.Union([Type.String(), Type.Null()]),
      region: Type.String(),
      bucket: Type.String(),
      accessKeyId: Type.Union([Type.String(), Type.Null()]),
      secretAccessKey: Type.Union([Type.String(), Type.Null()]),
      forcePathStyle: Type.Boolean()
    })
  }),
  exports: Type.Object({
    /** Hours a finished export file can be downloaded before the exports.purge job removes it. */
    fileHours: Type.Number({ exclusiveMinimum: 0 }),
    /** Attempts before a job is failed (a job whose process died is picked up again). */
    maxAttempts: Type.Integer({ minimum: 1 }),
    /** How long a running job's lock holds without renewal; after it, another instance takes the job over. */
    lockSeconds: Type.Integer({ minimum: 1 }),
    /** Rows read per page from the records service. */
    pageSize: Type.Integer({ minimum: 1 })
  }),
  bulk: Type.Object({
    /** Rows per call; rows past it get an error outcome each. */
    maxRows: Type.Integer({ minimum: 1 }),
    /** Rows per transaction. */
    batchSize: Type.Integer({ minimum: 1 }),
    /** A batch is written at the latest this long after its first row arrived (first outcomes stream early). */
    flushAfterMs: Type.Integer({ minimum: 1 })
  }),
  webhooks: Type.Object({
    /** Run the webhook dispatcher on this instance (LISTEN/NOTIFY on commit, and a poll). */
    dispatch: Type.Boolean(),
    /** Accept plain `http://` target URLs (development, tests); https only otherwise. */
    allowHttp: Type.Boolean(),
    /** Address ranges (CIDR) a target may resolve to although private, loopback or link-local, e.g. `127.0.0.1/32` in tests. */
    allowedCidrs: Type.Array(Type.String({ minLength: 1 })),
    /** How long one delivery may take, connection to the last byte read. */
    timeoutMs: Type.Integer({ minimum: 1 }),
    /** How long resolving a target's host name may take before it is refused. */
    dnsTimeoutMs: Type.Integer({ minimum: 1 }),
    /** When each attempt is due, in ms after the first (the first is 0): its length is the number of attempts. */
    retryScheduleMs: Type.Array(Type.Integer({ minimum: 0 }), { minItems: 1 }),
    /** Each retry is delayed by up to this fraction of the gap before it (jitter). */
    retryJitter: Type.Number({ minimum: 0, maximum: 1 }),
    /** A subscription whose deliveries failed without a success for this long is disabled. */
    disableAfterFailingHours: Type.Number({ exclusiveMinimum: 0 }),
    /** How long a rotated-out secret keeps signing beside the new one. */
    secretGraceHours: Type.Number({ minimum: 0 }),
    /** The fallback poll when no NOTIFY arrives (retries due, a lease of a dead instance expired). */
    pollMs: Type.Integer({ minimum: 10 }),
    /** Subscriptions sending at once per instance (each sends one delivery at a time). */
    maxConcurrentSubscriptions: Type.Integer({ minimum: 1 })
  }),
  sessions: Type.Object({
    ttlHours: Type.Number({ exclusiveMinimum: 0 }),
    idleMinutes: Type.Number({ exclusiveMinimum: 0 })
  }),
  errors: Type.Object({ baseUrl: Type.Union([Type.String(), Type.Null()]) }),
  jobs: Type.Object({ enabled: Type.Boolean(), processEverySeconds: Type.Number({ exclusiveMinimum: 0 }) }),
  logLevel: Type.Union([Type.Literal('debug'), Type.Literal('info'), Type.Literal('warn'), Type.Literal('error'), Type.Literal('silent')])
})

export type AppConfig = Static<typeof configSchema>

export type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] }

function merge(target: any, source: any): any {
  if (source === undefined) return target
  if (typeof source !== 'object' || source === null || Array.isArray(source)) return source
  const out: any = { ...(target ?? {}) }
  for (const [k, v] of Object.entries(source)) out[k] = merge(out[k], v)
  return out
}

/**
 * Loads node-config (config/default.json, NODE_ENV file, local.json, NODE_CONFIG,
 * environment variables), applies programmatic overrides and validates the result.
 */
export function loadConfig(overrides: DeepPartial<AppConfig> & Record<string, unknown> = {}): AppConfig {
  process.env.NODE_CONFIG_DIR ??= resolve(projectRoot, 'config')
  process.env.SUPPRESS_NO_CONFIG_WARNING = 'y'
  const require = createRequire(import.meta.url)
  const nodeConfig = require('config')
  const base = nodeConfig.util.toObject()
  // A test that supplies its own tenants replaces the configured ones rather than adding to them.
  const merged = merge(overrides.tenants ? { ...base, tenants: {} } : base, overrides)
  const ajv = new Ajv({ allErrors: true, strict: false })
  const validate = ajv.compile(configSchema)
  if (!validate(merged)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ')
    throw new Error(`Invalid configuration: ${problems}`)
  }
  const oidc = oidcConfigProblems(merged as AppConfig)
  if (oidc.length) throw new Error(`Invalid configuration: ${oidc.join('; ')}`)
  return merged as AppConfig
}

const loopbacks = new Set(['localhost', '127.0.0.1', '[::1]'])

/** Whether an issuer URL names this machine, the one place plain http is accepted (a provider started by a test or a developer). */
export function isLoopbackUrl(url: URL): boolean {
  return loopbacks.has(url.hostname)
}

/** What is wrong with the tenants' `oidc` blocks beyond their shape, each naming the tenant and the setting. */
export function oidcConfigProblems(config: AppConfig, env: NodeJS.ProcessEnv = process.env): string[] {
  const out: string[] = []
  for (const [id, tenant] of Object.entries(config.tenants)) {
    const o = tenant.oidc
    if (!o) continue
    const at = `/tenants/${id}/oidc`
    const issuer = URL.canParse(o.issuer) ? new URL(o.issuer) : undefined
    if (!issuer || !['https:', 'http:'].includes(issuer.protocol)) out.push(`${at}/issuer must be an absolute https URL (the provider's issuer identifier), not "${o.issuer}"`)
    else if (issuer.protocol === 'http:' && !isLoopbackUrl(issuer)) out.push(`${at}/issuer must use https (plain http only on localhost): "${o.issuer}"`)
    else if (issuer.search || issuer.hash) out.push(`${at}/issuer must have no query or fragment: "${o.issuer}"`)
    if ((o.clientSecret === undefined) === (o.clientSecretEnv === undefined)) out.push(`${at} must have exactly one of clientSecret and clientSecretEnv`)
    else if (o.clientSecretEnv !== undefined && !env[o.clientSecretEnv]) out.push(`${at}/clientSecretEnv names the environment variable ${o.clientSecretEnv}, which is not set`)
    const scopes = (o.scopes ?? defaultOidcScopes).split(' ').filter(Boolean)
    if (!scopes.includes('openid')) out.push(`${at}/scopes must include openid: "${o.scopes}"`)
    if (o.match === 'email' && !scopes.includes('email')) out.push(`${at}/scopes must include email when match is email: "${o.scopes}"`)
  }
  return out
}

export const defaultOidcScopes = 'openid email profile'
