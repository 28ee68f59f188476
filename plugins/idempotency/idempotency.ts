import { createHash } from 'node:crypto'
import type { HookContext, NextFunction } from '@feathersjs/feathers'
import type pg from 'pg'
import { ApiError, toProblem, type ProblemBody } from '../../core/errors/index.ts'
import type { App } from '../../core/declarations.ts'
import { logger } from '../../core/logger.ts'
import type { Plugin } from '../../core/plugin.ts'
import { idempotencyMigrations } from './migrations/index.ts'
import type { CallParams } from '../../core/hooks/call-params.ts'
import { claimKey, releaseKey, storeAnswer } from './idempotency.keys.ts'
import { tenantPool } from '../../core/db/tenant-scope.ts'

/**
 * Idempotency-Key for writes, as one around hook so every transport gets it, on the one
 * state machine of keys (idempotency.keys.ts). The key
 * is scoped to tenant + credential. The first request claims the key (`in_flight`);
 * a write stores its response inside its own transaction, so a crash can never leave
 * a committed write without its stored response. Retries within the retention
 * replay it with `Idempotent-Replayed: true`; the same key with another request is
 * 422; a retry while the first is still running is 409. 5xx outcomes release the key.
 */
export interface IdempotencyOptions {
  pool: pg.Pool
  retentionHours: number
  inFlightTimeoutSeconds: number
  errorsUrl: () => string
  /** Status and headers of a successful result, as the HTTP layer will send them. */
  responseOf(method: string, result: unknown): { status: number; headers: Record<string, string> }
}

/** Stable JSON for fingerprints: object keys sorted at every level. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`
  return JSON.stringify(v ?? null)
}

/** Replays a stored error exactly as it was first sent. */
class StoredProblem extends ApiError {
  constructor(body: ProblemBody) {
    super('bad-request', body.code, body.detail, {}, { 'Idempotent-Replayed': 'true' })
    this.replayBody = body
  }
}

export function idempotency(o: IdempotencyOptions) {
  return async (context: HookContext, next: NextFunction) => {
    const params = context.params as CallParams & { idempotency?: unknown; traceId?: string }
    const key = params.idempotencyKey
    if (key === undefined || !params.principal) return next()
    const { tenantId, credentialId } = params.principal
    const fingerprint = createHash('sha256')
      .update(
        canonical([
          context.path,
          context.method,
          context.id ?? params.id ?? null,
          context.data ?? null,
          params.ifMatch ?? null
        ])
      )
      .digest('hex')
    const id = { tenantId, credentialId, key }
    const claim = await claimKey(o.pool, id, fingerprint, {
      retentionHours: o.retentionHours,
      inFlightTimeoutSeconds: o.inFlightTimeoutSeconds,
      say: {
        reused:
          'This Idempotency-Key was already used with a different request (method, path or body). Use a new key for a new request.',
        inFlight: 'The first request with this Idempotency-Key is still being processed; retry after it completes.'
      }
    })
    if (!claim.claimed) {
      const { stored } = claim
      // An error's answer is the problem body this hook stored (below), never a service's result.
      if (stored.status >= 400) throw new StoredProblem(stored.body as ProblemBody)
      context.result = stored.body
      context.http = { status: stored.status, headers: { ...stored.headers, 'Idempotent-Replayed': 'true' } }
      return
    }

    let completed = false
    const store = async (
      db: pg.Pool | pg.PoolClient,
      status: number,
      body: unknown,
      headers: Record<string, string>
    ) => {
      await storeAnswer(db, id, { status, body, headers })
      completed = true
    }
    params.idempotency = {
      complete: (db: pg.PoolClient, body: unknown) => {
        const { status, headers } = o.responseOf(context.method, body)
        return store(db, status, body, headers)
      }
    }
    try {
      await next()
    } catch (err) {
      const { body, internal } = toProblem(err, params.traceId ?? 'unknown', o.errorsUrl())
      if (internal || body.status >= 500) {
        await releaseKey(o.pool, id).catch(() => undefined)
      } else {
        await store(o.pool, body.status, body, {}).catch((e) =>
          logger.error('could not store idempotent error response', { error: e.message })
        )
      }
      throw err
    }
    if (!completed) {
      const { status, headers } = o.responseOf(context.method, context.result)
      await store(o.pool, status, context.result, headers)
    }
  }
}

/** The idempotency hook of a plugin's writes, with the app's pool, retention and problem URLs. */
export function idempotencyFor(app: App, responseOf: IdempotencyOptions['responseOf']) {
  const { db, config } = app.get('platform')
  return idempotency({
    pool: db.pool,
    retentionHours: config.idempotency.retentionHours,
    inFlightTimeoutSeconds: config.idempotency.inFlightTimeoutSeconds,
    errorsUrl: () => app.get('errorsUrl'),
    responseOf
  })
}

/** Job body: deletes expired keys, tenant by tenant so each delete uses the (tenant_id, expires_at) index. */
export async function purgeExpiredKeys(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query('SELECT id FROM tenants')
  let removed = 0
  for (const { id } of rows) {
    const r = await tenantPool(pool, id).query(
      'DELETE FROM idempotency_keys WHERE tenant_id = $1 AND expires_at <= now()',
      [id]
    )
    removed += r.rowCount ?? 0
  }
  return removed
}

/** Idempotency keys: the hook is used by the writes of other plugins; this plugin brings the hourly purge. */
export const idempotencyPlugin: Plugin = {
  name: 'idempotency',
  migrations: idempotencyMigrations,
  configure: () => undefined,
  jobs: (app) => [
    {
      name: 'idempotency.purge',
      every: '1 hour',
      run: async () => ({ removed: await purgeExpiredKeys(app.get('platform').db.pool) })
    }
  ]
}
