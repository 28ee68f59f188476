import type pg from 'pg'

export const credentialsChannel = 'records_credentials_changed'

/**
 * Tells every instance that a principal may have narrowed: a token revoked, a user's
 * roles or activation changed, or a group changed (tenant-wide). Cached resolutions
 * of what changed are dropped on receipt.
 */
export async function announceAccessChange(
  pool: pg.Pool | pg.PoolClient,
  what: { credentialId?: string; userId?: string; tenantId?: string }
) {
  const payload = what.credentialId ? `c:${what.credentialId}` : what.userId ? `u:${what.userId}` : `t:${what.tenantId}`
  await pool.query('SELECT pg_notify($1, $2)', [credentialsChannel, payload])
}
