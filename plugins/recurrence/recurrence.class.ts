import type { Params } from '@feathersjs/feathers'
import type pg from 'pg'
import { assertCan, can, hiddenFields } from '../../core/auth/access.ts'
import { requirePrincipal, type Principal } from '../../core/auth/principal.ts'
import { clock } from '../../core/clock.ts'
import { isoUtc as iso } from '../../core/db/index.ts'
import { problems } from '../../core/errors/index.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'
import { assertValid, isUuid, validationError } from '../../core/validation.ts'
import { intervalOf } from './recurrence.job.ts'
import {
  seriesPatchValidator,
  seriesQueryValidator,
  type SeriesOut,
  type SeriesPatch,
  type SeriesQuery
} from './recurrence.schema.ts'

interface SeriesParams extends Params<SeriesQuery> {
  principal?: Principal
}

/** The columns of a series as the API shows it; `$interval` is its module's period. */
const columns = (interval: string) => `s.id, s.module_key AS "moduleKey", s.per_value AS "perValue", s.state,
  ${iso('s.starts_at')} AS "startsAt", s.next_period AS "nextPeriod",
  ${iso(`(s.starts_at + s.next_period * ${interval}::interval)`)} AS "nextAt", ${iso('s.updated_at')} AS "updatedAt",
  (SELECT count(*)::int FROM record_series_periods p WHERE p.tenant_id = s.tenant_id AND p.series_id = s.id) AS made,
  (SELECT p.record_id FROM record_series_periods p WHERE p.tenant_id = s.tenant_id AND p.series_id = s.id
    ORDER BY p.period DESC LIMIT 1) AS "lastRecordId"`

/**
 * The series of a module's recurrence (plugins/recurrence): listed with the module's `read` right, paused, resumed
 * and ended with its `update` right. The job makes them and their records (recurrence.job.ts).
 */
export class SeriesService {
  constructor(
    private readonly pool: pg.Pool,
    private readonly tenants: TenantDirectory
  ) {}

  /** The module, once the caller holds `action` on it (before anything of its definition is told). */
  private module(principal: Principal, key: string, action: 'read' | 'update'): RegisteredModule {
    const m = this.tenants.module(principal.tenantId, key)
    assertCan(principal, m, action)
    if (!m.definition.recurrence)
      throw validationError([
        {
          pointer: '/moduleKey',
          field: 'moduleKey',
          code: 'filter',
          detail: `module "${key}" declares no recurrence, so it has no series`
        }
      ])
    return m
  }

  /**
   * A series as the caller may see it: its `per` value is the field's, so a caller who may not read the field (an
   * access rule) or, for a reference, the module it references is not told it, as the records would not tell them.
   */
  private out(principal: Principal, m: RegisteredModule, row: Record<string, unknown>): SeriesOut {
    const { perValue, ...rest } = row
    const per = m.definition.recurrence!.per
    if (!per) return { ...rest, per: null } as SeriesOut
    const field = m.fields.get(per)
    const referenced =
      field?.type === 'recordRef' ? this.tenants.get(principal.tenantId)?.modules.get(field.module) : undefined
    const told =
      !hiddenFields(principal, m).has(per) &&
      (field?.type !== 'recordRef' || (!!referenced && can(principal, referenced, 'read')))
    return { ...rest, per: { field: per, value: told ? String(perValue) : null } } as SeriesOut
  }

  async find(params: SeriesParams): Promise<{ items: SeriesOut[] }> {
    const principal = requirePrincipal(params, 'A record series call')
    const query = { ...(params.query ?? {}) }
    assertValid<SeriesQuery>(seriesQueryValidator, query)
    const m = this.module(principal, query.moduleKey, 'read')
    const { rows } = await this.pool.query(
      `SELECT ${columns('$4')} FROM record_series s
        WHERE s.tenant_id = $1 AND s.module_key = $2 AND ($3::text IS NULL OR s.state = $3)
        ORDER BY s.per_value, s.id LIMIT 1000`,
      [principal.tenantId, m.definition.key, query.state ?? null, intervalOf(m.definition.recurrence!.every)]
    )
    return { items: rows.map((r) => this.out(principal, m, r)) }
  }

  private async load(principal: Principal, id: string, action: 'read' | 'update') {
    const missing = () => problems.notFound('series.not_found', `No record series ${id} in this tenant.`)
    if (!isUuid(id)) throw missing()
    const { rows } = await this.pool.query('SELECT module_key FROM record_series WHERE tenant_id = $1 AND id = $2', [
      principal.tenantId,
      id
    ])
    if (!rows[0]) throw missing()
    return this.module(principal, rows[0].module_key, action)
  }

  private async read(principal: Principal, m: RegisteredModule, id: string): Promise<SeriesOut> {
    const { rows } = await this.pool.query(
      `SELECT ${columns('$3')} FROM record_series s WHERE s.tenant_id = $1 AND s.id = $2`,
      [principal.tenantId, id, intervalOf(m.definition.recurrence!.every)]
    )
    return this.out(principal, m, rows[0])
  }

  async get(id: string, params: SeriesParams): Promise<SeriesOut> {
    const principal = requirePrincipal(params, 'A record series call')
    const m = await this.load(principal, String(id), 'read')
    return this.read(principal, m, String(id))
  }

  /** Pauses, resumes or ends a series. Resuming skips the periods that began while it was paused, but for the current one. */
  async patch(id: string, data: SeriesPatch, params: SeriesParams): Promise<SeriesOut> {
    const principal = requirePrincipal(params, 'A record series call')
    assertValid<SeriesPatch>(seriesPatchValidator, data)
    const m = await this.load(principal, String(id), 'update')
    const interval = intervalOf(m.definition.recurrence!.every)
    const { rows } = await this.pool.query(
      `UPDATE record_series s SET state = $3, updated_at = now(), updated_by = $4::jsonb,
          next_period = CASE WHEN s.state = 'paused' AND $3 = 'active'
            THEN greatest(s.next_period, (SELECT max(g) FROM generate_series(s.next_period, s.next_period + 100000) g
                                           WHERE s.starts_at + g * $5::interval <= $6))
            ELSE s.next_period END
        WHERE s.tenant_id = $1 AND s.id = $2 AND s.state <> 'ended'
        RETURNING s.id`,
      [principal.tenantId, String(id), data.state, JSON.stringify(principal.actor), interval, clock().now()]
    )
    if (!rows[0] && data.state !== 'ended')
      throw problems.conflict('series.ended', `Record series ${id} has ended; an ended series does not start again.`)
    return this.read(principal, m, String(id))
  }
}
