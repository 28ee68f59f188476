import t, { type Test } from '../helpers/tap.ts'
import { bulkCall } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'
import { ownerPool } from '../helpers/database.ts'

const server = await startTestServer({ bulk: { batchSize: 50, flushAfterMs: 25 } })
t.teardown(() => server.close())
const key = server.keys.acme
// The tables' owner: this file changes the schema (a constraint, a trigger) or reads plans without the tenant policy.
const pool = ownerPool(server.platform.db.url)
t.teardown(() => pool.end())
const path = '/api/modules/incident/bulk'

/** An NDJSON body from lines given as JSON text, so lines may hold what JSON.stringify cannot write (1e400). */
const body = (lines: string[]) => lines.join('\n') + '\n'
const row = (title: string, extra = '') => `{"payload":${JSON.stringify(incidentPayload({ title }))}${extra}}`

async function titles(prefix: string): Promise<string[]> {
  const { rows } = await pool.query(
    `SELECT payload->>'title' AS title FROM records WHERE tenant_id = 'acme' AND payload->>'title' LIKE $1 ORDER BY seq`,
    [`${prefix}%`]
  )
  return rows.map((r) => r.title)
}

function refusedAlone(t: Test, lines: any[], bad: number, code: string, total: number) {
  const outcomes = lines.slice(0, total)
  t.equal(outcomes.length, total, 'one outcome per row')
  t.match(outcomes[bad - 1], { line: bad, status: 'error', problem: { code } }, `line ${bad} fails with ${code}`)
  t.ok(
    outcomes.every((o, i) => i === bad - 1 || ['created', 'updated', 'unchanged', 'valid'].includes(o.status)),
    'every other row is loaded'
  )
  t.match(lines[total], { summary: { rows: total, errors: 1, complete: true } }, 'the call completes')
}

t.test('a row holding NUL, a lone surrogate, 1e400 or a __proto__ key fails alone; its batch loads', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['NUL', row('NUL a\u0000b'), 'payload.title'],
    ['lone surrogate', row('SUR \ud800'), 'payload.title'],
    ['1e400', row('BIG').replace('}}', ',"lostTimeDays":1e400}}'), 'payload.lostTimeDays'],
    ['__proto__', row('PRO').replace('{"payload":{', '{"payload":{"__proto__":{"x":1},'), 'payload.__proto__'],
    ['NUL in externalRef', row('REF', ',"externalRef":"a\\u0000b"'), 'externalRef']
  ]
  for (const [label, badLine, field] of cases) {
    const tag = `HOSTILE-${label}`
    const lines = [row(`${tag} 1`), row(`${tag} 2`), badLine, row(`${tag} 4`)]
    for (const attempt of ['first', 'retry']) {
      const res = await bulkCall(server.url, path, key, body(lines), {
        'Idempotency-Key': `hostile-${label.replace(/\W/g, '-')}`
      })
      t.equal(res.status, 200)
      refusedAlone(t, res.lines, 3, 'field.invalid', 4)
      t.ok(
        res.lines[2].problem.errors.some((e: { field: string }) => e.field === field),
        `${label} (${attempt}): the problem names ${field}`
      )
    }
    t.same(await titles(tag), [`${tag} 1`, `${tag} 2`, `${tag} 4`], `${label}: the good rows are stored once`)
  }
})

t.test('a row the database itself refuses fails alone, in create batches, upsert batches and dry runs', async (t) => {
  // A real refusal by PostgreSQL that no edge check knows of: a CHECK constraint on this test database.
  await pool.query(
    `ALTER TABLE records ADD CONSTRAINT test_refuses_title CHECK (payload->>'title' IS DISTINCT FROM 'REFUSE ME') NOT VALID`
  )
  t.teardown(() => pool.query('ALTER TABLE records DROP CONSTRAINT test_refuses_title'))

  const creates = await bulkCall(
    server.url,
    path,
    key,
    body([row('DBC 1'), row('DBC 2'), row('REFUSE ME'), row('DBC 4'), row('DBC 5')])
  )
  refusedAlone(t, creates.lines, 3, 'row.refused', 5)
  t.equal(creates.lines[2].problem.status, 422)
  t.equal(creates.lines[2].problem.sqlState, '23514')
  t.same(await titles('DBC'), ['DBC 1', 'DBC 2', 'DBC 4', 'DBC 5'])

  const refs = (titles: string[]) => titles.map((title, i) => row(title, `,"externalRef":"DBU-${i + 1}"`))
  const upserts = await bulkCall(server.url, path, key, body(refs(['DBU 1', 'DBU 2', 'DBU 3'])))
  t.match(upserts.lines[3], { summary: { created: 3, complete: true } })
  // An update of DBU-2 to the refused title fails; the update of DBU-1 and the create of DBU-4 go through.
  const mixed = await bulkCall(server.url, path, key, body(refs(['DBU 1 changed', 'REFUSE ME', 'DBU 3', 'DBU 4'])))
  refusedAlone(t, mixed.lines, 2, 'row.refused', 4)
  t.match(
    mixed.lines.slice(0, 4).map((l: any) => l.status),
    ['updated', 'error', 'unchanged', 'created']
  )
  t.same(await titles('DBU'), ['DBU 1 changed', 'DBU 2', 'DBU 3', 'DBU 4'])

  const dry = await bulkCall(
    server.url,
    `${path}?dryRun=true`,
    key,
    body([row('DRY 1'), row('REFUSE ME'), row('DRY 3')])
  )
  refusedAlone(t, dry.lines, 2, 'row.refused', 3)
  t.same(await titles('DRY'), [], 'a dry run writes nothing')
})

t.test('a dry run of rows with 60,000 invalid choices is bounded per row', async (t) => {
  const huge = JSON.stringify({
    payload: incidentPayload({ title: 'HUGE', bodyParts: Array.from({ length: 60_000 }, (_, i) => `p${i}`) })
  })
  const cpu = process.cpuUsage()
  const res = await bulkCall(server.url, `${path}?dryRun=true`, key, body([huge, huge, huge]))
  const used = process.cpuUsage(cpu)
  const ms = (used.user + used.system) / 1000
  t.equal(res.lines.length, 4)
  for (const o of res.lines.slice(0, 3)) {
    t.match(o, {
      status: 'error',
      problem: { code: 'field.invalid', errors: [{ field: 'payload.bodyParts', code: 'size' }] }
    })
    t.equal(o.problem.errors.length, 1, "one problem: the array is past any request's size")
  }
  t.ok(ms < 3000, `${ms.toFixed(0)} ms of CPU for three 600 KB rows, client and server together`)
})
