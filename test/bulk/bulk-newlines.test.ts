import t from '../helpers/tap.ts'
import { holdsSeveralObjects } from '../../plugins/bulk/bulk.lines.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())
const key = server.keys.acme
const pool = server.platform.db.system
const path = '/api/modules/incident/bulk'
const row = (title: string) => JSON.stringify({ payload: incidentPayload({ title }) })
/** What `curl -d @file` sends of an NDJSON file: the lines with their newlines stripped. */
const withoutNewlines = (lines: string[]) => lines.join('')

async function titles(prefix: string): Promise<string[]> {
  const { rows } = await pool.query(
    "SELECT payload->>'title' AS title FROM records WHERE tenant_id = 'acme' AND payload->>'title' LIKE $1 ORDER BY seq",
    [`${prefix}%`]
  )
  return rows.map((r) => r.title)
}

t.test(
  'a body whose newlines were stripped (curl -d @file) is refused up front with a 400 problem that says to send it with --data-binary',
  async (t) => {
    for (const [label, body] of [
      ['back to back', withoutNewlines([row('NL 1'), row('NL 2'), row('NL 3')])],
      ['with a space between', `${row('NL 1')} ${row('NL 2')}`],
      ['after blank lines', `\n  \n${withoutNewlines([row('NL 1'), row('NL 2')])}\n`],
      [
        'with a first row that breaks the schema',
        withoutNewlines([JSON.stringify({ payload: { title: 'NL x' }, extra: 1 }), row('NL 2')])
      ]
    ]) {
      const res = await bulkCall(server.url, path, key, body)
      t.equal(res.status, 400, label)
      t.match(res.headers.get('content-type'), /^application\/problem\+json/)
      t.match(
        res.body,
        { type: /\/bad-request$/, title: 'Bad request', status: 400, code: 'bulk.newlines_missing', traceId: String },
        label
      )
      t.match(res.body.detail, /lost its newlines/)
      t.match(res.body.detail, /--data-binary @file/)
    }
    t.same(await titles('NL'), [], 'nothing was written')
  }
)

t.test(
  'a stripped body longer than a line may be is recognised by its start, not reported as one row too large',
  async (t) => {
    const many = Array.from({ length: 3000 }, (_, i) => row(`BIG ${i} ${'x'.repeat(300)}`))
    const body = withoutNewlines(many)
    t.ok(body.length > 1024 * 1024, `${body.length} bytes: past the 1 MiB line cap`)
    const res = await bulkCall(server.url, path, key, body)
    t.equal(res.status, 400)
    t.equal(res.body.code, 'bulk.newlines_missing')
    t.same(await titles('BIG'), [])
  }
)

t.test('a refused body leaves its Idempotency-Key free for the corrected body', async (t) => {
  const lines = [row('KEYNL 1'), row('KEYNL 2')]
  const refused = await bulkCall(server.url, path, key, withoutNewlines(lines), { 'Idempotency-Key': 'newlines-key' })
  t.equal(refused.status, 400)
  const fixed = await bulkCall(server.url, path, key, ndjson(lines), { 'Idempotency-Key': 'newlines-key' })
  t.equal(fixed.status, 200)
  t.match(fixed.lines.at(-1), { summary: { created: 2, complete: true } })
  t.same(await titles('KEYNL'), ['KEYNL 1', 'KEYNL 2'])
})

t.test(
  'a later line holding several objects fails alone with bulk.newlines_missing; the other rows load',
  async (t) => {
    const res = await bulkCall(
      server.url,
      path,
      key,
      ndjson([row('LATER 1'), withoutNewlines([row('LATER 2a'), row('LATER 2b')]), row('LATER 3')])
    )
    t.equal(res.status, 200)
    t.match(res.lines[0], { line: 1, status: 'created' })
    t.match(res.lines[1], { line: 2, status: 'error', problem: { status: 400, code: 'bulk.newlines_missing' } })
    t.match(res.lines[1].problem.detail, /This line holds several JSON objects/)
    t.match(res.lines[2], { line: 3, status: 'created' })
    t.match(
      res.lines[3],
      { summary: { rows: 3, created: 2, errors: 1, complete: true } },
      'the row failed on its own merits: the call is complete'
    )
    t.same(await titles('LATER'), ['LATER 1', 'LATER 3'])
  }
)

t.test(
  'one honest invalid row is still a row error, first line or not, and "}{" inside a string is no sign of lost newlines',
  async (t) => {
    for (const [label, first] of [
      ['unfinished', '{"payload": {"title": "broken'],
      ['a stray closing brace', `${row('HONEST x')}}`],
      ['text after the object', `${row('HONEST x')} trailing`],
      ['"}{" in an unfinished string', '{"payload": {"title": "a}{b'],
      ['an array after the object', `${row('HONEST x')}[1]`]
    ]) {
      const res = await bulkCall(server.url, path, key, ndjson([first, row('HONEST ok')]))
      t.equal(res.status, 200, label)
      t.match(res.lines[0], { line: 1, status: 'error', problem: { code: 'row.malformed_json' } }, label)
      t.match(res.lines[1], { line: 2, status: 'created' }, label)
    }
    const inString = await bulkCall(server.url, path, key, ndjson([row('HONEST }{ in a title')]))
    t.match(inString.lines[0], { status: 'created' })
    t.same(await titles('HONEST }{'), ['HONEST }{ in a title'])
  }
)

t.test('holdsSeveralObjects follows strings and escapes, and needs the first object to close', async (t) => {
  const yes = ['{}{}', '{"a":1} {"b":2}', ' {"a":"}{"}\t{', '{"a":"\\"}"}{"b":1}', '{"a":[{}]}{']
  const no = ['{}', '{"a":"}{"}', '{"a":1', '[]{}', '{"a":1}}', '{"a":1} x{}', '{"a":"\\"}{"}', '']
  for (const s of yes) t.ok(holdsSeveralObjects(Buffer.from(s)), s)
  for (const s of no) t.notOk(holdsSeveralObjects(Buffer.from(s)), JSON.stringify(s))
})
