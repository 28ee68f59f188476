import { randomUUID } from 'node:crypto'
import { systemPrincipal } from '../../core/auth/principal.ts'
import { tenantPool } from '../../core/db/tenant-scope.ts'
import { changeRecords, createRecords, createRules } from '../../plugins/records/records.shared.ts'
import { ownerPool } from '../helpers/database.ts'
import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * record_activity has no foreign key to records (plugins/records/migrations/003): what the
 * key guaranteed, the write path's statements hold by construction, and what its ON DELETE
 * CASCADE did, a statement-level trigger on records does.
 */
const server = await startTestServer()
t.teardown(() => server.close())
const pool = tenantPool(server.platform.db.pool, 'acme')
// The tables' owner: reads the catalog and deletes records as only a tenant's removal does.
const owner = ownerPool(server.platform.db.url)
t.teardown(() => owner.end())
const incident = server.platform.tenants.module('acme', 'incident')
const job = systemPrincipal('acme', 'activity-key-test')
const writer = { tenantId: 'acme', actor: job.actor }
const activityOf = async (ids: string[]) =>
  (
    await owner.query(
      'SELECT record_id::text AS id, action FROM record_activity WHERE tenant_id = $1 AND record_id = ANY($2::uuid[]) ORDER BY id',
      ['acme', ids]
    )
  ).rows

t.test('activity is not checked row by row against records: no foreign key, one trigger per statement', async (t) => {
  const { rows: keys } = await owner.query(
    "SELECT conname FROM pg_constraint WHERE conrelid = 'record_activity'::regclass AND contype = 'f'"
  )
  t.same(keys, [], 'no foreign key on record_activity')
  const { rows: triggers } = await owner.query(
    "SELECT tgname FROM pg_trigger WHERE tgrelid = 'records'::regclass AND tgname = 'record_activity_cascade'"
  )
  t.equal(triggers.length, 1, 'the cascade is a trigger on records')
})

t.test('a change of a record that does not exist writes no activity entry and no event', async (t) => {
  const ghost = randomUUID()
  const changed = await changeRecords(pool, writer, incident, [
    { id: ghost, payload: incidentPayload(), state: 'reported', action: 'updated', changes: [] }
  ])
  t.same(changed, [], 'nothing changed')
  t.same(await activityOf([ghost]), [], 'no activity entry names it')
  const { rows } = await owner.query('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1 AND subject_id = $2', [
    'acme',
    ghost
  ])
  t.equal(rows[0].n, 0, 'no event names it')
})

t.test("deleting records from the table deletes their activity with them, and no other record's", async (t) => {
  const payloads = [1, 2, 3].map((i) => incidentPayload({ title: `Cascade ${i}` }))
  const made = await createRecords(
    pool,
    writer,
    incident,
    payloads.map((payload) => createRules(job, incident, payload))
  )
  const ids = made.map((m) => m.id)
  t.equal((await activityOf(ids)).length, 3, 'a created entry each')
  await owner.query('DELETE FROM records WHERE tenant_id = $1 AND id = ANY($2::uuid[])', ['acme', ids.slice(0, 2)])
  t.same(
    await activityOf(ids),
    [{ id: ids[2], action: 'created' }],
    'the deleted records lost their activity; the one left keeps its'
  )
})

t.test("removing a tenant removes its records' activity, as the foreign key's cascade did", async (t) => {
  const tenantId = `gone-${process.pid}`
  await owner.query("INSERT INTO tenants (id, name) VALUES ($1, 'Gone')", [tenantId])
  const payload = incidentPayload({ title: 'Of a tenant that leaves' })
  const [made] = await createRecords(owner, { tenantId, actor: job.actor }, incident, [
    createRules(job, incident, payload)
  ])
  const count = async () =>
    (
      await owner.query('SELECT count(*)::int AS n FROM record_activity WHERE tenant_id = $1 AND record_id = $2', [
        tenantId,
        made.id
      ])
    ).rows[0].n
  t.equal(await count(), 1)
  await owner.query('DELETE FROM tenants WHERE id = $1', [tenantId])
  t.equal(await count(), 0, 'tenants → records (ON DELETE CASCADE) → the trigger')
})

t.test('the cascade reaches the activity whoever removes the tenant, row-level security or not', async (t) => {
  const tenantId = `gone-app-${process.pid}`
  await owner.query("INSERT INTO tenants (id, name) VALUES ($1, 'Gone too')", [tenantId])
  const payload = incidentPayload({ title: 'Of another tenant that leaves' })
  const [made] = await createRecords(owner, { tenantId, actor: job.actor }, incident, [
    createRules(job, incident, payload)
  ])
  // As the service's role, which row-level security binds, with no tenant scope set: the foreign key's cascade
  // ignored the policy, and the trigger that replaces it must see the rows too.
  const client = await owner.connect()
  try {
    await client.query(`SET ROLE ${server.platform.config.database.role}`)
    await client.query('DELETE FROM tenants WHERE id = $1', [tenantId])
    await client.query('RESET ROLE')
  } finally {
    client.release()
  }
  const { rows } = await owner.query('SELECT count(*)::int AS n FROM record_activity WHERE tenant_id = $1', [tenantId])
  t.equal(rows[0].n, 0, 'no activity left behind')
  t.notOk(made.id === undefined)
})
