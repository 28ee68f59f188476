import { readFileSync } from 'node:fs'
import t from '../helpers/tap.ts'
import { configSchema, loadConfig } from '../../core/config.ts'
import { configKeys, derivedEnvName } from '../../core/config-keys.ts'
import { defaults, referenceFile, renderReference, valueAt, withReference } from '../../scripts/config-reference.ts'

const keys = configKeys(configSchema)

/** Every setting of config/default.json: objects walked into, but `tenants` (a map) is one setting. */
function leaves(value: unknown, path: string[] = []): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || path.join('.') === 'tenants')
    return [path.join('.')]
  return Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]))
}

t.test(
  'every setting of config/default.json is a setting of the schema, and every setting of the schema has a default there',
  async (t) => {
    const inSchema = new Set(keys.map((k) => k.key))
    const inDefaults = leaves(defaults())
    t.same(
      inDefaults.filter((k) => !inSchema.has(k)),
      [],
      'config/default.json has no setting the schema lacks'
    )
    t.same(
      keys.filter((k) => valueAt(defaults(), k.path) === undefined).map((k) => k.key),
      [],
      'every setting has a default'
    )
  }
)

t.test('every setting has a description and an environment variable of its own', async (t) => {
  t.same(
    keys.filter((k) => !k.description).map((k) => k.key),
    [],
    'a setting without a description: add `description` to its schema in core/config.ts'
  )
  const seen = new Map<string, string>()
  for (const k of keys) {
    t.notOk(seen.has(k.env), `${k.env} names ${k.key}${seen.has(k.env) ? ` and ${seen.get(k.env)}` : ''}`)
    seen.set(k.env, k.key)
  }
})

t.test(
  'the operator reference in docs/operations.md lists every setting and is up to date (npm run docs:config)',
  async (t) => {
    const text = readFileSync(referenceFile, 'utf8')
    for (const k of keys) t.ok(text.includes(`| \`${k.key}\` | \`${k.env}\` |`), `${k.key} is in the reference`)
    t.equal(withReference(text, renderReference()), text, 'the reference is what npm run docs:config writes')
  }
)

/** loadConfig with `env` set for the call. */
function withEnv<T>(env: Record<string, string>, fn: () => T): T {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]))
  Object.assign(process.env, env)
  try {
    return fn()
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  }
}

t.test('every setting is read from its environment variable, by its type', async (t) => {
  t.equal(derivedEnvName(['limits', 'requestsPerMinute']), 'RECORDS_LIMITS_REQUESTS_PER_MINUTE')
  const config = withEnv(
    {
      RECORDS_LIMITS_REQUESTS_PER_MINUTE: '77',
      RECORDS_WEBHOOKS_ALLOW_HTTP: 'true',
      RECORDS_HTTP_TRUST_PROXY: '10.0.0.0/8, 192.168.1.1',
      RECORDS_HTTP_CORS_ORIGINS: '["https://app.example.com"]',
      RECORDS_WEBHOOKS_RETRY_SCHEDULE_MS: '0,1000,5000',
      RECORDS_TENANTS: '{"acme":{"name":"Acme","modules":["incident"]}}',
      REDIS_PREFIX: 'env-prefix:',
      S3_FORCE_PATH_STYLE: 'false',
      RECORDS_EVENTS_RETENTION_DAYS: '0.5',
      DATABASE_URL: ''
    },
    () => loadConfig()
  )
  t.equal(config.limits.requestsPerMinute, 77)
  t.equal(config.webhooks.allowHttp, true)
  t.same(config.http.trustProxy, ['10.0.0.0/8', '192.168.1.1'], 'a comma-separated list')
  t.same(config.http.cors.origins, ['https://app.example.com'], 'a JSON list')
  t.same(config.webhooks.retryScheduleMs, [0, 1000, 5000], 'a list of numbers')
  t.same(Object.keys(config.tenants), ['acme'], 'a map as JSON')
  t.equal(config.redis.prefix, 'env-prefix:')
  t.equal(config.attachments.s3.forcePathStyle, false)
  t.equal(config.events.retentionDays, 0.5)
  t.equal(config.database.url, null, 'an empty variable counts as unset')
  t.equal(
    withEnv({ RECORDS_LIMITS_REQUESTS_PER_MINUTE: '77' }, () => loadConfig({ limits: { requestsPerMinute: 5 } })).limits
      .requestsPerMinute,
    5,
    'settings given in code win'
  )
})

t.test('a variable that does not read as its setting stops start-up, naming both', async (t) => {
  t.throws(
    () => withEnv({ RECORDS_LIMITS_REQUESTS_PER_MINUTE: 'lots' }, () => loadConfig()),
    /RECORDS_LIMITS_REQUESTS_PER_MINUTE \(limits\.requestsPerMinute\) must be a number, not "lots"/
  )
  t.throws(
    () => withEnv({ RECORDS_JOBS_ENABLED: 'yes' }, () => loadConfig()),
    /RECORDS_JOBS_ENABLED \(jobs\.enabled\) must be true or false/
  )
  t.throws(() => withEnv({ RECORDS_TENANTS: '{acme}' }, () => loadConfig()), /RECORDS_TENANTS \(tenants\) must be JSON/)
  t.throws(
    () => withEnv({ RECORDS_LIMITS_REQUESTS_PER_MINUTE: '0' }, () => loadConfig()),
    /Invalid configuration: \/limits\/requestsPerMinute must be >= 1/
  )
})
