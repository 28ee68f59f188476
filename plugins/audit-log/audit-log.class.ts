import type { Params } from '@feathersjs/feathers'
import type pg from 'pg'
import { assertCan, hiddenFields, redactActivity, rowRule } from '../../core/auth/access.ts'
import { hasScope } from '../../core/auth/scopes.ts'
import { attachmentKey, type StorageDriver } from '../../core/storage/driver.ts'
import { requirePrincipal, type Principal } from '../../core/auth/principal.ts'
import { problems } from '../../core/errors/index.ts'
import { isoUtc as iso } from '../../core/db/index.ts'
import type { CursorCodec } from '../../core/pagination/cursor.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'
import { assertValid, validationError } from '../../core/validation.ts'
import { readableRecord, view } from '../records/records.shared.ts'
import { auditLogQueryValidator, type AuditLogQuery } from './audit-log.schema.ts'

interface AuditParams extends Params<AuditLogQuery> {
  principal?: Principal
}

/**
 * The audit log: every change to every record, including soft-deleted ones.
 * `?recordId=` gives one record's last state (payload included) and full activity;
 * `?moduleKey=` pages through a module's activity in order (filter with `action`).
 */
export class AuditLogService {
  private readonly validateQuery
  constructor(
    private readonly o: {
      pool: pg.Pool
      tenants: TenantDirectory
      cursors: CursorCodec
      defaultLimit: number
      maxLimit: number
      storage: StorageDriver
      downloadUrlSeconds: number
    }
  ) {
    this.validateQuery = auditLogQueryValidator(o.maxLimit)
  }

  async find(params: AuditParams) {
    const principal = requirePrincipal(params, 'An audit-log call')
    const query = { ...(params.query ?? {}) }
    assertValid<AuditLogQuery>(this.validateQuery, query)
    if (query.recordId) {
      const found = await readableRecord({ db: this.o.pool, tenants: this.o.tenants }, principal, query.recordId)
      if (!found)
        throw problems.notFound('record.not_found', `No record ${query.recordId} for this tenant, live or deleted.`)
      const { row, module } = found
      const { activity, ...record } = view(principal, module, row)
      // The audit log is where a deleted record's files stay reachable: each comes with a short-lived download URL.
      if (hasScope(principal.scopes, 'attachments:read', module.definition.key)) {
        const expiresAt = new Date(Date.now() + this.o.downloadUrlSeconds * 1000)
        record.attachments = await Promise.all(
          (record.attachments ?? []).map(async (a) => ({
            ...a,
            download: await this.o.storage.signDownload({
              key: attachmentKey(principal.tenantId, row.id, a.id),
              contentType: a.contentType,
              fileName: a.fileName,
              expiresAt
            })
          }))
        )
      }
      return { record, items: activity ?? [], nextCursor: null }
    }
    if (!query.moduleKey) {
      throw validationError([
        { pointer: '/recordId', field: 'recordId', code: 'required', detail: 'or moduleKey is required' }
      ])
    }
    const module = this.o.tenants.module(principal.tenantId, query.moduleKey)
    assertCan(principal, module, 'read')
    const rule = rowRule(principal, module)
    const limit = query.limit ?? this.o.defaultLimit
    const scope = JSON.stringify([
      'audit',
      principal.tenantId,
      query.moduleKey,
      query.action ?? null,
      rule ? [rule.key, rule.bindings] : null
    ])
    const after = query.cursor ? Number(this.o.cursors.decode(query.cursor, scope)[0]) : 0
    const values: unknown[] = [principal.tenantId, query.moduleKey, after, limit + 1]
    if (query.action) values.push(query.action)
    // The row rule is written with ? placeholders over `records r`; number them after the others.
    let i = 0
    const ruleSql = rule ? `AND ${rule.sql.replace(/\?/g, () => `$${values.push(rule.bindings[i++])}`)}` : ''
    const { rows } = await this.o.pool.query(
      // The feed pages by the table's identity (inside the sealed cursor only); an item's id is its position in its record's activity, as on the record.
      `SELECT a.id AS position, (SELECT count(*)::int FROM record_activity b WHERE b.tenant_id = a.tenant_id AND b.record_id = a.record_id AND b.id <= a.id) AS id,
              ${iso('a.at')} AS at, a.actor, a.action, a.changes, a.transition, a.comment, a.record_id AS "recordId", r.number AS "recordNumber"
         FROM record_activity a JOIN records r ON r.tenant_id = a.tenant_id AND r.id = a.record_id
        WHERE a.tenant_id = $1 AND r.module_key = $2 AND a.id > $3 ${query.action ? 'AND a.action = $5' : ''} ${ruleSql}
        ORDER BY a.id LIMIT $4`,
      values
    )
    const page = rows.slice(0, limit)
    const items = redactActivity(
      page.map(({ position, ...item }) => item),
      hiddenFields(principal, module)
    )
    const nextCursor = rows.length > limit ? this.o.cursors.encode(scope, [page[page.length - 1].position]) : null
    return { items, nextCursor, limit }
  }
}
