import { Type, type Static } from '@feathersjs/typebox'
import { Ajv } from 'ajv'
import { resolve } from 'node:path'
import { createRequire } from 'node:module'
import { projectRoot } from './paths.ts'
import { withEnvSettings } from './config-keys.ts'
import { httpConfigProblems } from './http/http-config.ts'

const LimitsConfig = Type.Object(
  {
    requestsPerMinute: Type.Integer({
      minimum: 1,
      description: 'Requests per credential in any 60-second window (sliding).'
    }),
    bulkConcurrency: Type.Integer({ minimum: 1, description: 'Bulk loads running at once per tenant.' }),
    exportConcurrency: Type.Integer({ minimum: 1, description: 'Export jobs running at once per tenant.' }),
    attachmentUrlsPerMinute: Type.Integer({ minimum: 1, description: 'Signed upload URLs per credential per minute.' }),
    signInAttemptsPerMinute: Type.Integer({
      minimum: 1,
      description: 'Password attempts per user name and per client address per minute.'
    }),
    requestBudget: Type.Integer({
      minimum: 1,
      description:
        'Work units one request may do (core/limits/budget.ts): fields resolved, rows read, array elements touched, lookups.'
    }),
    budgetUnitsPerRequest: Type.Integer({
      minimum: 1,
      description:
        'Units of work that count as one request against requestsPerMinute (an expensive request counts as several).'
    })
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
    tokenEndpointAuthMethod: Type.Optional(
      Type.Union([Type.Literal('client_secret_basic'), Type.Literal('client_secret_post')])
    ),
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

/**
 * Where clients come from behind a load balancer (core/http/client-address.ts) and which
 * browser origins may call the API (core/http/cors.ts).
 */
const HttpConfig = Type.Object({
  maxJsonBytes: Type.Integer({ minimum: 1024, description: 'Largest JSON request body, in bytes.' }),
  trustProxy: Type.Array(Type.String({ minLength: 1 }), {
    description:
      'Addresses or CIDR ranges of the proxies in front (load balancer, ingress) whose `X-Forwarded-For` is believed: the client address, which rate limits and sign-in throttling count by, is the last address in that header not in these ranges. Empty: the peer address, and `X-Forwarded-For` is ignored.'
  }),
  cors: Type.Object({
    origins: Type.Array(Type.String({ minLength: 1 }), {
      description:
        'Browser origins (`https://app.example.com`) whose pages may call the API, or `*` for any; empty: same-origin pages only.'
    }),
    credentials: Type.Boolean({
      description:
        'Let those origins send the session cookie (Access-Control-Allow-Credentials), acting as the signed-in user; never with `*`. Bearer tokens need no credentials.'
    }),
    maxAgeSeconds: Type.Integer({
      minimum: 0,
      maximum: 86400,
      description: 'How long a browser may cache a preflight answer (Access-Control-Max-Age).'
    })
  })
})

const LogLevel = Type.Union([
  Type.Literal('debug'),
  Type.Literal('info'),
  Type.Literal('warn'),
  Type.Literal('error'),
  Type.Literal('silent')
])

/** The request and job lines, and a log file beside stderr (README, "Logs"). */
const LogConfig = Type.Object({
  requests: Type.Union(LogLevel.anyOf, {
    env: 'LOG_REQUESTS',
    description: 'Level of the one line per request (`silent`: none).'
  }),
  jobs: Type.Union(LogLevel.anyOf, {
    env: 'LOG_JOBS',
    description: 'Level of the one line per job run (a failed run is `error`).'
  }),
  file: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
    env: 'LOG_FILE',
    description:
      'Also write the log to this file (appended; `{pid}` in the path becomes the process id), at `log.fileLevel` whatever `logLevel` says. Unset: stderr only.'
  }),
  fileLevel: Type.Union(LogLevel.anyOf, {
    env: 'LOG_FILE_LEVEL',
    description: 'Least severe level written to `log.file`.'
  }),
  fileMaxBytes: Type.Integer({
    minimum: 65536,
    env: 'LOG_FILE_MAX_BYTES',
    description: 'Past this size `log.file` becomes `<file>.1` (replacing the previous one) and a new file starts.'
  })
})

/**
 * Every setting carries its `description` and, where it is not the derived
 * `RECORDS_<PATH>`, its environment variable (`env`): core/config-keys.ts reads the
 * environment with them, and `npm run docs:config` writes the operator reference
 * (docs/operations.md) from them, defaults from config/default.json.
 */
export const configSchema = Type.Object({
  host: Type.String({ env: 'HOST', description: 'Address the HTTP server listens on (`0.0.0.0` in a container).' }),
  port: Type.Integer({
    minimum: 0,
    maximum: 65535,
    env: 'PORT',
    description: 'Port of the HTTP server; 0 takes a free one.'
  }),
  publicUrl: Type.Union([Type.String(), Type.Null()], {
    env: 'PUBLIC_URL',
    description:
      'The URL clients reach the service at (behind a load balancer, its https URL): links, signed URLs and the sign-in origin check use it. Unset: `http://<host>:<port>`.'
  }),
  database: Type.Object({
    url: Type.Union([Type.String(), Type.Null()], {
      env: 'DATABASE_URL',
      description: 'PostgreSQL connection URL; unset: the embedded PostgreSQL below.'
    }),
    poolSize: Type.Integer({ minimum: 1, description: "Connections in this instance's pool." }),
    role: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
      env: 'DATABASE_ROLE',
      description:
        'Role the pool acts as (a startup option of each connection), so PostgreSQL\'s row-level security applies to it: made at start-up when the database user may, granted what the service needs. The URL\'s own user when it is already a plain role (no superuser, no BYPASSRLS); docs/operations.md, "Tenancy in the database".'
    }),
    embedded: Type.Object({
      dataDir: Type.String({
        env: 'RECORDS_DATA_DIR',
        description: 'Folder of the embedded PostgreSQL cluster (when `database.url` is unset).'
      }),
      port: Type.Integer({
        minimum: 1,
        maximum: 65535,
        env: 'EMBEDDED_PG_PORT',
        description: 'Port of the embedded PostgreSQL.'
      })
    })
  }),
  modules: Type.Object({
    directories: Type.Array(Type.String(), { description: 'Folders holding tenant module packages.' }),
    packages: Type.Array(Type.String(), { description: 'Tenant module packages installed from npm, by name.' })
  }),
  tenants: Type.Record(Type.String({ pattern: '^[a-z][a-z0-9-]{0,62}$' }), TenantConfig, {
    description:
      'Tenants by id, synced to the database at start: `name`, `modules` (installed module keys), optional `limits` (any of `limits.*`, for that tenant: enterprise plans) and `oidc` (single sign-on, docs/identity-and-access.md).'
  }),
  http: HttpConfig,
  pagination: Type.Object({
    defaultLimit: Type.Integer({ minimum: 1, description: 'Page size of a list that asks for none.' }),
    maxLimit: Type.Integer({ minimum: 1, description: 'Largest page size a list may ask for.' })
  }),
  idempotency: Type.Object({
    retentionHours: Type.Number({
      exclusiveMinimum: 0,
      description: 'How long the stored answer of a request with an `Idempotency-Key` is replayed.'
    }),
    inFlightTimeoutSeconds: Type.Number({
      exclusiveMinimum: 0,
      description: 'A key whose request has not answered after this long (its instance died) may be run again.'
    })
  }),
  events: Type.Object({
    retentionDays: Type.Number({
      exclusiveMinimum: 0,
      description:
        'Events older than this leave the events feed (the hourly `events.purge` job; user and group events stay in the identity audit trail); a feed cursor past removed events is 410.'
    })
  }),
  redis: Type.Object({
    url: Type.Union([Type.String(), Type.Null()], {
      env: 'REDIS_URL',
      description: 'Shares rate-limit windows and concurrency slots across instances; unset: in memory (one instance).'
    }),
    prefix: Type.String({ env: 'REDIS_PREFIX', description: 'Prefix of every Redis key the service writes.' })
  }),
  limits: LimitsConfig,
  attachments: Type.Object({
    driver: Type.Union([Type.Literal('local'), Type.Literal('s3')], {
      env: 'ATTACHMENTS_DRIVER',
      description:
        'Where files are kept: `local` (a folder; one instance) or `s3` (any S3-compatible service; several instances).'
    }),
    maxBytes: Type.Integer({ minimum: 1, description: 'Largest file accepted, in bytes.' }),
    contentTypes: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      description: 'Content types accepted (exact, or `type/*`).'
    }),
    uploadUrlSeconds: Type.Integer({ minimum: 1, description: 'How long a signed upload URL is valid.' }),
    downloadUrlSeconds: Type.Integer({ minimum: 1, description: 'How long a signed download URL is valid.' }),
    pendingHours: Type.Number({
      exclusiveMinimum: 0,
      description: 'Pending uploads older than this are removed by the attachments.purge job.'
    }),
    local: Type.Object({
      dir: Type.String({ minLength: 1, env: 'ATTACHMENTS_DIR', description: 'Folder of the local driver.' })
    }),
    s3: Type.Object({
      endpoint: Type.Union([Type.String(), Type.Null()], {
        env: 'S3_ENDPOINT',
        description: 'Endpoint URL of an S3-compatible service (MinIO, Ceph…); unset: AWS S3 in `region`.'
      }),
      region: Type.String({ env: 'S3_REGION', description: 'Region of the bucket.' }),
      bucket: Type.String({ env: 'S3_BUCKET', description: 'Bucket of the files.' }),
      accessKeyId: Type.Union([Type.String(), Type.Null()], {
        env: 'S3_ACCESS_KEY_ID',
        description: "Access key; unset: the AWS SDK's default chain (AWS_* variables, instance role)."
      }),
      secretAccessKey: Type.Union([Type.String(), Type.Null()], {
        env: 'S3_SECRET_ACCESS_KEY',
        description: 'Secret of the access key.'
      }),
      forcePathStyle: Type.Boolean({
        env: 'S3_FORCE_PATH_STYLE',
        description: 'Path-style URLs (`<endpoint>/<bucket>/<key>`), as MinIO and most S3-compatible services need.'
      })
    })
  }),
  exports: Type.Object({
    fileHours: Type.Number({
      exclusiveMinimum: 0,
      description: 'Hours a finished export file can be downloaded before the exports.purge job removes it.'
    }),
    maxAttempts: Type.Integer({
      minimum: 1,
      description: 'Attempts before a job is failed (a job whose process died is picked up again).'
    }),
    lockSeconds: Type.Integer({
      minimum: 1,
      description: "How long a running job's lock holds without renewal; after it, another instance takes the job over."
    }),
    pageSize: Type.Integer({
      minimum: 1,
      maximum: 5000,
      description:
        "Rows an export reads per page from the records service: its own reads, which may pass pagination.maxLimit (a client's pages do not)."
    }),
    pdfMaxRows: Type.Integer({
      minimum: 1,
      description:
        'Rows a PDF export may hold; asking for more is refused (422 export.too_many_rows). CSV and XLSX have no cap.'
    })
  }),
  bulk: Type.Object({
    maxRows: Type.Integer({ minimum: 1, description: 'Rows per call; rows past it get an error outcome each.' }),
    batchSize: Type.Integer({ minimum: 1, description: 'Rows per transaction.' }),
    flushAfterMs: Type.Integer({
      minimum: 1,
      description:
        'A batch is written at the latest this long after its first row arrived (first outcomes stream early).'
    })
  }),
  webhooks: Type.Object({
    dispatch: Type.Boolean({
      description: 'Run the webhook dispatcher on this instance (LISTEN/NOTIFY on commit, and a poll).'
    }),
    allowHttp: Type.Boolean({
      description: 'Accept plain `http://` target URLs (development, tests); https only otherwise.'
    }),
    allowedCidrs: Type.Array(Type.String({ minLength: 1 }), {
      description:
        'Address ranges (CIDR) a target may resolve to although private, loopback or link-local, e.g. `127.0.0.1/32` in tests.'
    }),
    timeoutMs: Type.Integer({
      minimum: 1,
      description: 'How long one delivery may take, connection to the last byte read.'
    }),
    dnsTimeoutMs: Type.Integer({
      minimum: 1,
      description: "How long resolving a target's host name may take before it is refused."
    }),
    retryScheduleMs: Type.Array(Type.Integer({ minimum: 0 }), {
      minItems: 1,
      description:
        'When each attempt is due, in ms after the first (the first is 0): its length is the number of attempts.'
    }),
    retryJitter: Type.Number({
      minimum: 0,
      maximum: 1,
      description: 'Each retry is delayed by up to this fraction of the gap before it (jitter).'
    }),
    disableAfterFailingHours: Type.Number({
      exclusiveMinimum: 0,
      description: 'A subscription whose deliveries failed without a success for this long is disabled.'
    }),
    secretGraceHours: Type.Number({
      minimum: 0,
      description: 'How long a rotated-out secret keeps signing beside the new one.'
    }),
    pollMs: Type.Integer({
      minimum: 10,
      description: 'The fallback poll when no NOTIFY arrives (retries due, a lease of a dead instance expired).'
    }),
    maxConcurrentSubscriptions: Type.Integer({
      minimum: 1,
      description: 'Subscriptions sending at once per instance (each sends one delivery at a time).'
    })
  }),
  sessions: Type.Object({
    ttlHours: Type.Number({ exclusiveMinimum: 0, description: 'Longest life of a browser session.' }),
    idleMinutes: Type.Number({ exclusiveMinimum: 0, description: 'A session unused this long ends.' })
  }),
  errors: Type.Object({
    baseUrl: Type.Union([Type.String(), Type.Null()], {
      env: 'ERRORS_URL',
      description: 'Base of the `type` URL of problem bodies; unset: `<publicUrl>/errors`.'
    })
  }),
  jobs: Type.Object({
    enabled: Type.Boolean({
      description: 'Run jobs (exports, purges…) on this instance; one without still enqueues them for the others.'
    }),
    processEverySeconds: Type.Number({
      exclusiveMinimum: 0,
      description:
        'How often the scheduler looks for due jobs (new jobs arrive by NOTIFY at once; the scan finds those of dead instances).'
    }),
    datesEverySeconds: Type.Number({
      exclusiveMinimum: 0,
      description:
        'How often the date jobs run: overdue events, date-triggered transitions and recurring records (docs/modules.md).'
    })
  }),
  clock: Type.Object({
    controllable: Type.Boolean({
      description:
        'Let the platform_clock row move the time every instance reads (`records clock set`; due dates, overdue, date-triggered transitions, recurrence): for tests and staging only. Refused under NODE_ENV=production.'
    }),
    refreshMs: Type.Integer({
      minimum: 50,
      description:
        'How often an instance with a controllable clock re-reads the platform_clock row (jobs read it afresh each run).'
    })
  }),
  shutdown: Type.Object({
    deadlineSeconds: Type.Number({
      exclusiveMinimum: 0,
      description:
        'On SIGTERM or SIGINT, how long requests and bulk calls under way have, once the listener has closed (after `shutdown.readinessDelaySeconds`), to finish (running jobs hand back at once); then the rest is cut, and 3 s later the process exits whatever remains (README, "Health and shutdown"). Keep the delay plus this plus 3 s under the supervisor\'s kill timeout (Kubernetes: terminationGracePeriodSeconds, 30 by default).'
    }),
    readinessDelaySeconds: Type.Number({
      minimum: 0,
      description:
        'How long the listener stays open after readiness turns 503, serving as usual, so that a load balancer that probes `/readyz` stops sending before the port closes. 0: closed at once.'
    })
  }),
  health: Type.Object({
    timeoutMs: Type.Integer({
      minimum: 1,
      description: 'How long each readiness check (database, jobs, Redis) may take before `/readyz` answers 503.'
    })
  }),
  metrics: Type.Object({
    enabled: Type.Boolean({
      env: 'METRICS_ENABLED',
      description:
        'Serve Prometheus metrics (`GET /metrics`) on a listener of their own, never on the API port (README, "Metrics").'
    }),
    host: Type.String({
      env: 'METRICS_HOST',
      description:
        'Address the metrics listener binds (loopback by default: open it to the scraper only, e.g. `0.0.0.0` in a container).'
    }),
    port: Type.Integer({
      minimum: 0,
      maximum: 65535,
      env: 'METRICS_PORT',
      description:
        'Port of the metrics listener; 0 takes a free one. A port already in use is logged and the API runs on without metrics.'
    })
  }),
  logLevel: Type.Union(
    [Type.Literal('debug'), Type.Literal('info'), Type.Literal('warn'), Type.Literal('error'), Type.Literal('silent')],
    {
      env: 'LOG_LEVEL',
      description: 'Least severe log level written (JSON lines on stderr).'
    }
  ),
  log: LogConfig
})

export type AppConfig = Static<typeof configSchema>

export type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] }

function merge(target: unknown, source: unknown): unknown {
  if (source === undefined) return target
  if (typeof source !== 'object' || source === null || Array.isArray(source)) return source
  const out: Record<string, unknown> = { ...(typeof target === 'object' && target !== null ? target : {}) }
  for (const [k, v] of Object.entries(source)) out[k] = merge(out[k], v)
  return out
}

/**
 * Loads node-config (config/default.json, NODE_ENV file, local.json, NODE_CONFIG), then
 * each setting's environment variable (configKeys: one per setting, derived from the
 * schema), then programmatic overrides, and validates the result.
 */
export function loadConfig(overrides: DeepPartial<AppConfig> & Record<string, unknown> = {}): AppConfig {
  process.env.NODE_CONFIG_DIR ??= resolve(projectRoot, 'config')
  process.env.SUPPRESS_NO_CONFIG_WARNING = 'y'
  const require = createRequire(import.meta.url)
  const nodeConfig = require('config')
  const base = withEnvSettings(nodeConfig.util.toObject(), configSchema, process.env)
  // A test that supplies its own tenants replaces the configured ones rather than adding to them.
  const merged = merge(overrides.tenants ? { ...base, tenants: {} } : base, overrides)
  const ajv = new Ajv({ allErrors: true, strict: false })
  const validate = ajv.compile(configSchema)
  if (!validate(merged)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ')
    throw new Error(`Invalid configuration: ${problems}`)
  }
  const meaning = [...oidcConfigProblems(merged as AppConfig), ...httpConfigProblems((merged as AppConfig).http)]
  if (meaning.length) throw new Error(`Invalid configuration: ${meaning.join('; ')}`)
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
    if (!issuer || !['https:', 'http:'].includes(issuer.protocol))
      out.push(`${at}/issuer must be an absolute https URL (the provider's issuer identifier), not "${o.issuer}"`)
    else if (issuer.protocol === 'http:' && !isLoopbackUrl(issuer))
      out.push(`${at}/issuer must use https (plain http only on localhost): "${o.issuer}"`)
    else if (issuer.search || issuer.hash) out.push(`${at}/issuer must have no query or fragment: "${o.issuer}"`)
    if ((o.clientSecret === undefined) === (o.clientSecretEnv === undefined))
      out.push(`${at} must have exactly one of clientSecret and clientSecretEnv`)
    else if (o.clientSecretEnv !== undefined && !env[o.clientSecretEnv])
      out.push(`${at}/clientSecretEnv names the environment variable ${o.clientSecretEnv}, which is not set`)
    const scopes = (o.scopes ?? defaultOidcScopes).split(' ').filter(Boolean)
    if (!scopes.includes('openid')) out.push(`${at}/scopes must include openid: "${o.scopes}"`)
    if (o.match === 'email' && !scopes.includes('email'))
      out.push(`${at}/scopes must include email when match is email: "${o.scopes}"`)
  }
  return out
}

export const defaultOidcScopes = 'openid email profile'
