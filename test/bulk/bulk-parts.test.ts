import t from '../helpers/tap.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

// A row limit of 5 stands in for 10,000, so a file "too big for one call" is small.
const server = await startTestServer({ bulk: { maxRows: 5 } })
t.teardown(() => server.close())
const key = server.keys.acme
const pool = server.platform.db.system
const path = '/api/modules/incident/bulk'
const rows = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({
    payload: incidentPayload({ title: `${tag} ${i + 1}` }),
    externalRef: `${tag}-${i + 1}`
  }))

async function loaded(tag: string): Promise<string[]> {
  const { rows: found } = await pool.query(
    "SELECT external_ref FROM records WHERE tenant_id = 'acme' AND external_ref LIKE $1 ORDER BY seq",
    [`${tag}-%`]
  )
  return found.map((r) => r.external_ref)
}

t.test(
  'a call with rows past the row limit is not complete: the summary counts the rows not attempted and names the line to resume at',
  async (t) => {
    const file = rows(8, 'LIM')
    const res = await bulkCall(server.url, path, key, ndjson(file))
    t.equal(res.status, 200)
    t.ok(
      res.lines.slice(0, 5).every((l: any) => l.status === 'created'),
      'the first five load'
    )
    for (const [i, line] of [6, 7, 8].entries())
      t.match(res.lines[5 + i], { line, status: 'error', problem: { code: 'bulk.row_limit', status: 413 } })
    t.match(res.lines[5].problem.detail, /send the lines from 6 on in another call, with \?firstLine=6/)
    t.same(res.lines[8].summary, {
      rows: 8,
      created: 5,
      updated: 0,
      unchanged: 0,
      valid: 0,
      errors: 3,
      replayed: 0,
      notAttempted: 3,
      dryRun: false,
      complete: false,
      resumeAtLine: 6
    })
    t.same(await loaded('LIM'), ['LIM-1', 'LIM-2', 'LIM-3', 'LIM-4', 'LIM-5'])
  }
)

t.test(
  "the rest of a file sent from resumeAtLine with firstLine gets outcomes under the file's line numbers, and completes",
  async (t) => {
    // Line 3 of the file is blank: line numbers are those of the file, not of rows.
    const lines = [...rows(7, 'RES').map((r) => JSON.stringify(r))]
    lines.splice(2, 0, '')
    const first = await bulkCall(server.url, path, key, lines.join('\n') + '\n')
    const summary = first.lines.at(-1).summary
    t.match(
      summary,
      { rows: 7, created: 5, notAttempted: 2, complete: false, resumeAtLine: 7 },
      'rows 6 and 7 are file lines 7 and 8'
    )
    const rest = lines.slice(summary.resumeAtLine - 1).join('\n') + '\n'
    const second = await bulkCall(server.url, `${path}?firstLine=${summary.resumeAtLine}`, key, rest)
    t.same(
      second.lines.slice(0, 2).map((l: any) => [l.line, l.externalRef, l.status]),
      [
        [7, 'RES-6', 'created'],
        [8, 'RES-7', 'created']
      ]
    )
    t.same(
      second.lines[2].summary,
      {
        rows: 2,
        created: 2,
        updated: 0,
        unchanged: 0,
        valid: 0,
        errors: 0,
        replayed: 0,
        notAttempted: 0,
        dryRun: false,
        complete: true
      },
      'a complete call names no resumeAtLine'
    )
    t.same(await loaded('RES'), ['RES-1', 'RES-2', 'RES-3', 'RES-4', 'RES-5', 'RES-6', 'RES-7'])
  }
)

t.test(
  'a call refused rows for the row limit keeps its Idempotency-Key open: a retry replays what loaded and refuses the same rows again',
  async (t) => {
    const file = ndjson(rows(7, 'KLIM'))
    await bulkCall(server.url, path, key, file, { 'Idempotency-Key': 'row-limit-key' })
    const stored = await pool.query(
      "SELECT state, locked_until <= now() AS free FROM idempotency_keys WHERE key = 'row-limit-key'"
    )
    t.same(stored.rows[0], { state: 'in_flight', free: true }, 'not done: the call did not complete')
    const retry = await bulkCall(server.url, path, key, file, { 'Idempotency-Key': 'row-limit-key' })
    t.ok(retry.lines.slice(0, 5).every((l: any) => l.replayed === true))
    t.match(retry.lines.at(-1), { summary: { replayed: 5, notAttempted: 2, complete: false, resumeAtLine: 6 } })
    t.equal((await loaded('KLIM')).length, 5)
  }
)

t.test('firstLine numbers every outcome from it, blank lines and errors included, and a dry run too', async (t) => {
  const body = ndjson([
    { payload: incidentPayload() },
    '',
    { payload: incidentPayload({ severity: 'catastrophic' }) },
    '{"payload": '
  ])
  const res = await bulkCall(server.url, `${path}?firstLine=10001`, key, body)
  t.match(
    res.lines.map((l: any) => [l.line, l.status]),
    [
      [10001, 'created'],
      [10003, 'error'],
      [10004, 'error']
    ]
  )
  t.match(res.lines[2].problem, { code: 'row.malformed_json' })
  t.match(res.lines[3].summary, { rows: 3, complete: true })
  const dry = await bulkCall(server.url, `${path}?dryRun=true&firstLine=10001`, key, body)
  t.same(dry.lines[0], { line: 10001, status: 'valid', action: 'create' })
  t.match(
    dry.lines.map((l: any) => l.line),
    [10001, 10003, 10004]
  )
  t.match(dry.lines[3].summary, { dryRun: true, valid: 1, errors: 2 })
})

t.test(
  'a firstLine that is not a whole number from 1 to 1,000,000,000 in decimal digits is a 400 problem naming the parameter, before anything is read',
  async (t) => {
    const body = ndjson([{ payload: incidentPayload({ title: 'never loaded' }) }])
    for (const value of [
      '0',
      '-1',
      '1.5',
      'abc',
      '1e3',
      '0x10',
      '',
      '010',
      ' 7',
      '1000000001',
      '99999999999',
      '1&firstLine=2'
    ]) {
      const res = await bulkCall(server.url, `${path}?firstLine=${value.replace(/ /g, '%20')}`, key, body)
      t.equal(res.status, 400, `firstLine=${value}`)
      t.match(res.headers.get('content-type'), /^application\/problem\+json/)
      t.match(
        res.body,
        {
          type: /\/validation$/,
          title: String,
          status: 400,
          code: 'field.invalid',
          traceId: String,
          errors: [{ field: 'firstLine', pointer: '/firstLine' }]
        },
        `firstLine=${value}: a problem`
      )
      t.match(res.body.detail, /^firstLine must be a whole number from 1 to 1000000000/)
    }
    const { rows: found } = await pool.query(
      "SELECT count(*)::int AS n FROM records WHERE payload->>'title' = 'never loaded'"
    )
    t.equal(found[0].n, 0)
    const top = await bulkCall(server.url, `${path}?firstLine=1000000000&dryRun=true`, key, body)
    t.match(top.lines[0], { line: 1_000_000_000, status: 'valid' }, 'the bound itself is accepted')
  }
)

t.test(
  "an Idempotency-Key is bound to its firstLine: a retry with the same one replays under the file's line numbers, another is refused",
  async (t) => {
    const body = ndjson(rows(2, 'IDF'))
    const first = await bulkCall(server.url, `${path}?firstLine=501`, key, body, {
      'Idempotency-Key': 'first-line-key'
    })
    t.match(
      first.lines.map((l: any) => [l.line, l.status]),
      [
        [501, 'created'],
        [502, 'created']
      ]
    )
    const stored = await pool.query("SELECT line FROM bulk_outcomes WHERE key = 'first-line-key' ORDER BY line")
    t.same(
      stored.rows.map((r) => r.line),
      [501, 502],
      "outcomes are stored under the file's line numbers"
    )
    const retry = await bulkCall(server.url, `${path}?firstLine=501`, key, body, {
      'Idempotency-Key': 'first-line-key'
    })
    t.same(
      retry.lines.slice(0, 2).map((l: any) => [l.line, l.id, l.replayed]),
      first.lines.slice(0, 2).map((l: any) => [l.line, l.id, true])
    )
    t.match(retry.lines[2].summary, { replayed: 2, complete: true })
    for (const other of ['', '?firstLine=1', '?firstLine=502']) {
      const res = await bulkCall(server.url, `${path}${other}`, key, body, { 'Idempotency-Key': 'first-line-key' })
      t.equal(res.status, 422, `the same key with ${other || 'no firstLine'}`)
      t.equal(res.body.code, 'idempotency.key_reused')
      t.match(res.body.detail, /firstLine/)
    }
    t.same(await loaded('IDF'), ['IDF-1', 'IDF-2'], 'nothing loaded twice')

    // No firstLine and firstLine=1 are the same call.
    const plain = ndjson(rows(1, 'IDP'))
    await bulkCall(server.url, path, key, plain, { 'Idempotency-Key': 'plain-key' })
    const same = await bulkCall(server.url, `${path}?firstLine=1`, key, plain, { 'Idempotency-Key': 'plain-key' })
    t.match(same.lines[0], { line: 1, replayed: true })
  }
)
