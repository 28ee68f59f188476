import type pg from 'pg'
import { problems } from '../errors/index.ts'
import { logger } from '../logger.ts'
import type { Principal } from './principal.ts'
import { generateToken, hashToken, sameHash, tokenKind, type CredentialKind } from './tokens.ts'

export const credentialsChannel = 'records_credentials_changed'
const cacheMs = 30_000
const touchEveryMs = 60_000

interface CredentialRow {
  tenant_id: string
  id: string
  kind: CredentialKind
  name: string
  secret_hash: Buffer
  user_id: string | null
  scopes: string[] | null
  expires_at: Date | null
  revoked_at: Date | null
}

interface CacheEntry {
  row: CredentialRow | null
  principal: Principal | null
  at: number
}

export interface CredentialInfo {
  id: string
  tenantId: string
  kind: CredentialKind
  name: string
  prefix: string
  createdAt: string
  lastUsedAt: string | null
  expiresAt: string | null
  revokedAt: string | null
}

const iso = (v: Date | null) => (v ? v.toISOString() : null)
const toInfo = (r: any): CredentialInfo => ({
  id: r.id,
  tenantId: r.tenant_id,
  kind: r.kind,
  name: r.name,
  prefix: r.prefix,
  createdAt: iso(r.created_at)!,
  lastUsedAt: iso(r.last_used_at),
  expiresAt: iso(r.expires_at),
  revokedAt: iso(r.revoked_at)
})

/**
 * Resolves bearer tokens to principals. Lookups are cached for a short time; a
 * revocation anywhere is broadcast with NOTIFY so every instance drops it at once.
 */
export class CredentialStore {
  private cache = new Map<string, CacheEntry>()
  private touched = new Map<string, number>()
  private listener?: pg.PoolClient

  constructor(private readonly pool: pg.Pool) {}

  private closed = false
  private retryTimer?: NodeJS.Timeout

  /**
   * Listens for revocations from every instance. If the listening connection drops,
   * it reconnects with backoff and empties the cache, since NOTIFYs sent meanwhile
   * were missed.
   */
  async listen(attempt = 0): Promise<void> {
    this.closed = false
    try {
      const client = await this.pool.connect()
      this.listener = client
      client.on('notification', (msg) => this.forget(msg.payload))
      const lost = (err?: Error) => {
        if (this.listener !== client) return
        this.listener = undefined
        client.release(err ?? true)
        if (this.closed) return
        logger.warn('credential listener lost; reconnecting', { error: err?.message })
        this.retry(0)
      }
      client.on('error', lost)
      client.on('end', () => lost())
      await client.query(`LISTEN ${credentialsChannel}`)
      if (attempt > 0) this.cache.clear()
    } catch (err) {
      if (attempt === 0 && !this.retryTimer) throw err
      logger.warn('credential listener could not reconnect', { error: (err as Error).message })
      this.retry(attempt)
    }
  }

  private retry(attempt: number) {
    if (this.closed) return
    const delay = Math.min(30_000, 250 * 2 ** attempt)
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined
      void this.listen(attempt + 1)
    }, delay)
    this.retryTimer.unref()
  }

  private forget(id: string | undefined) {
    for (const [key, entry] of this.cache) if (entry.row?.id === id) this.cache.delete(key)
  }

  async close() {
    this.closed = true
    clearTimeout(this.retryTimer)
    const client = this.listener
    this.listener = undefined
    if (client) {
      await client.query(`UNLISTEN ${credentialsChannel}`).catch(() => undefined)
      client.release()
    }
  }

  /** Issues a token; the only moment its secret exists outside the caller's hands. */
  async create(input: { tenantId: string; kind: CredentialKind; name: string; userId?: string; scopes?: string[]; expiresAt?: string | null; createdBy?: unknown }) {
    const { token, hash, prefix } = generateToken(input.kind)
    const { rows } = await this.pool.query(
      `INSERT INTO credentials (tenant_id, kind, name, prefix, secret_hash, user_id, scopes, expires_at, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
      [input.tenantId, input.kind, input.name, prefix, hash, input.userId ?? null, input.scopes ?? null, input.expiresAt ?? null, JSON.stringify(input.createdBy ?? null)]
    )
    return { token, credential: toInfo(rows[0]) }
  }

  async revoke(id: string, tenantId?: string): Promise<CredentialInfo | undefined> {
    const { rows } = await this.pool.query(
      `UPDATE credentials SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 ${tenantId ? 'AND tenant_id = $2' : ''} RETURNING *`,
      tenantId ? [id, tenantId] : [id]
    )
    if (rows[0]) {
      // This instance forgets it at once; the NOTIFY reaches the others (and arrives here later).
      this.forget(rows[0].id)
      await this.pool.query('SELECT pg_notify($1, $2)', [credentialsChannel, id])
    }
    return rows[0] ? toInfo(rows[0]) : undefined
  }

  async list(tenantId: string): Promise<CredentialInfo[]> {
    const { rows } = await this.pool.query('SELECT * FROM credentials WHERE tenant_id = $1 ORDER BY created_at, id', [tenantId])
    return rows.map(toInfo)
  }

  private async lookup(hash: Buffer): Promise<CredentialRow | null> {
    const { rows } = await this.pool.query({
      name: 'credential-by-hash',
      text: 'SELECT tenant_id, id, kind, name, secret_hash, user_id, scopes, expires_at, revoked_at FROM credentials WHERE secret_hash = $1',
      values: [hash]
    })
    return rows[0] ?? null
  }

  /**
   * The principal behind an Authorization header value; 401 problems otherwise.
   * Resolutions are cached by the header value itself, so a hot token costs one map
   * lookup; revocation and expiry are still checked on every call.
   */
  async authenticate(authorization: string | undefined): Promise<Principal> {
    if (!authorization) throw problems.unauthenticated('auth.missing', 'This endpoint needs an Authorization: Bearer <token> header.')
    let entry = this.cache.get(authorization)
    if (!entry || Date.now() - entry.at >= cacheMs) {
      entry = await this.resolve(authorization)
      if (this.cache.size >= 10_000) this.cache.clear()
      this.cache.set(authorization, entry)
    }
    const { row, principal } = entry
    if (!row || !principal) throw problems.unauthenticated('auth.invalid', 'The bearer token is unknown.')
    if (row.revoked_at) throw problems.unauthenticated('auth.revoked', 'The bearer token has been revoked.')
    if (row.expires_at && row.expires_at.getTime() <= Date.now()) throw problems.unauthenticated('auth.expired', `The bearer token expired at ${row.expires_at.toISOString()}.`)
    this.touch(row)
    return principal
  }

  private async resolve(authorization: string): Promise<CacheEntry> {
    const m = authorization.match(/^Bearer\s+(\S+)\s*$/i)
    if (!m) throw problems.unauthenticated('auth.malformed', 'The Authorization header must read "Bearer <token>".')
    const token = m[1]
    if (!tokenKind(token)) throw problems.unauthenticated('auth.invalid', 'The bearer token is not a token issued by this service.')
    const hash = hashToken(token)
    const row = await this.lookup(hash)
    if (!row || !sameHash(row.secret_hash, hash)) return { row: null, principal: null, at: Date.now() }
    const principal: Principal = {
      tenantId: row.tenant_id,
      credentialId: row.id,
      kind: row.kind,
      actor: { type: row.kind === 'api_key' ? 'api-key' : row.kind === 'personal' ? 'user' : 'service-account', id: row.kind === 'personal' && row.user_id ? row.user_id : row.id, name: row.name },
      roles: row.kind === 'api_key' ? 'all' : [],
      scopes: row.scopes ?? undefined
    }
    return { row, principal, at: Date.now() }
  }

  private touch(row: CredentialRow) {
    const last = this.touched.get(row.id) ?? 0
    if (Date.now() - last < touchEveryMs) return
    this.touched.set(row.id, Date.now())
    this.pool
      .query('UPDATE credentials SET last_used_at = now() WHERE tenant_id = $1 AND id = $2', [row.tenant_id, row.id])
      .catch((err) => logger.warn('could not record token use', { error: err.message }))
  }
}
