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
    signInAttemptsPerMinute: Type.Integer({ minimum: 1 })
  },
  { additionalProperties: false }
)

const TenantConfig = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1 })),
    modules: Type.Array(Type.String({ pattern: '^[a-z][a-z0-9-]*$' }), { uniqueItems: true }),
    /** Enterprise plans: any of the limits, raised (or lowered) for this tenant. */
    limits: Type.Optional(Type.Partial(LimitsConfig))
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
  return merged as AppConfig
}
