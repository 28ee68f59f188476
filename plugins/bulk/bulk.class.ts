import type { IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import type { Params } from '@feathersjs/feathers'
import { assertCan, assertScope, can } from '../../core/auth/access.ts'
import { requirePrincipal, type Principal } from '../../core/auth/principal.ts'
import { ApiError, problems } from '../../core/errors/index.ts'
import type { Limiter } from '../../core/limits/limiter.ts'
import { assertValid } from '../../core/validation.ts'
import { claimBulkKey, type BulkKey } from './bulk.idempotency.ts'
import { BulkRun, leaseMs, type BulkOptions } from './bulk.run.ts'
import { bulkQueryValidator, type BulkQuery } from './bulk.schema.ts'

export interface BulkParams extends Params<BulkQuery> {
  principal?: Principal
  route?: { moduleKey?: string }
  headers?: Record<string, string | undefined>
  /** The request body, unread: set by the HTTP layer for this route only. */
  bodyStream?: IncomingMessage
}

export interface BulkServiceOptions extends BulkOptions {
  limiter?: Limiter
  concurrencyFor(tenantId: string): number
  retentionHours: number
}

const ndjsonTypes = ['application/x-ndjson', 'application/ndjson', 'application/jsonl']

/**
 * `POST /api/modules/{moduleKey}/bulk`: NDJSON in, NDJSON out, both streamed. What can
 * be refused for the whole call (credential, module, rights, media type, concurrency,
 * key) is a problem response before the stream starts; after that every row gets its
 * own outcome line, and a final summary line gives the counts.
 */
export class BulkService {
  constructor(private readonly o: BulkServiceOptions) {}

  async create(_data: unknown, params: BulkParams): Promise<Readable> {
    const principal = requirePrincipal(params, 'A bulk call')
    const input = params.bodyStream
    if (!input) throw problems.badRequest('bulk.no_body', 'A bulk call reads its body as a stream; call it over HTTP.')
    const query = { ...(params.query ?? {}) }
    assertValid<BulkQuery>(bulkQueryValidator, query)
    const module = this.o.tenants.module(principal.tenantId, params.route?.moduleKey ?? '')
    assertScope(principal, 'bulk:write', module.definition.key)
    if (!can(principal, module, 'create') && !can(principal, module, 'update')) assertCan(principal, module, 'create')
    const type = (params.headers?.['content-type'] ?? '').split(';')[0].trim().toLowerCase()
    if (!ndjsonTypes.includes(type)) {
      throw new ApiError('unsupported-media-type', 'request.unsupported_media_type', `Send the rows as application/x-ndjson, one JSON object per line (got ${type || 'no Content-Type'}).`)
    }
    const dryRun = query.dryRun === true
    let lease
    if (this.o.limiter) {
      const limit = this.o.concurrencyFor(principal.tenantId)
      const slot = await this.o.limiter.acquire(`bulk:${principal.tenantId}`, limit, leaseMs)
      if (!slot.lease) {
        const retryAfter = 5
        throw new ApiError('rate-limited', 'bulk.too_many_concurrent', `This tenant already runs ${slot.active} bulk calls, its limit of ${limit} at once. Retry when one has finished.`, { limit }, { 'Retry-After': String(retryAfter) })
      }
      lease = slot.lease
    }
    try {
      const header = params.headers?.['idempotency-key']
      // A dry run writes nothing, so there is nothing to make idempotent.
      const key: BulkKey | undefined = header !== undefined && !dryRun ? { tenantId: principal.tenantId, credentialId: principal.credentialId, key: header } : undefined
      if (key) await claimBulkKey(this.o.pool, key, module.definition.key, { retentionHours: this.o.retentionHours, inFlightTimeoutSeconds: this.o.inFlightTimeoutSeconds })
      const run = new BulkRun(this.o, principal, module, dryRun, key, lease)
      void run.run(input)
      return run.out
    } catch (err) {
      await lease?.release()
      throw err
    }
  }
}
