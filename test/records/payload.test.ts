import t from '../helpers/tap.ts'
import { diffPayload, hasValue, mergePatch as merge } from '../../plugins/records/records.payload.ts'

/** mergePatch's result as a plain object, for deep comparison (it has no prototype). */
const mergePatch = (current: Record<string, unknown>, patch: Record<string, unknown>) => ({ ...merge(current, patch) })

t.test(
  'mergePatch returns an object without a prototype, so a __proto__ key is an own field and nothing is inherited',
  async (t) => {
    const out = merge({ title: 'Spill' }, JSON.parse('{"__proto__":{"investigationLead":"x"}}'))
    t.equal(Object.getPrototypeOf(out), null)
    t.equal(out.investigationLead, undefined, 'no inherited value for a guard to read')
    t.ok(Object.hasOwn(out, '__proto__'), 'the key is data, which the payload schema then refuses')
    t.equal(out.constructor, undefined)
  }
)

t.test('mergePatch replaces given keys, removes null ones and keeps the rest', async (t) => {
  const current = { title: 'Spill', severity: 'low', site: 'Leeds' }
  t.strictSame(mergePatch(current, { severity: 'high', site: null, rootCause: 'valve' }), {
    title: 'Spill',
    severity: 'high',
    rootCause: 'valve'
  })
  t.strictSame(current, { title: 'Spill', severity: 'low', site: 'Leeds' }, 'the current payload is not mutated')
})

t.test('mergePatch with an empty patch returns an equal copy', async (t) => {
  const current = { a: 1 }
  const out = merge(current, {})
  t.strictSame({ ...out }, current)
  t.not(out, current, 'a new object')
})

t.test('mergePatch replaces nested objects and arrays whole (top-level merge only)', async (t) => {
  const current = { location: { latitude: 1, longitude: 2, label: 'gate' }, bodyParts: ['head', 'arms'] }
  t.strictSame(mergePatch(current, { location: { latitude: 3, longitude: 4 }, bodyParts: ['legs'] }), {
    location: { latitude: 3, longitude: 4 },
    bodyParts: ['legs']
  })
})

t.test('mergePatch keeps falsy values that are not null', async (t) => {
  t.strictSame(mergePatch({ a: 'x', b: 5, c: true }, { a: '', b: 0, c: false }), { a: '', b: 0, c: false })
})

t.test('mergePatch removing a key that does not exist changes nothing', async (t) => {
  t.strictSame(mergePatch({ a: 1 }, { missing: null }), { a: 1 })
})

t.test('diffPayload lists changed and added fields in key order of the new payload, then removed ones', async (t) => {
  const before = { title: 'Spill', severity: 'low', site: 'Leeds', note: 'n' }
  const after = { rootCause: 'valve', title: 'Spill', severity: 'high' }
  t.strictSame(diffPayload(before, after), [
    { field: 'rootCause', from: null, to: 'valve' },
    { field: 'severity', from: 'low', to: 'high' },
    { field: 'site', from: 'Leeds', to: null },
    { field: 'note', from: 'n', to: null }
  ])
})

t.test('diffPayload compares nested values by content', async (t) => {
  const before = { location: { latitude: 1, longitude: 2 }, parts: ['a', 'b'], items: [{ k: 1 }] }
  t.strictSame(diffPayload(before, structuredClone(before)), [], 'equal copies are no change')
  t.strictSame(
    diffPayload(before, { ...before, parts: ['b', 'a'] }),
    [{ field: 'parts', from: ['a', 'b'], to: ['b', 'a'] }],
    'array order matters'
  )
  t.strictSame(diffPayload(before, { ...before, items: [{ k: 2 }] }), [
    { field: 'items', from: [{ k: 1 }], to: [{ k: 2 }] }
  ])
})

t.test('diffPayload tells values of different types apart', async (t) => {
  t.strictSame(diffPayload({ n: 1 }, { n: '1' }), [{ field: 'n', from: 1, to: '1' }])
  t.strictSame(diffPayload({ b: false }, { b: 0 }), [{ field: 'b', from: false, to: 0 }])
  t.strictSame(diffPayload({ s: '' }, { s: null }), [{ field: 's', from: '', to: null }])
})

t.test('diffPayload of an empty payload against a new one lists every field as added', async (t) => {
  t.strictSame(diffPayload({}, { a: 1, b: [] }), [
    { field: 'a', from: null, to: 1 },
    { field: 'b', from: null, to: [] }
  ])
  t.strictSame(diffPayload({}, {}), [])
})

t.test('mergePatch then diffPayload describe a PATCH', async (t) => {
  const current = { title: 'Spill', severity: 'low', site: 'Leeds' }
  const next = mergePatch(current, { severity: 'low', site: null })
  t.strictSame(
    diffPayload(current, next),
    [{ field: 'site', from: 'Leeds', to: null }],
    'an unchanged value given again is not a change'
  )
})

t.test('hasValue counts only missing, null, blank strings and empty arrays as empty', async (t) => {
  for (const empty of [undefined, null, '', '   ', []])
    t.equal(hasValue(empty), false, `${JSON.stringify(empty) ?? 'undefined'} is empty`)
  for (const filled of [0, false, 'x', '0', ['a'], [null], {}, { latitude: 0, longitude: 0 }])
    t.equal(hasValue(filled), true, `${JSON.stringify(filled)} is filled`)
})
