import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { ownerPool } from '../helpers/database.ts'

/**
 * Each activity row (and attachment) is checked against records by PostgreSQL's foreign-key
 * probe, whose generic plan a database connection keeps for its whole life. Planned on a small
 * table it once walked every record of the tenant per row (migration 007): the probe must find
 * the record by its primary key whatever the table's size when it was planned.
 */
const server = await startTestServer()
t.teardown(() => server.close())
// The tables' owner: this file changes the schema (a constraint, a trigger) or reads plans without the tenant policy.
const pool = ownerPool(server.platform.db.url)
t.teardown(() => pool.end())

// The statement ri_triggers.c runs for record_activity → records and attachments → records.
const probe =
  'SELECT 1 FROM ONLY "public"."records" x WHERE "tenant_id" OPERATOR(pg_catalog.=) $1 AND "id" OPERATOR(pg_catalog.=) $2 FOR KEY SHARE OF x'

/** Every scan node of a plan. */
function scans(node: any): any[] {
  return [...(/Scan/.test(node['Node Type']) ? [node] : []), ...(node.Plans ?? []).flatMap(scans)]
}

t.test(
  'the foreign-key probe of a record uses its primary key as a generic plan, even while the tenant has no records',
  async (t) => {
    const client = await pool.connect()
    try {
      const { rows: count } = await client.query(`SELECT count(*)::int AS n FROM records WHERE tenant_id = 'acme'`)
      t.equal(count[0].n, 0, 'no records yet: the size at which a long-lived connection first plans the probe')
      await client.query('SET plan_cache_mode = force_generic_plan')
      await client.query(`PREPARE record_fk_probe(text, uuid) AS ${probe}`)
      const { rows } = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE record_fk_probe('acme', gen_random_uuid())`)
      const found = scans(rows[0]['QUERY PLAN'][0].Plan)
      t.equal(found.length, 1, 'one scan')
      t.match(found[0], { 'Node Type': 'Index Scan', 'Index Name': 'records_pkey' }, 'an index scan on the primary key')
      t.notOk(found[0].Filter, 'both key columns are index conditions: no row is read only to be filtered out')
    } finally {
      await client.query('DEALLOCATE ALL').catch(() => undefined)
      await client.query('RESET plan_cache_mode').catch(() => undefined)
      client.release()
    }
  }
)

t.test('record numbers stay unique per tenant', async (t) => {
  const created = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload() }
  })
  t.equal(created.status, 201)
  const err = await pool
    .query(
      `INSERT INTO records (tenant_id, module_key, module_version, number, state, payload, created_by, updated_by) SELECT tenant_id, module_key, module_version, number, state, payload, created_by, updated_by FROM records WHERE tenant_id = 'acme' AND id = $1`,
      [created.body.id]
    )
    .then(
      () => undefined,
      (e) => e
    )
  t.equal(err?.code, '23505', 'a second record with the same number is refused')
  t.equal(err?.constraint, 'records_number')
})
