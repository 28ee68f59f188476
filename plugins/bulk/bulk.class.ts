import type { IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import { assertCan, assertScope, can } from '../../core/auth/access.ts'
import { requirePrincipal } from '../../core/auth/principal.ts'
import { ApiError, problems } from '../../core/errors/index.ts'
import type { Limiter } from '../../core/limits/limiter.ts'
import { assertValid } from '../../core/validation.ts'
import { claimBulkKey, endBulkKey, type BulkKey } from './bulk.idempotency.ts'
import { holdsSeveralObjects, newlinesMissingDetail, splitLines, type RawLine } from './bulk.lines.ts'
import { BulkRun, leaseMs, type BulkOptions } from './bulk.run.ts'
import { bulkQueryValidator, type BulkQuery } from './bulk.schema.ts'
import type { CallParams } from '../../core/hooks/call-params.ts'

export interface BulkParams extends CallParams<BulkQuery> {
  /** The route's module: `api/modules/:moduleKey/bulk`. */
  route?: { moduleKey?: string }
  /** The body's media type is checked from here (REST). */
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
      throw new ApiError(
        'unsupported-media-type',
        'request.unsupported_media_type',
        `Send the rows as application/x-ndjson, one JSON object per line (got ${type || 'no Content-Type'}).`
      )
    }
    const dryRun = query.dryRun === true
    const firstLine = query.firstLine ?? 1
    let lease
    if (this.o.limiter) {
      const limit = this.o.concurrencyFor(principal.tenantId)
      const slot = await this.o.limiter.acquire(`bulk:${principal.tenantId}`, limit, leaseMs)
      if (!slot.lease) {
        const retryAfter = 5
        throw new ApiError(
          'rate-limited',
          'bulk.too_many_concurrent',
          `This tenant already runs ${slot.active} bulk calls, its limit of ${limit} at once. Retry when one has finished.`,
          { limit },
          { 'Retry-After': String(retryAfter) }
        )
      }
      lease = slot.lease
    }
    try {
      const header = params.idempotencyKey
      // A dry run writes nothing, so there is nothing to make idempotent.
      const key: BulkKey | undefined =
        header !== undefined && !dryRun
          ? { tenantId: principal.tenantId, credentialId: principal.credentialId, key: header }
          : undefined
      if (key)
        await claimBulkKey(
          this.o.pool,
          key,
          { moduleKey: module.definition.key, firstLine },
          { retentionHours: this.o.retentionHours, inFlightTimeoutSeconds: this.o.inFlightTimeoutSeconds }
        )
      let lines
      try {
        lines = await refuseLostNewlines(splitLines(input, this.o.maxLineBytes))
      } catch (err) {
        // Nothing was written under the key: free it for the corrected body.
        if (key) await endBulkKey(this.o.pool, key, undefined)
        throw err
      }
      const run = new BulkRun(this.o, principal, module, dryRun, key, lease, firstLine)
      void run.run(lines)
      return run.out
    } catch (err) {
      await lease?.release()
      throw err
    }
  }
}

/** As BulkRun skips them: empty, or only spaces and tabs. */
const isBlank = (raw: RawLine) => raw.bytes !== undefined && raw.bytes.every((b) => b === 0x20 || b === 0x09)

/**
 * Reads up to the first row and refuses the whole call (400 `bulk.newlines_missing`,
 * before anything is written) when it holds several JSON objects back to back: the
 * body lost its newlines, as `curl -d @file` does, and every "row" would fail. The rest
 * of the body is drained first, so the client gets the answer rather than a reset.
 * Otherwise returns the lines with the ones already read put back in front.
 */
async function refuseLostNewlines(lines: AsyncGenerator<RawLine[]>): Promise<AsyncIterable<RawLine[]>> {
  const read: RawLine[][] = []
  try {
    for (;;) {
      const next = await lines.next()
      if (next.done) break
      read.push(next.value)
      const first = next.value.find((line) => !isBlank(line))
      if (!first) continue
      if (!holdsSeveralObjects(first.bytes ?? first.head!)) break
      for await (const _ of lines);
      throw new ApiError('bad-request', 'bulk.newlines_missing', newlinesMissingDetail('The first row of the body'))
    }
  } catch (err) {
    if (err instanceof ApiError) throw err
    throw problems.badRequest('request.aborted', 'The request body ended before it was complete.')
  }
  return (async function* () {
    yield* read
    yield* lines
  })()
}
