import type pg from 'pg'
import { isoUtc, type Queryable } from '../../core/db/index.ts'
import type { Owner } from '../../core/auth/owner.ts'
import { bindCondition, type EventCondition } from '../../core/events/rights.ts'
import type { LoggedEvent } from '../../core/events/events.ts'
import type { DeliveryAttempt, WebhookOut } from './webhooks.schema.ts'

/** SQL of webhook subscriptions, deliveries and attempts; every statement is pinned to a tenant. */

/** The secrets a rotation replaced that still sign, newest first, over `webhook_subscriptions` (as jsonb elements p). */
const livePrevious = `jsonb_array_elements(previous_secrets) p WHERE (p->>'until')::timestamptz > now()`

const columns = `id, url, kinds, modules, description, enabled, disabled_reason AS "disabledReason", ${isoUtc('disabled_at')} AS "disabledAt",
  ${isoUtc('failing_since')} AS "failingSince",
  (SELECT ${isoUtc("max((p->>'until')::timestamptz)")} FROM ${livePrevious}) AS "previousSecretExpiresAt",
  ARRAY(SELECT ${isoUtc("(p->>'until')::timestamptz")} FROM ${livePrevious}) AS "previousSecretsExpireAt",
  ${isoUtc('created_at')} AS "createdAt", ${isoUtc('updated_at')} AS "updatedAt", created_by AS "createdBy"`

export async function insertSubscription(
  db: Queryable,
  row: {
    tenantId: string
    url: string
    kinds: string[]
    modules: string[] | null
    description: string | null
    secret: Buffer
    createdBy: unknown
    owner: Owner
  }
): Promise<WebhookOut> {
  // The tenant's outbox position starts at what is visible now: earlier events are not this subscription's.
  await db.query(
    `INSERT INTO webhook_cursors (tenant_id, txid, position)
       SELECT $1, coalesce(max(txid), '0'::xid8), coalesce(max(position), 0) FROM events WHERE tenant_id = $1 AND txid < records_event_horizon()
     ON CONFLICT (tenant_id) DO NOTHING`,
    [row.tenantId]
  )
  const { rows } = await db.query(
    `INSERT INTO webhook_subscriptions (tenant_id, url, kinds, modules, description, secret, created_by, owner_kind, owner_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${columns}`,
    [
      row.tenantId,
      row.url,
      row.kinds,
      row.modules,
      row.description,
      row.secret,
      JSON.stringify(row.createdBy ?? null),
      row.owner.kind,
      row.owner.id
    ]
  )
  return rows[0]
}

export async function listSubscriptions(db: Queryable, tenantId: string): Promise<WebhookOut[]> {
  const { rows } = await db.query(
    `SELECT ${columns} FROM webhook_subscriptions WHERE tenant_id = $1 ORDER BY created_at, id`,
    [tenantId]
  )
  return rows
}

export async function selectSubscription(db: Queryable, tenantId: string, id: string): Promise<WebhookOut | undefined> {
  const { rows } = await db.query(`SELECT ${columns} FROM webhook_subscriptions WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    id
  ])
  return rows[0]
}

export async function updateSubscription(
  db: Queryable,
  tenantId: string,
  id: string,
  set: { url?: string; kinds?: string[]; modules?: string[] | null; description?: string | null; enabled?: boolean }
): Promise<WebhookOut | undefined> {
  const { rows } = await db.query(
    `UPDATE webhook_subscriptions SET
       url = coalesce($3, url), kinds = coalesce($4, kinds),
       modules = CASE WHEN $5 THEN $6::text[] ELSE modules END,
       description = CASE WHEN $7 THEN $8 ELSE description END,
       enabled = coalesce($9, enabled),
       disabled_reason = CASE WHEN $9 IS NOT NULL THEN NULL ELSE disabled_reason END,
       disabled_at = CASE WHEN $9 = false THEN coalesce(disabled_at, now()) WHEN $9 THEN NULL ELSE disabled_at END,
       failing_since = CASE WHEN $9 THEN NULL ELSE failing_since END,
       updated_at = now()
     WHERE tenant_id = $1 AND id = $2 RETURNING ${columns}`,
    [
      tenantId,
      id,
      set.url ?? null,
      set.kinds ?? null,
      set.modules !== undefined,
      set.modules ?? null,
      set.description !== undefined,
      set.description ?? null,
      set.enabled ?? null
    ]
  )
  return rows[0]
}

export async function deleteSubscription(db: Queryable, tenantId: string, id: string): Promise<WebhookOut | undefined> {
  const { rows } = await db.query(
    `DELETE FROM webhook_subscriptions WHERE tenant_id = $1 AND id = $2 RETURNING ${columns}`,
    [tenantId, id]
  )
  return rows[0]
}

/**
 * The new secret signs from now; the current one keeps signing beside it for `graceHours`, and
 * each older one until its own grace ends. Refused (`{ refused }`, nothing changed) while
 * `keep` replaced secrets still sign, saying when the first of them stops.
 */
export async function rotateSecret(
  db: Queryable,
  tenantId: string,
  id: string,
  secret: Buffer,
  graceHours: number,
  keep: number
): Promise<WebhookOut | { refused: string } | undefined> {
  const { rows } = await db.query(
    `WITH live AS (SELECT coalesce(jsonb_agg(p ORDER BY (p->>'until')::timestamptz DESC), '[]') AS list, count(*) AS n, min((p->>'until')::timestamptz) AS first_end
                     FROM webhook_subscriptions s, jsonb_array_elements(s.previous_secrets) p
                    WHERE s.tenant_id = $1 AND s.id = $2 AND (p->>'until')::timestamptz > now()),
     rotated AS (UPDATE webhook_subscriptions SET
                   previous_secrets = jsonb_build_array(jsonb_build_object('secret', encode(secret, 'hex'), 'until', now() + make_interval(secs => $4))) || (SELECT list FROM live),
                   secret = $3, updated_at = now()
                  WHERE tenant_id = $1 AND id = $2 AND (SELECT n FROM live) < $5 RETURNING ${columns})
     SELECT to_jsonb(rotated) AS out, NULL AS refused FROM rotated
     UNION ALL SELECT NULL, ${isoUtc('first_end')} FROM live WHERE n >= $5`,
    [tenantId, id, secret, graceHours * 3600, keep]
  )
  if (!rows[0]) return undefined
  return rows[0].out ?? { refused: rows[0].refused }
}

/** Queues a delivery that is not from the event log (the test ping): its envelope travels with it. */
export async function queueEnvelope(
  db: Queryable,
  tenantId: string,
  subscriptionId: string,
  envelope: { id: string; type: string }
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_deliveries (tenant_id, subscription_id, event_id, event_position, event_type, envelope) VALUES ($1, $2, $3, 0, $4, $5)`,
    [tenantId, subscriptionId, envelope.id, envelope.type, JSON.stringify(envelope)]
  )
}

/**
 * Queues events of the log again for one subscription (replay) and returns how many: each
 * event asked for is sent (again) from attempt 1. A delivery not yet made is created, a
 * finished one or one waiting for a retry starts over now, and one in flight is marked to
 * start over once its attempt ends (recordAttempt), whatever that attempt's outcome.
 */
export async function requeue(
  db: Queryable,
  tenantId: string,
  subscriptionId: string,
  which: { eventId?: string; from?: string; to?: string },
  max: number
): Promise<number> {
  const { rows } = await db.query(
    `WITH s AS (SELECT kinds, modules FROM webhook_subscriptions WHERE tenant_id = $1 AND id = $2),
     ev AS (SELECT e.id, e.position, e.type, e.subject_id FROM events e, s
             WHERE e.tenant_id = $1 AND e.txid < records_event_horizon()
               AND e.type = ANY(s.kinds) AND (s.modules IS NULL OR e.module_key IS NULL OR e.module_key = ANY(s.modules))
               AND ($3::uuid IS NULL OR e.id = $3) AND ($4::timestamptz IS NULL OR e.occurred_at >= $4) AND ($5::timestamptz IS NULL OR e.occurred_at < $5)
             ORDER BY e.position LIMIT $6),
     q AS (INSERT INTO webhook_deliveries (tenant_id, subscription_id, event_id, event_position, event_type, subject_id)
             SELECT $1, $2, id, position, type, subject_id FROM ev
           ON CONFLICT (tenant_id, subscription_id, event_id) DO UPDATE SET
             replay_pending = ${inFlight},
             status = 'pending',
             attempts = CASE WHEN ${inFlight} THEN webhook_deliveries.attempts ELSE 0 END,
             first_attempt_at = CASE WHEN ${inFlight} THEN webhook_deliveries.first_attempt_at END,
             next_attempt_at = CASE WHEN ${inFlight} THEN webhook_deliveries.next_attempt_at ELSE now() END,
             lease_until = CASE WHEN ${inFlight} THEN webhook_deliveries.lease_until END,
             leased_by = CASE WHEN ${inFlight} THEN webhook_deliveries.leased_by END
           RETURNING 1)
     SELECT count(*)::int AS queued FROM q`,
    [tenantId, subscriptionId, which.eventId ?? null, which.from ?? null, which.to ?? null, max]
  )
  return rows[0].queued
}

/** A delivery an instance is sending now (its claim holds): a replay waits for the attempt's outcome. */
const inFlight = `(webhook_deliveries.status = 'pending' AND coalesce(webhook_deliveries.lease_until > now(), false))`

/**
 * The ids of the tenant's events at `positions` (looked up by primary key) that pass `condition`
 * (the subscription owner's rights, core/events/rights.ts).
 */
export async function visibleEventIds(
  db: Queryable,
  tenantId: string,
  positions: readonly string[],
  condition: EventCondition
): Promise<Set<string>> {
  if (!positions.length) return new Set()
  const values: unknown[] = [tenantId, positions]
  const { rows } = await db.query(
    `SELECT e.id FROM events e WHERE e.tenant_id = $1 AND e.position = ANY($2::bigint[]) AND (${bindCondition(condition, values)})`,
    values
  )
  return new Set(rows.map((r) => r.id))
}

export async function listAttempts(
  db: Queryable,
  tenantId: string,
  subscriptionId: string,
  options: { limit: number; eventId?: string }
): Promise<DeliveryAttempt[]> {
  const { rows } = await db.query(
    `SELECT event_id AS "eventId", event_type AS type, attempt, ${isoUtc('at')} AS at, status_code AS "statusCode", latency_ms AS "latencyMs",
            response_excerpt AS "responseExcerpt", error, outcome
       FROM webhook_attempts WHERE tenant_id = $1 AND subscription_id = $2 AND ($3::uuid IS NULL OR event_id = $3)
      ORDER BY id DESC LIMIT $4`,
    [tenantId, subscriptionId, options.eventId ?? null, options.limit]
  )
  return rows
}

// ---- The dispatcher's statements.

/**
 * Tenants with a subscription, whose outbox position may be behind the log. Disabled ones
 * count too: the position moves on while a tenant's subscriptions are all disabled, so
 * resuming one does not queue what happened meanwhile (that is what replay is for).
 */
export async function tenantsToFanOut(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query(`SELECT DISTINCT tenant_id FROM webhook_subscriptions`)
  return rows.map((r) => r.tenant_id)
}

/**
 * Turns the tenant's next visible events into deliveries for its matching subscriptions and
 * moves the tenant's cursor past them, in one transaction that holds the cursor row (an
 * instance that finds it held skips the tenant). Events are read in (txid, position) order
 * under pg_snapshot_xmin: every transaction below it has ended, so no event can appear later
 * before the cursor (position order alone would step past a position committed late).
 * Returns the events read (-1 when held); `behind` says events exist that are not yet final.
 */
export async function fanOut(
  client: pg.PoolClient,
  tenantId: string,
  batch: number
): Promise<{ read: number; behind: boolean }> {
  const { rows: held } = await client.query(
    'SELECT txid::text AS txid, position FROM webhook_cursors WHERE tenant_id = $1 FOR UPDATE SKIP LOCKED',
    [tenantId]
  )
  if (!held.length) return { read: -1, behind: false }
  const { rows } = await client.query(
    `WITH ev AS (SELECT txid, position, id, type, module_key, subject_id, occurred_at FROM events
                  WHERE tenant_id = $1 AND (txid, position) > ($2::xid8, $3::bigint) AND txid < records_event_horizon()
                  ORDER BY txid, position LIMIT $4),
     ins AS (INSERT INTO webhook_deliveries (tenant_id, subscription_id, event_id, event_position, event_type, subject_id)
              SELECT $1, s.id, ev.id, ev.position, ev.type, ev.subject_id FROM ev JOIN webhook_subscriptions s
                ON s.tenant_id = $1 AND s.enabled AND ev.type = ANY(s.kinds) AND (s.modules IS NULL OR ev.module_key IS NULL OR ev.module_key = ANY(s.modules)) AND ev.occurred_at >= s.created_at
             ON CONFLICT DO NOTHING RETURNING 1),
     last AS (SELECT txid, position FROM ev ORDER BY txid DESC, position DESC LIMIT 1),
     moved AS (UPDATE webhook_cursors c SET txid = last.txid, position = last.position FROM last WHERE c.tenant_id = $1 RETURNING 1)
     SELECT (SELECT count(*) FROM ev)::int AS read, (SELECT count(*) FROM ins)::int AS queued, (SELECT count(*) FROM moved)::int AS moved,
            EXISTS (SELECT 1 FROM events WHERE tenant_id = $1 AND txid >= records_event_horizon()) AS behind`,
    [tenantId, held[0].txid, held[0].position, batch]
  )
  return { read: rows[0].read, behind: rows[0].behind }
}

/** Subscriptions with a delivery due that no instance has claimed (each looked up in the pending index, stopping at the first). */
export async function dueSubscriptions(
  pool: pg.Pool,
  limit: number
): Promise<Array<{ tenantId: string; subscriptionId: string }>> {
  const { rows } = await pool.query(
    `SELECT s.tenant_id AS "tenantId", s.id AS "subscriptionId" FROM webhook_subscriptions s
      WHERE s.enabled AND EXISTS (SELECT 1 FROM webhook_deliveries d
                                   WHERE d.tenant_id = s.tenant_id AND d.subscription_id = s.id AND d.status = 'pending'
                                     AND d.next_attempt_at <= now() AND (d.lease_until IS NULL OR d.lease_until < now()))
      LIMIT $1`,
    [limit]
  )
  return rows
}

/** The earliest retry still to come, for the dispatcher's timer. */
export async function nextDue(pool: pg.Pool, running: readonly string[] = []): Promise<Date | undefined> {
  // A subscription whose lane runs here is left out: its lane sends what is due and wakes the dispatcher when it ends.
  const { rows } = await pool.query(
    `SELECT min(coalesce(greatest(lease_until, next_attempt_at), next_attempt_at)) AS at FROM webhook_deliveries WHERE status = 'pending' AND subscription_id <> ALL($1::uuid[])`,
    [running]
  )
  return rows[0]?.at ?? undefined
}

/** An event of the log as a claim reads it with its delivery. */
export type { LoggedEvent }

export interface Claimed {
  subscription: { url: string; secret: Buffer; previousSecrets: Buffer[]; owner: Owner }
  deliveries: Array<{
    eventId: string
    event_position: string
    eventType: string
    subjectId: string | null
    attempts: number
    firstAttemptAt: Date | null
    envelope: Record<string, unknown> | null
    event: LoggedEvent | null
  }>
}

/**
 * Claims the next deliveries of one subscription for this instance, in event order: none while
 * another claim on the subscription holds (one delivery in flight per subscription, across
 * instances: the subscription row is locked while claiming, SKIP LOCKED), and none of a
 * subject that has an earlier delivery waiting for a retry (order per record; the lane
 * sends a claim in order and holds back a subject's rest once one of its deliveries fails). The lease is
 * renewed delivery by delivery; if this instance dies, another takes them when it expires.
 */
export async function claim(
  client: pg.PoolClient,
  tenantId: string,
  subscriptionId: string,
  me: string,
  limit: number,
  leaseMs: number
): Promise<Claimed | undefined> {
  const { rows: subs } = await client.query(
    `SELECT url, secret, ARRAY(SELECT decode(p->>'secret', 'hex') FROM ${livePrevious}) AS "previousSecrets",
            jsonb_build_object('kind', owner_kind, 'id', owner_id) AS owner
       FROM webhook_subscriptions WHERE tenant_id = $1 AND id = $2 AND enabled FOR UPDATE SKIP LOCKED`,
    [tenantId, subscriptionId]
  )
  if (!subs.length) return undefined
  const { rows: busy } = await client.query(
    `SELECT 1 FROM webhook_deliveries WHERE tenant_id = $1 AND subscription_id = $2 AND status = 'pending' AND lease_until > now() LIMIT 1`,
    [tenantId, subscriptionId]
  )
  if (busy.length) return undefined
  const { rows } = await client.query(
    // Read in event order from the pending index and stopped at the limit (no scan of the table): only a delivery
    // waiting for a retry (attempts > 0) can have next_attempt_at ahead, so the per-subject check looks at those only.
    // `due` is computed once (MATERIALIZED) and its ids looked up by key: with the statistics of a table that churns,
    // the planner otherwise ran it once per delivery of the subscription (0.35 s a claim at 5,000 deliveries).
    `WITH due AS MATERIALIZED (SELECT p.event_id FROM webhook_deliveries p
              WHERE p.tenant_id = $1 AND p.subscription_id = $2 AND p.status = 'pending' AND p.next_attempt_at <= now()
                AND NOT EXISTS (SELECT 1 FROM webhook_deliveries w
                                 WHERE w.tenant_id = $1 AND w.subscription_id = $2 AND w.status = 'pending' AND w.attempts > 0
                                   AND p.subject_id IS NOT NULL AND w.subject_id = p.subject_id
                                   AND w.event_position < p.event_position AND w.next_attempt_at > now())
              ORDER BY p.event_position LIMIT $3)
     UPDATE webhook_deliveries d SET lease_until = now() + make_interval(secs => $5), leased_by = $4
      WHERE d.tenant_id = $1 AND d.subscription_id = $2 AND d.event_id = ANY (ARRAY(SELECT event_id FROM due))
     RETURNING d.event_id AS "eventId", d.event_type AS "eventType", d.subject_id AS "subjectId", d.attempts, d.first_attempt_at AS "firstAttemptAt", d.envelope, d.event_position,
       (SELECT jsonb_build_object('id', e.id, 'type', e.type, 'occurredAt', ${isoUtc('e.occurred_at')}, 'actor', e.actor, 'moduleKey', e.module_key, 'subjectId', e.subject_id, 'data', e.data)
          FROM events e WHERE e.tenant_id = $1 AND e.position = d.event_position AND e.id = d.event_id) AS event`,
    [tenantId, subscriptionId, limit, me, leaseMs / 1000]
  )
  rows.sort((a, b) => Number(a.event_position) - Number(b.event_position))
  return { subscription: subs[0], deliveries: rows }
}

/** Keeps this instance's claim on a subscription's remaining deliveries. */
export async function renewLease(
  pool: pg.Pool,
  tenantId: string,
  subscriptionId: string,
  me: string,
  leaseMs: number
): Promise<void> {
  await pool.query(
    `UPDATE webhook_deliveries SET lease_until = now() + make_interval(secs => $4) WHERE tenant_id = $1 AND subscription_id = $2 AND leased_by = $3 AND status = 'pending' AND lease_until IS NOT NULL`,
    [tenantId, subscriptionId, me, leaseMs / 1000]
  )
}

/** Gives back a claim not used (the instance stops). */
export async function releaseLeases(
  pool: pg.Pool,
  me: string,
  only?: { tenantId: string; subscriptionId: string }
): Promise<void> {
  await pool.query(
    `UPDATE webhook_deliveries SET lease_until = NULL, leased_by = NULL
      WHERE leased_by = $1 AND status = 'pending' AND ($2::text IS NULL OR (tenant_id = $2 AND subscription_id = $3))`,
    [me, only?.tenantId ?? null, only?.subscriptionId ?? null]
  )
}

export interface AttemptRecord {
  tenantId: string
  subscriptionId: string
  eventId: string
  eventType: string
  attempt: number
  at: Date
  firstAttemptAt: Date
  statusCode: number | null
  latencyMs: number
  excerpt: string | null
  error: string | null
  /** succeeded; retrying at nextAt; failed (no attempt follows); skipped (not sent: the owner may not see it; no attempt follows, the subscription's health is untouched). */
  outcome: 'succeeded' | 'retrying' | 'failed' | 'skipped'
  nextAt?: Date
  /** Disable the subscription now with this reason (410). */
  disable?: string
  /** Disable it if it has been failing since before this time. */
  failingCutoff: Date
}

const clean = (s: string | null) => (s === null ? null : s.replace(/\u0000/g, ''))

/** Writes an attempt's outcome: the delivery, the log line and the subscription's health, in one statement. */
export async function recordAttempt(db: Queryable, a: AttemptRecord): Promise<{ disabled: boolean }> {
  const { rows } = await db.query(
    // A replay asked for during the attempt (replay_pending) starts the delivery over now, whatever the outcome.
    `WITH d AS (UPDATE webhook_deliveries SET lease_until = NULL, leased_by = NULL, replay_pending = false,
                  attempts = CASE WHEN replay_pending THEN 0 ELSE $5 END,
                  first_attempt_at = CASE WHEN replay_pending THEN NULL ELSE coalesce(first_attempt_at, $7) END,
                  status = CASE WHEN replay_pending OR $11 = 'retrying' THEN 'pending' ELSE $11 END,
                  next_attempt_at = CASE WHEN replay_pending THEN now() ELSE coalesce($12, next_attempt_at) END
                 WHERE tenant_id = $1 AND subscription_id = $2 AND event_id = $3 RETURNING 1),
     l AS (INSERT INTO webhook_attempts (tenant_id, subscription_id, event_id, event_type, attempt, at, status_code, latency_ms, response_excerpt, error, outcome)
           SELECT $1, $2, $3, $4, $5, $6, $8, $9, $10, $15, $11 WHERE EXISTS (SELECT 1 FROM d) RETURNING 1)
     UPDATE webhook_subscriptions SET
       failing_since = CASE WHEN $11 = 'succeeded' THEN NULL WHEN $11 = 'skipped' THEN failing_since ELSE coalesce(failing_since, $6) END,
       enabled = CASE WHEN $13::text IS NOT NULL OR ($11 IN ('retrying', 'failed') AND failing_since < $14) THEN false ELSE enabled END,
       disabled_at = CASE WHEN enabled AND ($13::text IS NOT NULL OR ($11 IN ('retrying', 'failed') AND failing_since < $14)) THEN now() ELSE disabled_at END,
       disabled_reason = CASE WHEN NOT enabled THEN disabled_reason WHEN $13::text IS NOT NULL THEN $13
                              WHEN $11 IN ('retrying', 'failed') AND failing_since < $14 THEN 'Every delivery failed since ' || ${isoUtc('failing_since')} || ', longer than the service keeps trying; the last: ' || coalesce('status ' || $8::text, $15, 'no answer')
                              ELSE disabled_reason END
     WHERE tenant_id = $1 AND id = $2 RETURNING NOT enabled AS disabled`,
    [
      a.tenantId,
      a.subscriptionId,
      a.eventId,
      a.eventType,
      a.attempt,
      a.at,
      a.firstAttemptAt,
      a.statusCode,
      a.latencyMs,
      clean(a.excerpt),
      a.outcome,
      a.nextAt ?? null,
      a.disable ?? null,
      a.failingCutoff,
      clean(a.error)
    ]
  )
  return { disabled: !!rows[0]?.disabled }
}
