import { Type, type Static } from '@feathersjs/typebox'
import type pg from 'pg'
import { assertScope } from '../../core/auth/access.ts'
import { isAdmin, requirePrincipal } from '../../core/auth/principal.ts'
import { isoUtc as iso } from '../../core/db/index.ts'
import { identityEventKinds } from '../../core/events/events.ts'
import { problems } from '../../core/errors/index.ts'
import type { CallParams } from '../../core/hooks/call-params.ts'
import type { CursorCodec } from '../../core/pagination/cursor.ts'
import { assertValid, compileQuery } from '../../core/validation.ts'

/** The kinds the identity log shows: every change of users and groups (kept whatever the events feed's retention). */
export const identityEventTypes = identityEventKinds

export const identityLogQuerySchema = (maxLimit: number) =>
  Type.Object(
    {
      subjectId: Type.Optional(Type.String({ format: 'uuid', description: 'Only changes of this user or group' })),
      type: Type.Optional(
        Type.Union(
          identityEventTypes.map((t) => Type.Literal(t)),
          { description: 'Only changes of this kind' }
        )
      ),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: maxLimit, description: 'Page size' })),
      cursor: Type.Optional(
        Type.String({ minLength: 1, description: 'The `nextCursor` of the previous page, with the same filters' })
      )
    },
    { title: 'IdentityLogQuery', additionalProperties: false }
  )
type IdentityLogQuery = Static<ReturnType<typeof identityLogQuerySchema>>

/**
 * The identity audit trail: who provisioned, changed, deactivated or deleted which user or
 * group, and which roles that granted or took away, oldest first. Read from the events the
 * directory writes in each change's own transaction (core/auth/directory-log.ts), so it holds
 * exactly the changes that committed, from SCIM and the CLI alike. Admins only.
 */
export class IdentityLogService {
  private readonly validate
  constructor(private readonly o: { pool: pg.Pool; cursors: CursorCodec; defaultLimit: number; maxLimit: number }) {
    this.validate = compileQuery(identityLogQuerySchema(o.maxLimit))
  }

  /** The place a cursor names: (txid, position); a cursor issued before (the position alone) by its event's place. */
  private async place(tenantId: string, decoded: unknown[]): Promise<{ txid: string; position: string }> {
    const invalid = () =>
      problems.badRequest(
        'cursor.invalid',
        'The cursor is not one this service issued for this query; pass back the nextCursor of the previous page with the same filters.'
      )
    const digits = (v: unknown): v is string => typeof v === 'string' && /^\d{1,20}$/.test(v)
    if (decoded.length === 2 && digits(decoded[0]) && digits(decoded[1]))
      return { txid: decoded[0], position: decoded[1] }
    if (decoded.length === 1 && Number.isSafeInteger(Number(decoded[0]))) {
      const { rows } = await this.o.pool.query(
        'SELECT txid::text AS txid, position::text AS position FROM events WHERE tenant_id = $1 AND position = $2',
        [tenantId, Number(decoded[0])]
      )
      if (rows[0]) return rows[0]
    }
    throw invalid()
  }

  async find(params: CallParams<IdentityLogQuery>) {
    const p = requirePrincipal(params, 'An identity-log call')
    assertScope(p, 'scim')
    if (!isAdmin(p))
      throw problems.forbidden(
        'permission.denied',
        'The identity log is for admins: it needs a credential acting with the admin role.',
        { missing: 'admin' }
      )
    const query = { ...(params.query ?? {}) }
    assertValid<IdentityLogQuery>(this.validate, query)
    const limit = query.limit ?? this.o.defaultLimit
    const scope = JSON.stringify(['identity-log', p.tenantId, query.subjectId ?? null, query.type ?? null])
    const after = query.cursor
      ? await this.place(p.tenantId, this.o.cursors.decode(query.cursor, scope))
      : { txid: '0', position: '0' }
    const values: unknown[] = [
      p.tenantId,
      after.txid,
      after.position,
      limit + 1,
      query.type ? [query.type] : identityEventTypes
    ]
    const subject = query.subjectId ? `AND subject_id = $${values.push(query.subjectId)}` : ''
    // In (txid, position) order, and only events of transactions that ended before every one still running: every
    // transaction below that bound has ended, so no change can commit later before a cursor (by position alone, one
    // that took a lower position and committed after a higher one was read would be stepped over).
    const { rows } = await this.o.pool.query(
      `SELECT txid::text AS txid, position::text AS position, id, type, ${iso('occurred_at')} AS "occurredAt", actor, subject_id AS "subjectId", data
         FROM events WHERE tenant_id = $1 AND (txid, position) > ($2::xid8, $3::bigint) AND type = ANY($5::text[]) ${subject}
          AND txid < records_event_horizon()
        ORDER BY txid, position LIMIT $4`,
      values
    )
    const page = rows.slice(0, limit)
    const last = page[page.length - 1]
    const nextCursor = rows.length > limit ? this.o.cursors.encode(scope, [last.txid, last.position]) : null
    return { items: page.map(({ txid, position, ...e }) => e), nextCursor, limit }
  }
}
