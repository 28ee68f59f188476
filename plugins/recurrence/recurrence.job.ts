import type pg from 'pg'
import { systemPrincipal } from '../../core/auth/principal.ts'
import { clock, syncClock } from '../../core/clock.ts'
import { transaction } from '../../core/db/index.ts'
import type { Platform } from '../../core/declarations.ts'
import { handBack, type JobDefinition } from '../../core/jobs/index.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { RecurrenceEvery } from '../../core/modules/types.ts'
import { logger } from '../../core/logger.ts'
import { createRecords, createRules, referenceProblems } from '../records/records.shared.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'
import { validationError } from '../../core/validation.ts'

/**
 * The job `recurrence.create`: for every tenant's module with a `recurrence`, it makes the series the definition
 * implies (records.md "Recurrence"), then, for each active series whose next period has begun on the platform's clock,
 * creates that period's record through the records write path as a system principal (createRules, createRecords), in
 * one unit with the period's row (unique per series and period) and the series' next period. A series is locked while
 * it is worked on (another instance passes it by), so two instances, or a run after a crash, never make a period
 * twice; a crash loses the transaction under way and the next run makes what is missing, at most `catchUpPeriods` per
 * series and run (the rest at the runs after).
 *
 * Each period is its own unit (a SAVEPOINT in the batch's transaction): a record the module's rules refuse (or any
 * other failure of its write) rolls back that period's record and claim only, is logged once per series and period as
 * a warning naming tenant, module, series and the problem, and leaves the series waiting at that period (made, once the
 * module is fixed, with the catch-up); every other series, module and tenant goes on.
 */

/** The actor of recurring records. */
export const recurrenceActorName = 'recurrence'
/** Periods of one series one run makes at most (a long outage catches up over several runs). */
export const catchUpPeriods = 12
/** Series one transaction works on. */
const seriesBatch = 50

/** The period each series' refusal was last logged for (by series id): a refusal is logged once per series and period. */
type RefusalLog = Map<string, number>

/** A recurrence's period as a PostgreSQL interval; period k of a series begins at `starts_at + k * interval`. */
export function intervalOf(every: RecurrenceEvery): string {
  if (typeof every === 'object') return `${every.days} days`
  return { day: '1 day', week: '7 days', month: '1 month', year: '1 year' }[every]
}

/** The series a module's recurrence implies, made when first seen; a series on a deleted record is ended. */
async function ensureSeries(pool: pg.Pool, tenantId: string, m: RegisteredModule, now: Date) {
  const r = m.definition.recurrence!
  const key = m.definition.key
  const per = r.per ? m.fields.get(r.per) : undefined
  if (!per) {
    await pool.query(
      `INSERT INTO record_series (tenant_id, module_key, per_value, starts_at) VALUES ($1, $2, '', $3) ON CONFLICT DO NOTHING`,
      [tenantId, key, now]
    )
  } else if (per.type === 'singleChoice') {
    const options = per.options.map((o) => (typeof o === 'string' ? o : o.value))
    await pool.query(
      `INSERT INTO record_series (tenant_id, module_key, per_value, starts_at)
       SELECT $1, $2, v, $4 FROM unnest($3::text[]) AS v ON CONFLICT DO NOTHING`,
      [tenantId, key, options, now]
    )
  } else if (per.type === 'recordRef') {
    // A series per live record of the referenced module. Records a series made (of any module: they have a row in
    // record_series_periods) start none, and when the module references itself, neither do its records with the
    // reference set (a review does not start a series of reviews of its own). Without that, two modules each
    // recurring per record of the other (an audit per finding, a finding per audit) start a series for each record
    // the other's series make, and the records multiply day after day (2, 9, 76, 1145...). The exclusion is made
    // here, not by refusing the pair at load: it also bounds cycles through three modules, through packages loaded
    // at different times, and through tenants with different module sets, and a pair with records people make still
    // works (each series recurs per record made by hand).
    //
    // A series starts when its record was created, but not longer than one period before it is first seen (a
    // module installed, or given a recurrence, after records were made long ago): its first record is then made at
    // once, then one a period, instead of years of records caught up in one go.
    const self = per.module === key
    await pool.query(
      `INSERT INTO record_series (tenant_id, module_key, per_value, starts_at)
       SELECT $1, $2, x.id::text, greatest(x.created_at, $4::timestamptz - $5::interval) FROM records x
        WHERE x.tenant_id = $1 AND x.module_key = $3 AND x.deleted_at IS NULL
          ${self ? `AND x.payload->>'${per.key}' IS NULL` : ''}
          AND NOT EXISTS (SELECT 1 FROM record_series_periods p WHERE p.tenant_id = $1 AND p.record_id = x.id)
          AND NOT EXISTS (SELECT 1 FROM record_series s WHERE s.tenant_id = $1 AND s.module_key = $2 AND s.per_value = x.id::text)
       ON CONFLICT DO NOTHING`,
      [tenantId, key, per.module, now, intervalOf(r.every)]
    )
    await pool.query(
      `UPDATE record_series s SET state = 'ended', updated_at = now(), updated_by = $3::jsonb
         FROM records x WHERE s.tenant_id = $1 AND s.module_key = $2 AND s.state <> 'ended'
          AND x.tenant_id = s.tenant_id AND x.id = s.per_value::uuid AND x.deleted_at IS NOT NULL`,
      [tenantId, key, JSON.stringify(systemPrincipal(tenantId, recurrenceActorName).actor)]
    )
  }
}

/**
 * Makes the records of a batch of due series, each period in its own SAVEPOINT; a refused period is rolled back,
 * logged (once per series and period, `logged`) and its series added to `refused` (passed by for the rest of the run).
 * Returns how many it made and whether more series may be due.
 */
async function makeDue(
  pool: pg.Pool,
  tenants: TenantDirectory,
  tenantId: string,
  m: RegisteredModule,
  now: Date,
  refused: Set<string>,
  logged: RefusalLog
) {
  const r = m.definition.recurrence!
  const interval = intervalOf(r.every)
  const principal = systemPrincipal(tenantId, recurrenceActorName)
  return transaction(pool, async (client) => {
    const { rows: series } = await client.query<{ id: string; per_value: string; next_period: number }>(
      `SELECT id, per_value, next_period FROM record_series
        WHERE tenant_id = $1 AND module_key = $2 AND state = 'active' AND starts_at + next_period * $3::interval <= $4
          AND NOT (id = ANY($6::uuid[]))
        ORDER BY starts_at + next_period * $3::interval, id LIMIT $5 FOR UPDATE SKIP LOCKED`,
      [tenantId, m.definition.key, interval, now, seriesBatch, [...refused]]
    )
    let made = 0
    for (const s of series) {
      const { rows: periods } = await client.query<{ period: number; at: Date }>(
        `SELECT g AS period, x.starts_at + g * $3::interval AS at
           FROM record_series x, generate_series(x.next_period, x.next_period + $5 - 1) AS g
          WHERE x.tenant_id = $1 AND x.id = $2 AND x.starts_at + g * $3::interval <= $4 ORDER BY g`,
        [tenantId, s.id, interval, now, catchUpPeriods]
      )
      let done = 0
      for (const p of periods) {
        await client.query('SAVEPOINT series_period')
        try {
          const given = { ...structuredClone(r.payload ?? {}), ...(r.per ? { [r.per]: s.per_value } : {}) }
          // What the rules return is what is stored: defaults filled in, computed fields computed.
          const { payload, changes } = createRules(principal, m, given)
          // References, as every writer checks them before the write path (the `per` record may be gone since).
          const [refs] = await referenceProblems(client, tenants, tenantId, m, [{ payload }])
          if (refs.length) throw validationError(refs)
          const [created] = await createRecords(
            client,
            { tenantId, actor: principal.actor },
            m,
            [{ payload, changes }],
            { at: p.at }
          )
          // The claim: a period made twice breaks this key and rolls the record back with it.
          await client.query(
            'INSERT INTO record_series_periods (tenant_id, series_id, period, record_id, at) VALUES ($1, $2, $3, $4, $5)',
            [tenantId, s.id, p.period, created.id, p.at]
          )
          await client.query('RELEASE SAVEPOINT series_period')
        } catch (err) {
          // A failed rollback (the connection lost) fails the batch, as before: only the period's own failure is kept.
          await client.query('ROLLBACK TO SAVEPOINT series_period')
          refused.add(s.id)
          if (logged.get(s.id) !== p.period) {
            logged.set(s.id, p.period)
            logger.warn('recurring record refused', {
              tenantId,
              module: m.definition.key,
              series: s.id,
              per: s.per_value || undefined,
              period: p.period,
              error: (err as Error).message
            })
          }
          break
        }
        done++
      }
      made += done
      if (done)
        await client.query(
          'UPDATE record_series SET next_period = next_period + $3, updated_at = now() WHERE tenant_id = $1 AND id = $2',
          [tenantId, s.id, done]
        )
    }
    return { made, more: series.length === seriesBatch }
  })
}

/** `recurrence.create`, every `jobs.datesEverySeconds`. */
export function recurrenceJob(platform: Platform): JobDefinition {
  const logged: RefusalLog = new Map()
  return {
    name: 'recurrence.create',
    every: `${platform.config.jobs.datesEverySeconds} seconds`,
    concurrency: 1,
    // A run killed mid-way is taken over this soon by another instance (each series' transaction commits on its own).
    lockLifetimeMs: 10_000,
    async run(_data, job) {
      await syncClock()
      const now = clock().now()
      let made = 0
      for (const tenant of platform.tenants.list())
        for (const m of tenant.modules.values()) {
          if (!m.definition.recurrence) continue
          // One module's failure (beyond a refused record, which makeDue keeps to its series) is logged and passed by:
          // the other modules and tenants go on.
          const refused = new Set<string>()
          try {
            await ensureSeries(platform.db.pool, tenant.id, m, now)
            for (;;) {
              if (job.signal.aborted) return handBack()
              const batch = await makeDue(platform.db.pool, platform.tenants, tenant.id, m, now, refused, logged)
              made += batch.made
              await job.touch()
              if (!batch.more) break
            }
          } catch (err) {
            if (job.signal.aborted) return handBack()
            logger.warn('recurrence failed for a module', {
              tenantId: tenant.id,
              module: m.definition.key,
              error: (err as Error).message
            })
          }
        }
      return { made }
    }
  }
}
