import type pg from 'pg'
import { problems } from '../../core/errors/index.ts'
import { assertIdempotencyKey } from '../../core/http/idempotency-key.ts'

/**
 * The one state machine of an Idempotency-Key (table `idempotency_keys`), for the write
 * hook (idempotency.ts) and for bulk calls, which extend it with per-row outcomes
 * (plugins/bulk/bulk.idempotency.ts):
 *
 *   absent or expired ──claim──▶ in_flight (locked) ──store──▶ done (answer kept)
 *                                   │  ▲      │
 *                           release │  │ renew└──unlock──▶ in_flight (free)
 *                                   ▼  │
 *                                 absent
 *
 * A claim succeeds on a key that is absent or expired (it starts afresh), or held by the
 * same request (same fingerprint) whose lock has run out (its process died, or a bulk call
 * ended early and a retry continues it), or done, where the caller reopens done keys
 * (bulk: a retry replays its rows from their own store). Otherwise the same key with
 * another request is 422 `idempotency.key_reused`, a request still running is 409
 * `idempotency.in_flight`, and a done key answers what it stored.
 */

/** A key as stored: scoped to the tenant and the credential that sent it. */
export interface KeyRef {
  tenantId: string
  credentialId: string
  key: string
}

export interface ClaimOptions {
  retentionHours: number
  inFlightTimeoutSeconds: number
  /** A done key may be claimed again by the same request (bulk: a retry carries on from its stored rows). */
  reopenDone?: boolean
  /** The problems' details, in the caller's words (a request, a bulk call). */
  say: { reused: string; inFlight: string }
}

/** The answer kept with a done key. */
export interface StoredAnswer {
  status: number
  body: unknown
  headers: Record<string, string> | null
}

export type Claim =
  /** The caller holds the key. `fresh`: nothing was kept under it before (new, or expired and started afresh). */
  | { claimed: true; fresh: boolean }
  /** The key is done and not reopened: the caller answers with what it kept. */
  | { claimed: false; stored: StoredAnswer }

const ids = (k: KeyRef) => [k.tenantId, k.credentialId, k.key]

/**
 * Claims a key for a request with this fingerprint, in one statement (two concurrent first
 * claims: the second waits for the first's row and then sees it held). Throws the 400, 409
 * or 422 problem of a key it may not take. `db` may be a transaction's client, for an
 * extension that changes its own rows with the claim (bulk drops an expired key's outcomes).
 */
export async function claimKey(
  db: pg.Pool | pg.PoolClient,
  k: KeyRef,
  fingerprint: string,
  o: ClaimOptions
): Promise<Claim> {
  assertIdempotencyKey(k.key)
  // created_at is kept when a key is taken over, so `fresh` says whether the row started afresh.
  const claim = await db.query(
    `INSERT INTO idempotency_keys (tenant_id, credential_id, key, fingerprint, state, locked_until, expires_at)
     VALUES ($1, $2, $3, $4, 'in_flight', now() + make_interval(secs => $5), now() + make_interval(hours => $6))
     ON CONFLICT (tenant_id, credential_id, key) DO UPDATE
       SET fingerprint = excluded.fingerprint, state = 'in_flight',
           status = CASE WHEN idempotency_keys.expires_at <= now() THEN NULL ELSE idempotency_keys.status END,
           body = CASE WHEN idempotency_keys.expires_at <= now() THEN NULL ELSE idempotency_keys.body END,
           headers = CASE WHEN idempotency_keys.expires_at <= now() THEN NULL ELSE idempotency_keys.headers END,
           created_at = CASE WHEN idempotency_keys.expires_at <= now() THEN now() ELSE idempotency_keys.created_at END,
           locked_until = excluded.locked_until, expires_at = excluded.expires_at
       WHERE idempotency_keys.expires_at <= now()
          OR (idempotency_keys.fingerprint = excluded.fingerprint
              AND ((idempotency_keys.state = 'in_flight' AND idempotency_keys.locked_until <= now())
                   OR (idempotency_keys.state = 'done' AND $7::boolean)))
     RETURNING created_at = now() AS fresh`,
    [...ids(k), fingerprint, o.inFlightTimeoutSeconds, o.retentionHours, o.reopenDone === true]
  )
  if (claim.rowCount) return { claimed: true, fresh: claim.rows[0].fresh }
  const { rows } = await db.query(
    'SELECT fingerprint, state, status, body, headers FROM idempotency_keys WHERE tenant_id = $1 AND credential_id = $2 AND key = $3',
    ids(k)
  )
  const stored = rows[0]
  // Gone between the two statements: the first request failed (5xx) and let it go; it was in flight until then.
  if (!stored) throw problems.conflict('idempotency.in_flight', o.say.inFlight)
  if (stored.fingerprint !== fingerprint) throw problems.unprocessable('idempotency.key_reused', o.say.reused)
  if (stored.state === 'in_flight') throw problems.conflict('idempotency.in_flight', o.say.inFlight)
  return { claimed: false, stored: { status: stored.status, body: stored.body, headers: stored.headers } }
}

/** in_flight → done: keeps the answer. Inside the write's own transaction when `db` is its client. */
export async function storeAnswer(db: pg.Pool | pg.PoolClient, k: KeyRef, answer: StoredAnswer) {
  await db.query(
    `UPDATE idempotency_keys SET state = 'done', status = $4, body = $5, headers = $6, locked_until = NULL WHERE tenant_id = $1 AND credential_id = $2 AND key = $3`,
    [...ids(k), answer.status, JSON.stringify(answer.body), answer.headers]
  )
}

/** in_flight → absent: the request failed on the service's side (5xx), so a retry runs it anew. */
export async function releaseKey(pool: pg.Pool, k: KeyRef) {
  await pool.query('DELETE FROM idempotency_keys WHERE tenant_id = $1 AND credential_id = $2 AND key = $3', ids(k))
}

/** Keeps the lock of a long request (bulk: each batch renews it in its own transaction). */
export async function renewKey(db: pg.Pool | pg.PoolClient, k: KeyRef, seconds: number) {
  await db.query(
    'UPDATE idempotency_keys SET locked_until = now() + make_interval(secs => $4) WHERE tenant_id = $1 AND credential_id = $2 AND key = $3',
    [...ids(k), seconds]
  )
}

/** Lets go of the lock and leaves the key in flight, so that a retry with the same request takes it over at once and carries on. */
export async function unlockKey(pool: pg.Pool, k: KeyRef) {
  await pool.query(
    'UPDATE idempotency_keys SET locked_until = now() WHERE tenant_id = $1 AND credential_id = $2 AND key = $3',
    ids(k)
  )
}
