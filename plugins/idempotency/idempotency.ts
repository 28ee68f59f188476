import { createHash } from 'node:crypto'
import type { HookContext, NextFunction } from '@feathersjs/feathers'
import type pg from 'pg'
import { ApiError, problems, toProblem, type ProblemBody } from '../../core/errors/index.ts'
import type { App } from '../../core/declarations.ts'
import { logger } from '../../core/logger.ts'
import type { Plugin } from '../../core/plugin.ts'
import type { CallParams } from '../../core/hooks/call-params.ts'
import { assertIdempotencyKey } from '../../core/http/idempotency-key.ts'
import { tenantPool } from '../../core/db/tenant-scope.ts'

/**
 * Idempotency-Key for writes, as one around hook so every transport gets it. The key
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
  responseOf(method: string, result: any): { status: number; headers: Record<string, string> }
}

/** Stable JSON for fingerprints: object keys sorted at every level. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as any)[k])}`)
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
    assertIdempotencyKey(key)
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
    const ids = [tenantId, credentialId, key]

    const claim = await o.pool.query(
      `INSERT INTO idempotency_keys (tenant_id, credential_id, key, fingerprint, state, locked_until, expires_at)
       VALUES ($1, $2, $3, $4, 'in_flight', now() + make_interval(secs => $5), now() + make_interval(hours => $6))
       ON CONFLICT (tenant_id, credential_id, key) DO UPDATE
         SET fingerprint = excluded.fingerprint, state = 'in_flight', status = NULL, body = NULL, headers = NULL,
             locked_until = excluded.locked_until, created_at = now(), expires_at = excluded.expires_at
         WHERE idempotency_keys.expires_at <= now()
            OR (idempotency_keys.state = 'in_flight' AND idempotency_keys.locked_until <= now() AND idempotency_keys.fingerprint = excluded.fingerprint)
       RETURNING key`,
      [...ids, fingerprint, o.inFlightTimeoutSeconds, o.retentionHours]
    )
    if (!claim.rowCount) {
      const { rows } = await o.pool.query(
        'SELECT fingerprint, state, status, body, headers FROM idempotency_keys WHERE tenant_id = $1 AND credential_id = $2 AND key = $3',
        ids
      )
      const stored = rows[0]
      if (!stored)
        throw problems.conflict(
          'idempotency.in_flight',
          'A request with this Idempotency-Key is being processed; retry shortly.'
        )
      if (stored.fingerprint !== fingerprint) {
        throw problems.unprocessable(
          'idempotency.key_reused',
          'This Idempotency-Key was already used with a different request (method, path or body). Use a new key for a new request.'
        )
      }
      if (stored.state === 'in_flight')
        throw problems.conflict(
          'idempotency.in_flight',
          'The first request with this Idempotency-Key is still being processed; retry after it completes.'
        )
      if (stored.status >= 400) throw new StoredProblem(stored.body)
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
      await db.query(
        `UPDATE idempotency_keys SET state = 'done', status = $4, body = $5, headers = $6, locked_until = NULL WHERE tenant_id = $1 AND credential_id = $2 AND key = $3`,
        [...ids, status, JSON.stringify(body), headers]
      )
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
        await o.pool
          .query('DELETE FROM idempotency_keys WHERE tenant_id = $1 AND credential_id = $2 AND key = $3', ids)
          .catch(() => undefined)
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
  configure: () => undefined,
  jobs: (app) => [
    {
      name: 'idempotency.purge',
      every: '1 hour',
      run: async () => ({ removed: await purgeExpiredKeys(app.get('platform').db.pool) })
    }
  ]
}
