import type pg from 'pg'
import { systemPrincipal } from '../../core/auth/principal.ts'
import { clock, syncClock, utcDay } from '../../core/clock.ts'
import { transaction } from '../../core/db/index.ts'
import type { Platform } from '../../core/declarations.ts'
import { eventType, insertEvents } from '../../core/events/events.ts'
import { handBack, type JobContext, type JobDefinition } from '../../core/jobs/index.ts'
import { fieldToFilter } from '../../core/modules/derive/filters.ts'
import { logger } from '../../core/logger.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import { moveLocked } from './records.migrate.ts'
import { recordColumns, type RecordRow } from './records.repository.ts'
import { transitionRules } from './records.rules.ts'
import { changeRecords, type RecordChangeOp } from './records.write.ts'

/**
 * Dates that act on records (issue 30), on the platform's clock (core/clock.ts):
 * - a module's due date (`due`): the `overdue` list filter, and the job `records.overdue`, which writes one
 *   `record.overdue` event per record and due date;
 * - date-triggered transitions (`auto: { after }`): the job `records.auto-transitions` fires them as a system
 *   principal through the same rules and write path as a client's transition.
 * Both jobs are safe on every instance at once and after a crash: the event's row and the event are one statement
 * keyed by (tenant, record, due date); a transition locks its record and moves it out of the state it fires from.
 */

/** The actor of what dates do: the system, named, so activity and events say the clock did it. */
export const dateActorName = 'date-rules'

/**
 * A date or date-time field over `r.payload` (the expression its filter index holds), the clock's `now` for it, and
 * the one condition that it has passed: `passed(at)`, `at` the placeholder `now` is bound to (`?` for knex, `$4` for
 * pg). A date is due by the end of its day (UTC): passed from the next day on.
 */
function dateOf(
  m: RegisteredModule,
  key: string
): { expr: string; now: (at: Date) => string; passed: (at: string) => string } {
  const f = m.fields.get(key)!
  const expr = fieldToFilter[f.type as 'date' | 'datetime']!.expr(key, 'r.payload')
  const [now, cast] = f.type === 'date' ? [utcDay, 'date'] : [(at: Date) => at.toISOString(), 'timestamptz']
  return { expr, now, passed: (at) => `${expr} < ${at}::${cast}` }
}

/** That a record is overdue: its due date passed (`at`) while it is not in a state where it stops counting (`until`). */
const overdueSql = (m: RegisteredModule, at: string, until: string) =>
  `${dateOf(m, m.definition.due!.field).passed(at)} AND r.state <> ALL(${until}::text[])`

/** The states in which a record's due date no longer counts: the declared ones, else the final states. */
export function dueUntil(m: RegisteredModule): string[] {
  return m.definition.due?.until ?? m.definition.workflow.states.filter((s) => s.final).map((s) => s.key)
}

/** A SQL condition (knex `?` bindings) over `r` that a record of the module is (or is not) overdue at `at`. */
export function overdueCondition(
  m: RegisteredModule,
  overdue: boolean,
  at: Date
): { sql: string; bindings: unknown[] } {
  const sql = overdueSql(m, '?', '?')
  const bindings = [dateOf(m, m.definition.due!.field).now(at), dueUntil(m)]
  return overdue ? { sql, bindings } : { sql: `NOT coalesce(${sql}, false)`, bindings }
}

/** The due date as its event names it: the date, or the instant in UTC (the same instant written otherwise is the same due date). */
const dueText = (m: RegisteredModule, expr: string) =>
  m.fields.get(m.definition.due!.field)!.type === 'date'
    ? `(${expr})::text`
    : `to_char((${expr}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/** Records one statement of `records.overdue` marks at most. */
const overdueBatch = 500

/**
 * Writes the `record.overdue` events of a tenant's module that are due at `at`, a batch per statement: each overdue
 * record without a row for its due date gets the row and its event in the same statement (ON CONFLICT DO NOTHING: a
 * writer that lost the race writes neither). Returns how many it wrote.
 */
export async function markOverdue(pool: pg.Pool, tenantId: string, m: RegisteredModule, at: Date): Promise<number> {
  const key = m.definition.due!.field
  const d = dateOf(m, key)
  const due = dueText(m, d.expr)
  let total = 0
  for (;;) {
    const { rows } = await pool.query({
      text: `WITH d AS (
          SELECT r.tenant_id, r.id, r.module_key, r.number, r.version, ${due} AS due FROM records r
           WHERE r.tenant_id = $1 AND r.module_key = $2 AND r.deleted_at IS NULL
             AND ${overdueSql(m, '$3', '$4')}
             AND NOT EXISTS (SELECT 1 FROM record_overdue o WHERE o.tenant_id = r.tenant_id AND o.record_id = r.id AND o.due = ${due})
           ORDER BY r.seq LIMIT $5),
        c AS (INSERT INTO record_overdue (tenant_id, record_id, due) SELECT tenant_id, id, due FROM d
              ON CONFLICT DO NOTHING RETURNING tenant_id, record_id, due),
        x AS (SELECT d.*, c.due AS marked FROM c JOIN d ON d.id = c.record_id),
        e AS (${insertEvents(
          {
            tenantId: 'x.tenant_id',
            type: eventType('record.overdue'),
            actor: '$6::jsonb',
            moduleKey: 'x.module_key',
            subjectId: 'x.id',
            data: "jsonb_build_object('number', x.number, 'version', x.version, 'field', $7::text, 'due', x.marked)"
          },
          'x',
          'x.id'
        )})
        SELECT count(*)::int AS n FROM x`,
      values: [
        tenantId,
        m.definition.key,
        d.now(at),
        dueUntil(m),
        overdueBatch,
        JSON.stringify(systemPrincipal(tenantId, dateActorName).actor),
        key
      ]
    })
    total += rows[0].n
    if (rows[0].n < overdueBatch) return total
  }
}

/** Records one transaction of `records.auto-transitions` fires at most. */
const autoBatch = 100

/**
 * Fires a tenant's date-triggered transitions of one module that are due at `at`: records in a `from` state whose
 * `after` field has passed, locked (those a writer holds are left for the next run), through transitionRules as the
 * system and the one write path. A record the rules refuse (a guard's field empty) stays, logged. Returns how many fired.
 */
export async function fireAutoTransitions(
  pool: pg.Pool,
  tenantId: string,
  m: RegisteredModule,
  at: Date,
  job?: JobContext
): Promise<number> {
  const principal = systemPrincipal(tenantId, dateActorName)
  let fired = 0
  for (const t of m.definition.workflow.transitions) {
    if (!t.auto) continue
    const d = dateOf(m, t.auto.after)
    const refused = new Set<string>()
    for (;;) {
      if (job?.signal.aborted) return fired
      const n = await transaction(pool, async (client) => {
        const { rows } = await client.query<RecordRow>(
          `SELECT ${recordColumns} FROM records r
            WHERE r.tenant_id = $1 AND r.module_key = $2 AND r.deleted_at IS NULL AND r.state = ANY($3::text[])
              AND ${d.passed('$4')} AND NOT (r.id = ANY($5::uuid[]))
            ORDER BY r.seq LIMIT $6 FOR UPDATE SKIP LOCKED`,
          [tenantId, m.definition.key, t.from, d.now(at), [...refused], autoBatch]
        )
        if (!rows.length) return 0
        const { rows: current } = await moveLocked(client, tenantId, m, rows)
        const ops: RecordChangeOp[] = []
        for (const row of current) {
          try {
            const plan = transitionRules(
              principal,
              m,
              { state: row.state, payload: row.payload, createdBy: row.created_by },
              t.key,
              {}
            )
            ops.push({
              id: row.id,
              payload: plan.payload,
              state: t.to,
              action: 'transitioned',
              changes: [],
              transition: plan.transition,
              comment: `Fired by the platform: ${t.auto!.after} has passed.`
            })
          } catch (err) {
            refused.add(row.id)
            logger.warn('auto transition refused', {
              tenantId,
              module: m.definition.key,
              transition: t.key,
              record: row.id,
              error: (err as Error).message
            })
          }
        }
        await changeRecords(client, { tenantId, actor: principal.actor }, m, ops)
        return rows.length
      })
      fired += n
      if (n < autoBatch) break
      await job?.touch()
    }
  }
  return fired
}

/** Every tenant's modules that `has` something to do: the sweep both jobs make. */
function* modulesOf(platform: Platform, has: (m: RegisteredModule) => boolean) {
  for (const tenant of platform.tenants.list())
    for (const m of tenant.modules.values()) if (has(m)) yield { tenantId: tenant.id, m }
}

/** `records.overdue` and `records.auto-transitions`, every `jobs.datesEverySeconds`, on one instance at a time (either is safe on several). */
export function dateJobs(platform: Platform): JobDefinition[] {
  const every = `${platform.config.jobs.datesEverySeconds} seconds`
  return [
    {
      name: 'records.overdue',
      every,
      concurrency: 1,
      // A run killed mid-way is taken over this soon by another instance (each statement commits on its own).
      lockLifetimeMs: 10_000,
      async run(_data, job) {
        await syncClock()
        const at = clock().now()
        let marked = 0
        for (const { tenantId, m } of modulesOf(platform, (x) => !!x.definition.due)) {
          if (job.signal.aborted) return handBack()
          marked += await markOverdue(platform.db.pool, tenantId, m, at)
          await job.touch()
        }
        return { marked }
      }
    },
    {
      name: 'records.auto-transitions',
      every,
      concurrency: 1,
      lockLifetimeMs: 10_000,
      async run(_data, job) {
        await syncClock()
        const at = clock().now()
        let fired = 0
        for (const { tenantId, m } of modulesOf(platform, (x) =>
          x.definition.workflow.transitions.some((t) => t.auto)
        )) {
          fired += await fireAutoTransitions(platform.db.pool, tenantId, m, at, job)
          if (job.signal.aborted) return handBack()
        }
        return { fired }
      }
    }
  ]
}
