import pg from 'pg'

/**
 * What "nothing changed" means after a refusal: one SQL statement over every table of the
 * database (all tenants), taken just before and just after each request. Requests go one
 * at a time and no jobs run, so a difference belongs to the request between the two.
 *
 * Every table gets its row count. The tables a request writes get a digest of what a
 * write changes (versions, states, revocations, timestamps); `credentials.last_used_at`
 * is left out, since every authenticated call sets it.
 */
const digests: Record<string, string> = {
  records: `sum(hashtext(id::text || state || version || coalesce(external_ref, '-') || coalesce(deleted_at::text, '-') || md5(payload::text)))`,
  record_activity: 'max(id)',
  record_sequences: 'sum(value)',
  credentials: `sum(hashtext(id::text || name || coalesce(scopes::text, '-') || coalesce(roles::text, '-') || coalesce(expires_at::text, '-') || coalesce(revoked_at::text, '-')))`,
  attachments: `sum(hashtext(id::text || state || size || coalesce(uploaded_at::text, '-')))`,
  export_jobs: `sum(hashtext(id::text || status || attempts || rows_done || coalesce(rows_total, -1) || filters::text))`,
  users: `sum(hashtext(id::text || updated_at::text || active::text || roles::text))`,
  groups: 'max(updated_at)',
  tenants: 'max(updated_at)',
  tenant_modules: `sum(hashtext(module_key || module_version || installed::text))`,
  idempotency_keys: `sum(hashtext(key || state || coalesce(status, 0) || fingerprint))`
}

/**
 * Tables a refused request may change: the stored answer of an Idempotency-Key (4xx answers
 * are kept and replayed) and the per-line outcomes of a bulk call with one.
 */
export const changedByIdempotentRefusals = ['idempotency_keys', 'bulk_outcomes']

/** Tables outside the service's data: the job scheduler's queue, knex's migration bookkeeping. */
const ignored = /^(agenda|knex_)/i

export type Snapshot = { at: string; tables: Record<string, unknown> }

export class Snapshots {
  private sql = ''
  private constructor(private readonly client: pg.Client) {}

  static async open(url: string): Promise<Snapshots> {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    const s = new Snapshots(client)
    const { rows } = await client.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`
    )
    const parts = rows
      .map((r) => r.table_name as string)
      .filter((t) => !ignored.test(t))
      .map((t) => `'${t}', (SELECT json_build_array(count(*)${digests[t] ? `, ${digests[t]}` : ''}) FROM "${t}")`)
    s.sql = `SELECT clock_timestamp()::text AS at, json_build_object(${parts.join(', ')}) AS tables`
    return s
  }

  async take(): Promise<Snapshot> {
    const { rows } = await this.client.query(this.sql)
    return rows[0]
  }

  /** Records written since `since` (a snapshot's time), as PostgreSQL holds them. */
  async recordsSince(
    since: string
  ): Promise<Array<{ id: string; tenant_id: string; module_key: string; state: string; payload: unknown }>> {
    const { rows } = await this.client.query(
      'SELECT id, tenant_id, module_key, state, payload FROM records WHERE updated_at >= $1',
      [since]
    )
    return rows
  }

  close() {
    return this.client.end()
  }
}

/** Tables whose count or digest differs, with both values. */
export function differences(before: Snapshot, after: Snapshot, allowed: string[] = []): string[] {
  return Object.keys(after.tables)
    .filter((t) => !allowed.includes(t) && JSON.stringify(before.tables[t]) !== JSON.stringify(after.tables[t]))
    .map((t) => `${t}: ${JSON.stringify(before.tables[t])} → ${JSON.stringify(after.tables[t])}`)
}
