import type { Params } from '@feathersjs/feathers'
import type pg from 'pg'
import { assertCan, assertScope } from '../../core/auth/access.ts'
import { isAdmin, requirePrincipal, type Principal } from '../../core/auth/principal.ts'
import { problems } from '../../core/errors/index.ts'
import { eventKinds } from '../../core/events/events.ts'
import { readableModules, redactEvent, visibleEvents } from '../../core/events/rights.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { CursorCodec } from '../../core/pagination/cursor.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'
import { assertValid, validationError } from '../../core/validation.ts'
import { before, feedStart, purgedThrough, readFeed, type FeedPlace } from './events-feed.repository.ts'
import { feedDefaultLimit, eventsFeedQueryValidator, type EventsFeedQuery } from './events-feed.schema.ts'
import { eventEnvelope } from './events-feed.shared.ts'

interface FeedParams extends Params<EventsFeedQuery> {
  principal?: Principal
}

/**
 * GET /api/v1/events: the tenant's events in order, for clients that poll instead of
 * receiving webhooks or catch up after an outage. The cursor is sealed and carries only
 * the place of an event of the caller's own tenant (never a count of all tenants' events),
 * and an empty page hands back the cursor it was given, so polling shows nothing of other
 * tenants' activity. Which events the caller sees, and what of them, is core/events/rights.ts,
 * the decision webhook deliveries take for their subscription's owner too.
 */
export class EventsFeedService {
  private readonly validateQuery
  constructor(
    private readonly o: {
      pool: pg.Pool
      tenants: TenantDirectory
      cursors: CursorCodec
      maxLimit: number
      retentionDays: number
    }
  ) {
    this.validateQuery = eventsFeedQueryValidator(o.maxLimit)
  }

  async find(params: FeedParams) {
    const principal = requirePrincipal(params, 'An events feed call')
    const query = { ...(params.query ?? {}) }
    assertValid<EventsFeedQuery>(this.validateQuery, query)
    assertScope(principal, 'events:read')
    const types = query.types ? [...new Set(query.types.split(','))] : undefined
    const unknown = types?.filter((t) => !(t in eventKinds))
    if (unknown?.length) {
      throw validationError([
        {
          pointer: '/types',
          field: 'types',
          code: 'enum',
          detail: `has unknown event types: ${unknown.join(', ')}`,
          allowed: Object.keys(eventKinds)
        }
      ])
    }
    const modules = this.readableModules(principal, query.moduleKey)
    const admin = isAdmin(principal)
    if (!modules.length && !admin)
      throw problems.forbidden(
        'permission.denied',
        'This credential may read no module of the tenant, so no event of it.',
        { missing: 'read' }
      )
    const where = visibleEvents(principal, modules, !query.moduleKey)
    if (types) {
      where.sql = `(${where.sql}) AND e.type = ANY(?)`
      where.values.push(types)
    }

    const scope = JSON.stringify(['events', principal.tenantId])
    const purged = await purgedThrough(this.o.pool, principal.tenantId)
    let after: FeedPlace = purged ?? feedStart
    if (query.after) {
      const [txid, position] = this.o.cursors.decode(query.after, scope)
      if (
        typeof txid !== 'string' ||
        typeof position !== 'string' ||
        !/^\d{1,20}$/.test(txid) ||
        !/^\d{1,20}$/.test(position)
      ) {
        throw problems.badRequest(
          'cursor.invalid',
          'The cursor is not one this service issued for the events feed; pass back the nextCursor of the previous page.'
        )
      }
      after = { txid, position }
      if (purged && before(after, purged)) {
        throw problems.gone(
          'events.cursor_expired',
          `Events after this cursor were older than the ${this.o.retentionDays}-day retention and have been removed. Resync the data you keep from its source (e.g. the records list), then read the feed again without a cursor.`
        )
      }
    }
    const limit = query.limit ?? Math.min(feedDefaultLimit, this.o.maxLimit)
    const rows = await readFeed(this.o.pool, principal.tenantId, after, where, limit + 1, this.o.retentionDays)
    const page = rows.slice(0, limit)
    const last = page.length ? page[page.length - 1] : after
    const installed = this.o.tenants.get(principal.tenantId)?.modules
    return {
      items: page.map((row) =>
        eventEnvelope(
          principal.tenantId,
          redactEvent(principal, row.moduleKey ? installed?.get(row.moduleKey) : undefined, row)
        )
      ),
      nextCursor: this.o.cursors.encode(scope, [last.txid, last.position]),
      hasMore: rows.length > limit,
      limit
    }
  }

  /** The tenant's modules whose events the caller may read (the one asked for, checked). */
  private readableModules(principal: Principal, moduleKey: string | undefined): RegisteredModule[] {
    if (moduleKey) {
      const module = this.o.tenants.module(principal.tenantId, moduleKey)
      assertCan(principal, module, 'read')
      return [module]
    }
    return readableModules(principal, this.o.tenants.get(principal.tenantId)?.modules.values() ?? [])
  }
}
