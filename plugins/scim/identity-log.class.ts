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
      type: Type.Optional(Type.Union(identityEventTypes.map((t) => Type.Literal(t)), { description: 'Only changes of this kind' })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: maxLimit, description: 'Page size' })),
      cursor: Type.Optional(Type.String({ minLength: 1, description: 'The `nextCursor` of the previous page, with the same filters' }))
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

  async find(params: CallParams<IdentityLogQuery>) {
    const p = requirePrincipal(params, 'An identity-log call')
    assertScope(p, 'scim')
    if (!isAdmin(p)) throw problems.forbidden('permission.denied', 'The identity log is for admins: it needs a credential acting with the admin role.', { missing: 'admin' })
    const query = { ...(params.query ?? {}) }
    assertValid<IdentityLogQuery>(this.validate, query)
    const limit = query.limit ?? this.o.defaultLimit
    const scope = JSON.stringify(['identity-log', p.tenantId, query.subjectId ?? null, query.type ?? null])
    const after = query.cursor ? Number(this.o.cursors.decode(query.cursor, scope)[0]) : 0
    const values: unknown[] = [p.tenantId, after, limit + 1, query.type ? [query.type] : identityEventTypes]
    const subject = query.subjectId ? `AND subject_id = $${values.push(query.subjectId)}` : ''
    // Only events of transactions that ended before every one still running: a page never steps past a change still committing.
    const { rows } = await this.o.pool.query(
      `SELECT position, id, type, ${iso('occurred_at')} AS "occurredAt", actor, subject_id AS "subjectId", data
         FROM events WHERE tenant_id = $1 AND position > $2 AND type = ANY($4::text[]) ${subject} AND txid < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY position LIMIT $3`,
      values
    )
    const page = rows.slice(0, limit)
    const nextCursor = rows.length > limit ? this.o.cursors.encode(scope, [page[page.length - 1].position]) : null
    return { items: page.map(({ position, ...e }) => e), nextCursor, limit }
  }
}
