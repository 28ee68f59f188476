import type pg from 'pg'
import { problems } from '../errors/index.ts'
import { isUuid } from '../validation.ts'
import { listenWithReconnect, type Listening } from '../db/listen.ts'
import { logger } from '../logger.ts'
import { announceAccessChange, credentialsChannel } from './changes.ts'
import { personOf, type Actor, type Principal } from './principal.ts'
import { effectiveRolesSql } from './users.ts'
import { generateToken, hashToken, sameHash, tokenKind, type CredentialKind } from './tokens.ts'
import { systemPool, systemScope, tenantPool } from '../db/tenant-scope.ts'

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
  roles: string[] | null
  expires_at: Date | null
  revoked_at: Date | null
  /** The actor that created the token: the person behind a service account or API key is theirs. */
  created_by: Actor | null
  /** Personal tokens: the issuing user, whose current roles bound the token. */
  user_name: string | null
  user_active: boolean | null
  user_roles: string[] | null
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
  /** The issuing user of a personal token. */
  userId: string | null
  scopes: string[] | null
  roles: string[] | null
  createdBy: unknown
  createdAt: string
  lastUsedAt: string | null
  expiresAt: string | null
  revokedAt: string | null
}

/** A `credentials` row as listed (no secret, no user columns). */
type ListedCredentialRow = Omit<CredentialRow, 'secret_hash' | 'user_name' | 'user_active' | 'user_roles'> & {
  prefix: string
  created_at: Date
  last_used_at: Date | null
}

const iso = (v: Date | null) => (v ? v.toISOString() : null)
const toInfo = (r: ListedCredentialRow): CredentialInfo => ({
  id: r.id,
  tenantId: r.tenant_id,
  kind: r.kind,
  name: r.name,
  prefix: r.prefix,
  userId: r.user_id ?? null,
  scopes: r.scopes ?? null,
  roles: r.roles ?? null,
  createdBy: r.created_by ?? null,
  createdAt: iso(r.created_at)!,
  lastUsedAt: iso(r.last_used_at),
  expiresAt: iso(r.expires_at),
  revokedAt: iso(r.revoked_at)
})

/** A credential with its user's state and current roles, as a bearer token resolves it. */
const credentialSelect = `SELECT c.tenant_id, c.id, c.kind, c.name, c.secret_hash, c.user_id, c.scopes, c.roles, c.expires_at, c.revoked_at, c.created_by,
                    u.user_name, u.active AS user_active, CASE WHEN u.id IS NULL THEN NULL ELSE ${effectiveRolesSql} END AS user_roles
               FROM credentials c LEFT JOIN users u ON u.tenant_id = c.tenant_id AND u.id = c.user_id`

/**
 * Resolves bearer tokens to principals. Lookups are cached for a short time; a
 * revocation anywhere is broadcast with NOTIFY so every instance drops it at once.
 */
export class CredentialStore {
  private cache = new Map<string, CacheEntry>()
  private touched = new Map<string, number>()
  private listening?: Listening

  constructor(private readonly pool: pg.Pool) {}

  /**
   * Listens for revocations from every instance. If the listening connection drops,
   * it reconnects with backoff and empties the cache, since NOTIFYs sent meanwhile
   * were missed.
   */
  async listen(): Promise<void> {
    if (this.listening) return
    this.listening = await listenWithReconnect(this.pool, credentialsChannel, {
      logName: 'credential listener',
      onNotify: (payload) => this.forget(payload),
      onResubscribed: () => this.cache.clear()
    })
  }

  private forget(payload: string | undefined) {
    const [kind, id] = [payload?.slice(0, 1), payload?.slice(2)]
    const matches = (row: CredentialRow) =>
      kind === 'c' ? row.id === id : kind === 'u' ? row.user_id === id : row.tenant_id === id
    for (const [key, entry] of this.cache) if (entry.row && matches(entry.row)) this.cache.delete(key)
  }

  /** Drops this instance's cached resolutions of the users' tokens at once (the directory calls it after a commit that narrowed them; the NOTIFY reaches the other instances). */
  forgetUsers(what: { userIds?: readonly string[]; tenantId?: string }) {
    for (const id of what.userIds ?? []) this.forget(`u:${id}`)
    if (what.tenantId) this.forget(`t:${what.tenantId}`)
  }

  async close() {
    const listening = this.listening
    this.listening = undefined
    await listening?.close()
  }

  /** Issues a token; the only moment its secret exists outside the caller's hands. */
  async create(input: {
    tenantId: string
    kind: CredentialKind
    name: string
    userId?: string | null
    scopes?: string[] | null
    roles?: string[] | null
    expiresAt?: string | null
    createdBy?: unknown
  }) {
    const { token, hash, prefix } = generateToken(input.kind)
    const { rows } = await tenantPool(this.pool, input.tenantId).query(
      `INSERT INTO credentials (tenant_id, kind, name, prefix, secret_hash, user_id, scopes, roles, expires_at, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *`,
      [
        input.tenantId,
        input.kind,
        input.name,
        prefix,
        hash,
        input.userId ?? null,
        input.scopes ?? null,
        input.roles ?? null,
        input.expiresAt ?? null,
        JSON.stringify(input.createdBy ?? null)
      ]
    )
    return { token, credential: toInfo(rows[0]) }
  }

  async revoke(id: string, tenantId?: string): Promise<CredentialInfo | undefined> {
    // Without a tenant, an operator's revocation by id (the CLI's system scope).
    const { rows } = await (
      tenantId ? tenantPool(this.pool, tenantId) : systemPool(this.pool, 'credentials.revoke')
    ).query(
      `UPDATE credentials SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 ${tenantId ? 'AND tenant_id = $2' : ''} RETURNING *`,
      tenantId ? [id, tenantId] : [id]
    )
    if (rows[0]) {
      // This instance forgets it at once; the NOTIFY reaches the others (and arrives here later).
      this.forget(`c:${rows[0].id}`)
      await announceAccessChange(this.pool, { credentialId: rows[0].id })
    }
    return rows[0] ? toInfo(rows[0]) : undefined
  }

  /** A tenant's tokens, newest last; only those of one user when `userId` is given. */
  async list(tenantId: string, filter: { userId?: string } = {}): Promise<CredentialInfo[]> {
    const { rows } = filter.userId
      ? await tenantPool(this.pool, tenantId).query(
          'SELECT * FROM credentials WHERE tenant_id = $1 AND user_id = $2 ORDER BY created_at, id',
          [tenantId, filter.userId]
        )
      : await tenantPool(this.pool, tenantId).query(
          'SELECT * FROM credentials WHERE tenant_id = $1 ORDER BY created_at, id',
          [tenantId]
        )
    return rows.map(toInfo)
  }

  async get(tenantId: string, id: string): Promise<CredentialInfo | undefined> {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined
    const { rows } = await tenantPool(this.pool, tenantId).query(
      'SELECT * FROM credentials WHERE tenant_id = $1 AND id = $2',
      [tenantId, id]
    )
    return rows[0] ? toInfo(rows[0]) : undefined
  }

  /** By hash alone (the token names no tenant); unique per tenant only (migration 015), so two rows authenticate nobody. */
  private async lookup(hash: Buffer): Promise<CredentialRow | null> {
    // Before the tenant is known: the token names none.
    const { rows } = await systemScope('credentials.lookup', () =>
      this.pool.query({
        name: 'credential-by-hash',
        text: `${credentialSelect} WHERE c.secret_hash = $1 LIMIT 2`,
        values: [hash]
      })
    )
    return rows.length === 1 ? rows[0] : null
  }

  /**
   * The principal behind an Authorization header value; 401 problems otherwise.
   * Resolutions are cached by the header value itself, so a hot token costs one map
   * lookup; revocation and expiry are still checked on every call.
   */
  async authenticate(authorization: string | undefined): Promise<Principal> {
    if (!authorization)
      throw problems.unauthenticated('auth.missing', 'This endpoint needs an Authorization: Bearer <token> header.')
    let entry = this.cache.get(authorization)
    if (!entry || Date.now() - entry.at >= cacheMs) {
      entry = await this.resolve(authorization)
      if (this.cache.size >= 10_000) this.cache.clear()
      this.cache.set(authorization, entry)
    }
    const { row, principal } = entry
    if (!row || !principal) throw problems.unauthenticated('auth.invalid', 'The bearer token is unknown.')
    const refused = refusal(row)
    if (refused) throw refused
    this.touch(row)
    return principal
  }

  private async resolve(authorization: string): Promise<CacheEntry> {
    const m = authorization.match(/^Bearer\s+(\S+)\s*$/i)
    if (!m) throw problems.unauthenticated('auth.malformed', 'The Authorization header must read "Bearer <token>".')
    const token = m[1]
    if (!tokenKind(token))
      throw problems.unauthenticated('auth.invalid', 'The bearer token is not a token issued by this service.')
    const hash = hashToken(token)
    const row = await this.lookup(hash)
    if (!row || !sameHash(row.secret_hash, hash)) return { row: null, principal: null, at: Date.now() }
    return { row, principal: principalOf(row), at: Date.now() }
  }

  private touch(row: CredentialRow) {
    const last = this.touched.get(row.id) ?? 0
    if (Date.now() - last < touchEveryMs) return
    this.touched.set(row.id, Date.now())
    tenantPool(this.pool, row.tenant_id)
      .query('UPDATE credentials SET last_used_at = now() WHERE tenant_id = $1 AND id = $2', [row.tenant_id, row.id])
      .catch((err) => logger.warn('could not record token use', { error: err.message }))
  }
}

/**
 * What a credential acts as now, by id, for rights that outlive a request (a webhook
 * subscription's owner): undefined once it is revoked or expired, or its user is deactivated,
 * so standing rights end exactly when the token stops authenticating.
 */
export async function principalOfCredential(
  db: pg.Pool | pg.PoolClient,
  tenantId: string,
  id: string
): Promise<Principal | undefined> {
  if (!isUuid(id)) return undefined
  const { rows } = await db.query(`${credentialSelect} WHERE c.tenant_id = $1 AND c.id = $2`, [tenantId, id])
  const row: CredentialRow | undefined = rows[0]
  return row && !refusal(row) ? principalOf(row) : undefined
}

/** Why a known credential no longer authenticates (revoked, expired, its user deactivated), or undefined. */
function refusal(row: CredentialRow) {
  if (row.revoked_at) return problems.unauthenticated('auth.revoked', 'The bearer token has been revoked.')
  if (row.expires_at && row.expires_at.getTime() <= Date.now())
    return problems.unauthenticated('auth.expired', `The bearer token expired at ${row.expires_at.toISOString()}.`)
  if (row.kind === 'personal' && !row.user_active)
    return problems.unauthenticated(
      'auth.user_inactive',
      'The user behind this personal access token is deactivated or gone.'
    )
  return undefined
}

/**
 * What a token acts as. API key: the tenant. Personal token: its user, with the
 * user's roles as they are now (the cache is dropped when they change), narrowed by
 * the token's scopes if it has any. Service account: its scopes, and its roles if it
 * was given some (otherwise the tenant's rights within those scopes). Every actor names
 * its token; a service account or API key also the person behind it (its creator's
 * person, if one is recorded), who is the one four-eyes rules compare.
 */
function principalOf(row: CredentialRow): Principal {
  const base = {
    tenantId: row.tenant_id,
    credentialId: row.id,
    kind: row.kind,
    ...(row.expires_at ? { expiresAt: row.expires_at.toISOString() } : {})
  }
  const token = { type: tokenTypeOf[row.kind], id: row.id, name: row.name }
  if (row.kind === 'personal') {
    return {
      ...base,
      actor: { type: 'user', id: row.user_id!, name: row.user_name ?? row.name, token },
      userId: row.user_id!,
      roles: row.user_roles ?? [],
      scopes: row.scopes ?? 'all'
    }
  }
  const person = personOf(row.created_by)
  const onBehalfOf = person ? { onBehalfOf: person } : {}
  if (row.kind === 'service_account') {
    return {
      ...base,
      actor: { type: 'service-account', id: row.id, name: row.name, token, ...onBehalfOf },
      roles: row.roles ?? 'all',
      scopes: row.scopes ?? []
    }
  }
  return {
    ...base,
    actor: { type: 'api-key', id: row.id, name: row.name, token, ...onBehalfOf },
    roles: 'all',
    scopes: row.scopes ?? 'all'
  }
}

const tokenTypeOf = {
  api_key: 'api-key',
  personal: 'personal',
  service_account: 'service-account'
} as const satisfies Record<CredentialKind, NonNullable<Actor['token']>['type']>
