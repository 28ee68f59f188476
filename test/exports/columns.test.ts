import t from 'tap'
import { loadConfig } from '../../core/config.ts'
import { ExportColumnsError, exportColumns, fieldToColumn, type ExportRecord } from '../../core/modules/derive/columns.ts'
import { loadModules } from '../../core/modules/registry.ts'
import { fieldTypes, type FieldDefinition, type FieldType } from '../../core/modules/types.ts'

const registry = await loadModules(loadConfig().modules)
const incident = registry.get('incident')!
const systemKeys = ['number', 'state', 'createdAt', 'updatedAt', 'createdBy']
const uuid = '6f1c1a52-3d4e-4f3a-9a51-0c2b8e4d7f10'

/** Per field type: a definition, a stored value, and the cell and kind it must become. */
const cases: { [T in FieldType]: { field: FieldDefinition; stored: unknown; cell: unknown; kind: string } } = {
  text: { field: { key: 'title', type: 'text', label: 'Title' }, stored: 'Slip, trip', cell: 'Slip, trip', kind: 'text' },
  longText: { field: { key: 'notes', type: 'longText' }, stored: 'Line 1\nLine 2', cell: 'Line 1\nLine 2', kind: 'text' },
  number: { field: { key: 'days', type: 'number' }, stored: -2.5, cell: -2.5, kind: 'number' },
  integer: { field: { key: 'people', type: 'integer' }, stored: 3, cell: 3, kind: 'integer' },
  boolean: { field: { key: 'notified', type: 'boolean' }, stored: false, cell: false, kind: 'boolean' },
  date: { field: { key: 'due', type: 'date' }, stored: '2026-03-02', cell: new Date('2026-03-02T00:00:00.000Z'), kind: 'date' },
  datetime: { field: { key: 'at', type: 'datetime' }, stored: '2026-03-02T08:30:00+01:00', cell: new Date('2026-03-02T07:30:00.000Z'), kind: 'datetime' },
  singleChoice: { field: { key: 'severity', type: 'singleChoice', options: ['low', 'high'] }, stored: 'high', cell: 'high', kind: 'text' },
  multipleChoice: { field: { key: 'parts', type: 'multipleChoice', options: ['head', 'hands'] }, stored: ['head', 'hands'], cell: 'head, hands', kind: 'text' },
  user: { field: { key: 'lead', type: 'user' }, stored: uuid, cell: uuid, kind: 'text' },
  recordRef: { field: { key: 'incident', type: 'recordRef', module: 'incident' }, stored: uuid, cell: uuid, kind: 'text' },
  group: {
    field: {
      key: 'checklist',
      type: 'group',
      fields: [
        { key: 'item', type: 'text' },
        { key: 'result', type: 'singleChoice', options: ['pass', 'fail'] },
        { key: 'due', type: 'date' },
        { key: 'note', type: 'longText' }
      ]
    },
    stored: [
      { item: 'Fire exits clear', result: 'pass' },
      { item: 'Extinguishers', result: 'fail', due: '2026-04-01', note: 'expired' }
    ],
    cell: 'Fire exits clear: pass; Extinguishers: fail, 2026-04-01, expired',
    kind: 'text'
  },
  location: { field: { key: 'where', type: 'location' }, stored: { latitude: 53.7997, longitude: -1.5492, label: 'Gate 3' }, cell: '53.7997, -1.5492 (Gate 3)', kind: 'text' }
}

t.test('the column table has exactly one row per field type', async (t) => {
  t.same(Object.keys(fieldToColumn).sort(), [...fieldTypes].sort())
})

t.test('every field type turns a stored value into its typed cell', async (t) => {
  for (const type of fieldTypes) {
    const { field, stored, cell, kind } = cases[type]
    const spec = fieldToColumn[type](field)
    t.equal(spec.key, field.key, `${type}: key`)
    t.equal(spec.header, field.label ?? field.key, `${type}: header is the label or the key`)
    t.equal(spec.kind, kind, `${type}: kind`)
    t.ok(spec.width >= 6 && spec.width <= 80, `${type}: a sensible width`)
    t.same(spec.value(stored), cell, `${type}: value`)
    t.equal(spec.value(undefined), null, `${type}: a missing value is an empty cell`)
    t.equal(spec.value(null), null, `${type}: null is an empty cell`)
  }
})

t.test('a location without a label and a stored value of the wrong shape still export readably', async (t) => {
  t.equal(fieldToColumn.location(cases.location.field).value({ latitude: -33.86, longitude: 151.21 }), '-33.86, 151.21')
  t.equal(fieldToColumn.number(cases.number.field).value('12.5'), 12.5)
  t.equal(fieldToColumn.date(cases.date.field).value('not a date'), 'not a date')
  t.equal(fieldToColumn.text(cases.text.field).value({ a: 1 }), '{"a":1}')
})

t.test('export columns are the system columns and then every field in definition order', async (t) => {
  const columns = exportColumns(incident, { hidden: new Set() })
  t.same(
    columns.map((c) => c.key),
    [...systemKeys, ...incident.definition.fields.map((f) => f.key)]
  )
  t.same(columns.slice(0, 5).map((c) => c.header), ['Number', 'State', 'Created', 'Updated', 'Created by'])
  t.same(columns.slice(0, 5).map((c) => c.kind), ['text', 'text', 'datetime', 'datetime', 'text'])
})

t.test('a column reads its cell from an export record', async (t) => {
  const record: ExportRecord = {
    number: 'INC-2026-00001',
    state: 'reported',
    createdAt: '2026-03-02T08:30:00.000Z',
    updatedAt: '2026-03-02T09:00:00.000Z',
    createdBy: { name: 'Ann Smith' },
    payload: { title: 'Forklift near miss', injuredPeople: 0, regulatorNotifiedOn: '2026-03-03' }
  }
  const byKey = new Map(exportColumns(incident, { hidden: new Set() }).map((c) => [c.key, c]))
  t.equal(byKey.get('number')!.get(record), 'INC-2026-00001')
  t.same(byKey.get('createdAt')!.get(record), new Date('2026-03-02T08:30:00.000Z'))
  t.equal(byKey.get('createdBy')!.get(record), 'Ann Smith')
  t.equal(byKey.get('title')!.get(record), 'Forklift near miss')
  t.equal(byKey.get('injuredPeople')!.get(record), 0)
  t.same(byKey.get('regulatorNotifiedOn')!.get(record), new Date('2026-03-03T00:00:00.000Z'))
  t.equal(byKey.get('rootCause')!.get(record), null)
})

t.test('hidden fields are left out of the export columns', async (t) => {
  const keys = exportColumns(incident, { hidden: new Set(['medicalDetails']) }).map((c) => c.key)
  t.notOk(keys.includes('medicalDetails'))
  t.equal(keys.length, systemKeys.length + incident.definition.fields.length - 1)
})

t.test('hidden fields are left out even when asked for by name', async (t) => {
  const keys = exportColumns(incident, { hidden: new Set(['medicalDetails']), only: ['title', 'medicalDetails', 'severity'] }).map((c) => c.key)
  t.same(keys, ['title', 'severity'])
})

t.test('asking only for hidden fields is refused, without naming them as allowed', async (t) => {
  const err = t.throws(() => exportColumns(incident, { hidden: new Set(['medicalDetails']), only: ['medicalDetails'] })) as ExportColumnsError
  t.ok(err instanceof ExportColumnsError)
  t.notOk(err.allowed.includes('medicalDetails'))
})

t.test('only picks the named columns in the order asked', async (t) => {
  const columns = exportColumns(incident, { hidden: new Set(), only: ['severity', 'number', 'occurredAt', 'createdBy'] })
  t.same(
    columns.map((c) => c.key),
    ['severity', 'number', 'occurredAt', 'createdBy']
  )
})

t.test('an unknown column key is an error that lists the allowed keys', async (t) => {
  const err = t.throws(() => exportColumns(incident, { hidden: new Set(['medicalDetails']), only: ['title', 'colour', 'payload'] })) as ExportColumnsError
  t.ok(err instanceof ExportColumnsError)
  t.same(err.unknown, ['colour', 'payload'])
  t.match(err.message, /"colour", "payload"/)
  t.match(err.message, /allowed: number, state, createdAt, updatedAt, createdBy, title, /)
  t.notOk(err.allowed.includes('medicalDetails'), 'the allowed list does not reveal hidden fields')
})
