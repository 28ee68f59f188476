import pg from 'pg'
import { migrationLock } from './migrate.ts'
import { allTenants, tenantSetting } from './tenant-scope.ts'

/** The one policy every tenant-owned table gets; a changed policy needs a new name (the step only adds what is missing). */
export const tenantPolicy = 'records_tenant_scope'

/**
 * What a row must satisfy to be seen or written. `current_setting` sits in a sub-select so it
 * is an init plan, read once per statement instead of once per row; `missing_ok` makes an
 * unset setting NULL, which matches no row.
 */
const policyCondition =
  `tenant_id = (SELECT current_setting('${tenantSetting}', true))` +
  ` OR (SELECT current_setting('${tenantSetting}', true)) = '${allTenants}'`

const duplicateObject = '42710'
const uniqueViolation = '23505'

/**
 * The step after the migrations that makes tenancy the database's rule, not each query's:
 * every table of the schema with a `tenant_id` column (those of plugin migrations added later
 * too) gets row-level security, forced on its owner as well, and the one policy that shows a
 * row only to the scope set in `records.tenant` (core/db/tenant-scope.ts). When `role` is set,
 * it is made (if the migrating user may) and given what the app needs; the pool then acts as
 * it, since superusers and BYPASSRLS roles never see a policy. Idempotent, and safe when many
 * instances (or test databases) start together. Returns the tables it secured this time.
 */
export async function secureTenantTables(url: string, role: string | null): Promise<string[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('SELECT pg_advisory_lock($1)', [migrationLock])
    if (role) await ensureAppRole(client, role)
    const { rows } = await client.query<{ table: string; enabled: boolean; forced: boolean; policy: boolean }>(
      `SELECT c.relname AS table, c.relrowsecurity AS enabled, c.relforcerowsecurity AS forced,
              EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = $1) AS policy
         FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
        WHERE c.relkind IN ('r', 'p')
        ORDER BY c.relname`,
      [tenantPolicy]
    )
    const secured: string[] = []
    for (const t of rows) {
      if (t.enabled && t.forced && t.policy) continue
      const table = client.escapeIdentifier(t.table)
      await client.query('BEGIN')
      await client.query(`ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY`)
      if (!t.policy) await client.query(`CREATE POLICY ${tenantPolicy} ON ${table} USING (${policyCondition})`)
      await client.query('COMMIT')
      secured.push(t.table)
    }
    await client.query('SELECT pg_advisory_unlock($1)', [migrationLock])
    return secured
  } finally {
    // Ending the session releases the lock too, when a step failed.
    await client.end()
  }
}

/**
 * The role the pool acts as: no BYPASSRLS, not the tables' owner. Roles are the cluster's, so
 * two databases migrating at once may both try to make it: the loser's duplicate is success.
 * Its grants are the database's, renewed each time so tables added since are covered;
 * CREATE on the schema is for Agenda, which makes its own table through the same pool.
 */
async function ensureAppRole(client: pg.Client, role: string): Promise<void> {
  const name = client.escapeIdentifier(role)
  const { rows } = await client.query(
    `SELECT r.rolname IS NOT NULL AS exists, r.rolsuper OR r.rolbypassrls AS bypasses,
            me.rolsuper AS superuser, me.rolsuper OR me.rolcreaterole AS may_create,
            r.rolname IS NOT NULL AND pg_has_role(current_user, r.oid, 'MEMBER') AS member
       FROM pg_roles me LEFT JOIN pg_roles r ON r.rolname = $1
      WHERE me.rolname = current_user`,
    [role]
  )
  const me = rows[0]
  if (me.bypasses)
    throw new Error(
      `database.role "${role}" is a superuser or has BYPASSRLS, so row-level security would not apply to it: name a plain role.`
    )
  if (!me.exists) {
    if (!me.may_create)
      throw new Error(
        `database.role "${role}" does not exist and the database user may not create it: create it (NOLOGIN, no BYPASSRLS) and grant it to the user, or set database.role to null when the user is itself a plain role.`
      )
    try {
      await client.query(`CREATE ROLE ${name} NOLOGIN`)
    } catch (err) {
      const code = (err as { code?: string }).code
      if (code !== duplicateObject && code !== uniqueViolation) throw err
    }
  }
  if (!me.superuser && !me.member) await client.query(`GRANT ${name} TO CURRENT_USER`)
  await client.query(`GRANT USAGE, CREATE ON SCHEMA public TO ${name}`)
  await client.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${name}`)
  await client.query(`GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO ${name}`)
}
