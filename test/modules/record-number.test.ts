import t from '../helpers/tap.ts'
import { compilePattern } from '../../core/modules/record-number.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

const at = new Date('2026-03-07T09:15:00Z')

t.test('renders the text around {seq} with UTC date tokens and the declared width', async (t) => {
  t.same(compilePattern('INC-{YYYY}-{seq:5}').render(at), { prefix: 'INC-2026-', suffix: '', width: 5 })
  t.same(compilePattern('INS-{YYYY}{MM}-{seq:4}').render(at), { prefix: 'INS-202603-', suffix: '', width: 4 })
  t.same(compilePattern('{YY}{MM}{DD}/{seq:3}').render(at), { prefix: '260307/', suffix: '', width: 3 })
  t.same(
    compilePattern('CA{seq:2}-{YY}').render(at),
    { prefix: 'CA', suffix: '-26', width: 2 },
    'date tokens after {seq} form the suffix'
  )
  t.same(compilePattern('{seq}').render(at), { prefix: '', suffix: '', width: 1 }, '{seq} alone has width 1')
  t.same(compilePattern('N-{seq:12}').render(at), { prefix: 'N-', suffix: '', width: 12 }, 'two-digit widths')
})

t.test('uses the UTC calendar date, not the local one', async (t) => {
  // 23:30 on 31 December in New York is already 1 January in UTC.
  t.same(compilePattern('X-{YYYY}-{MM}-{DD}-{seq}').render(new Date('2026-12-31T23:30:00-05:00')), {
    prefix: 'X-2027-01-01-',
    suffix: '',
    width: 1
  })
  t.same(compilePattern('X-{YYYY}{MM}{DD}-{seq}').render(new Date('2026-01-01T00:30:00+02:00')), {
    prefix: 'X-20251231-',
    suffix: '',
    width: 1
  })
})

t.test('pads month and day to two digits', async (t) => {
  t.equal(compilePattern('{MM}{DD}{seq}').render(new Date('2026-01-02T00:00:00Z')).prefix, '0102')
  t.equal(compilePattern('{MM}{DD}{seq}').render(new Date('2026-11-22T00:00:00Z')).prefix, '1122')
})

t.test('refuses patterns without exactly one {seq} or with unknown tokens', async (t) => {
  t.throws(() => compilePattern('INC-{YYYY}'), /exactly one \{seq\}/)
  t.throws(() => compilePattern('INC-{seq}-{seq:3}'), /exactly one \{seq\}/)
  t.throws(() => compilePattern('INC-{Q}-{seq}'), /unknown token/)
  t.throws(() => compilePattern('INC-{seq:123}-{seq}'), /unknown token/, 'a three-digit width is not a token')
  t.throws(() => compilePattern('INC-{seq:5'), /exactly one|unknown token/)
  t.throws(() => compilePattern('INC-}{seq}'), /unknown token/, 'a stray brace')
  t.throws(() => compilePattern('inc-{yyyy}-{seq}'), /unknown token/, 'tokens are case-sensitive')
})

const create = async (moduleKey: string, payload: Record<string, unknown>) => {
  const r = await server.request('POST', '/api/v1/records', { body: { moduleKey, payload } })
  if (r.status !== 201) throw new Error(`create ${moduleKey}: ${r.status} ${r.text}`)
  return r.body.number as string
}

t.test('numbers records from the module pattern, padded to its width', async (t) => {
  const inc = compilePattern('INC-{YYYY}-{seq:5}').render(new Date()).prefix
  t.equal(await create('incident', incidentPayload()), `${inc}00001`)
  t.equal(await create('incident', incidentPayload()), `${inc}00002`)
  const ins = compilePattern('INS-{YYYY}{MM}-{seq:4}').render(new Date()).prefix
  t.equal(
    await create('inspection', {
      title: 'Fire doors',
      kind: 'fire-safety',
      site: 'Leeds DC',
      scheduledFor: '2026-12-01'
    }),
    `${ins}0001`
  )
})

t.test('a sequence beyond the width keeps all its digits', async (t) => {
  const inc = compilePattern('INC-{YYYY}-{seq:5}').render(new Date()).prefix
  await server.platform.db.system.query(
    "UPDATE record_sequences SET value = 99998 WHERE tenant_id = 'acme' AND module_key = 'incident'"
  )
  t.equal(await create('incident', incidentPayload()), `${inc}99999`)
  t.equal(await create('incident', incidentPayload()), `${inc}100000`)
  t.equal(await create('incident', incidentPayload()), `${inc}100001`)
})

t.test('concurrent creates get distinct, consecutive numbers', async (t) => {
  const inc = compilePattern('INC-{YYYY}-{seq:5}').render(new Date()).prefix
  const { rows } = await server.platform.db.system.query(
    "SELECT value FROM record_sequences WHERE tenant_id = 'acme' AND module_key = 'incident'"
  )
  const start = Number(rows[0].value)
  const numbers = await Promise.all(Array.from({ length: 15 }, () => create('incident', incidentPayload())))
  const expected = Array.from({ length: 15 }, (_, i) => `${inc}${start + i + 1}`)
  t.same([...numbers].sort(), expected.sort())
})
