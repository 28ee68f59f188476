import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type pg from 'pg'
import { isUuid } from '../validation.ts'
import { effectiveRolesSql } from './users.ts'
import type { Principal } from './principal.ts'
import { systemScope, tenantPool } from '../db/tenant-scope.ts'

/** The session cookie: HttpOnly, SameSite=Lax, Secure, path /. Its value is 256 random bits. */
export const sessionCookie = 'records_session'

export interface Session {
  principal: Principal
  csrfToken: string
  expiresAt: Date
}

const hash = (value: string) => createHash('sha256').update(value).digest()

/**
 * Browser sessions after a password sign-in. Stored by hash; the user's roles are read
 * fresh on every request (a removed role or a deactivation takes effect at once).
 * Sessions end after `ttlHours`, or after `idleMinutes` without a request.
 */
export class SessionStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly o: { ttlHours: number; idleMinutes: number }
  ) {}

  async create(tenantId: string, userId: string): Promise<{ cookieValue: string; csrfToken: string; expiresAt: Date }> {
    const cookieValue = randomBytes(32).toString('base64url')
    const csrfToken = randomBytes(32).toString('base64url')
    const { rows } = await tenantPool(this.pool, tenantId).query(
      `INSERT INTO sessions (tenant_id, id, user_id, csrf_token, expires_at) VALUES ($1, $2, $3, $4, now() + make_interval(hours => $5)) RETURNING expires_at`,
      [tenantId, hash(cookieValue), userId, csrfToken, this.o.ttlHours]
    )
    return { cookieValue, csrfToken, expiresAt: rows[0].expires_at }
  }

  /** The live session behind a cookie value, or undefined (unknown, expired, idle too long, user deactivated). */
  async resolve(cookieValue: string | undefined): Promise<Session | undefined> {
    if (!cookieValue || cookieValue.length > 100) return undefined
    // Before the tenant is known: the cookie names none.
    const { rows } = await systemScope('sessions.resolve', () =>
      this.pool.query({
        name: 'session-by-id',
        text: `UPDATE sessions s SET last_seen_at = now()
               FROM users u
              WHERE s.id = $1 AND u.tenant_id = s.tenant_id AND u.id = s.user_id AND u.active
                AND s.expires_at > now() AND s.last_seen_at > now() - make_interval(mins => $2)
          RETURNING s.tenant_id, s.user_id, s.csrf_token, s.expires_at, u.user_name, u.display_name, ${effectiveRolesSql} AS roles`,
        values: [hash(cookieValue), this.o.idleMinutes]
      })
    )
    // The hash is unique per tenant only (migration 015): two sessions behind one cookie are none.
    const r = rows.length === 1 ? rows[0] : undefined
    if (!r) return undefined
    return {
      principal: { ...userPrincipal(r), expiresAt: r.expires_at.toISOString() },
      csrfToken: r.csrf_token,
      expiresAt: r.expires_at
    }
  }

  async destroy(cookieValue: string | undefined) {
    if (cookieValue)
      await systemScope('sessions.destroy', () =>
        this.pool.query('DELETE FROM sessions WHERE id = $1', [hash(cookieValue)])
      )
  }

  /** Removes sessions past their end; run by the sessions.purge job. */
  async purgeExpired(): Promise<number> {
    const { rowCount } = await systemScope('sessions.purge', () =>
      this.pool.query(
        `DELETE FROM sessions WHERE expires_at <= now() OR last_seen_at <= now() - make_interval(mins => $1)`,
        [this.o.idleMinutes]
      )
    )
    return rowCount ?? 0
  }
}

/** What a signed-in user acts as: every scope, the roles the user holds now. */
function userPrincipal(r: {
  tenant_id: string
  user_id: string
  user_name: string
  display_name: string | null
  roles: string[]
}): Principal {
  return {
    tenantId: r.tenant_id,
    // Idempotency keys and rate limits of a browser are the user's.
    credentialId: r.user_id,
    kind: 'session',
    actor: { type: 'user', id: r.user_id, name: r.display_name ?? r.user_name },
    userId: r.user_id,
    roles: r.roles,
    scopes: 'all'
  }
}

/**
 * What a user acts as now when signed in, for rights that outlive the session (a webhook
 * subscription made in the browser): undefined once the user is deactivated or gone.
 */
export async function principalOfUser(
  db: pg.Pool | pg.PoolClient,
  tenantId: string,
  userId: string
): Promise<Principal | undefined> {
  if (!isUuid(userId)) return undefined
  const { rows } = await db.query(
    `SELECT u.tenant_id, u.id AS user_id, u.user_name, u.display_name, ${effectiveRolesSql} AS roles FROM users u WHERE u.tenant_id = $1 AND u.id = $2 AND u.active`,
    [tenantId, userId]
  )
  return rows[0] ? userPrincipal(rows[0]) : undefined
}

/** Constant-time comparison of a submitted CSRF token with the session's. */
export function csrfMatches(expected: string, given: unknown): boolean {
  if (typeof given !== 'string') return false
  const a = Buffer.from(expected)
  const b = Buffer.from(given)
  return a.length === b.length && timingSafeEqual(a, b)
}
