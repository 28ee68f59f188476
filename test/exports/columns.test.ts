import t from '../helpers/tap.ts'
import { loadConfig } from '../../core/config.ts'
import {
  ExportColumnsError,
  exportColumns,
  fieldToColumn,
  summaryColumns,
  summaryExportColumns,
  type ExportRecord
} from '../../core/modules/derive/columns.ts'
import { loadModules } from '../../core/modules/registry.ts'
import { fieldTypes, type FieldDefinition, type FieldType } from '../../core/modules/types.ts'

const registry = await loadModules(loadConfig().modules)
const incident = registry.get('incident')!
const systemKeys = ['number', 'state', 'createdAt', 'updatedAt', 'createdBy', 'updatedBy', 'externalRef']
/** Field keys as export columns: a user field is followed by its id. */
const fieldKeys = (fields: readonly FieldDefinition[]) =>
  fields.flatMap((f) => (f.type === 'user' ? [f.key, `${f.key}.id`] : [f.key]))
const uuid = '6f1c1a52-3d4e-4f3a-9a51-0c2b8e4d7f10'

/** Per field type: a definition, a stored value, and the cell and kind it must become. */
const cases: { [T in FieldType]: { field: FieldDefinition; stored: unknown; cell: unknown; kind: string } } = {
  text: {
    field: { key: 'title', type: 'text', label: 'Title' },
    stored: 'Slip, trip',
    cell: 'Slip, trip',
    kind: 'text'
  },
  longText: {
    field: { key: 'notes', type: 'longText' },
    stored: 'Line 1\nLine 2',
    cell: 'Line 1\nLine 2',
    kind: 'text'
  },
  number: { field: { key: 'days', type: 'number' }, stored: -2.5, cell: -2.5, kind: 'number' },
  integer: { field: { key: 'people', type: 'integer' }, stored: 3, cell: 3, kind: 'integer' },
  boolean: { field: { key: 'notified', type: 'boolean' }, stored: false, cell: false, kind: 'boolean' },
  date: {
    field: { key: 'due', type: 'date' },
    stored: '2026-03-02',
    cell: new Date('2026-03-02T00:00:00.000Z'),
    kind: 'date'
  },
  datetime: {
    field: { key: 'at', type: 'datetime' },
    stored: '2026-03-02T08:30:00+01:00',
    cell: new Date('2026-03-02T07:30:00.000Z'),
    kind: 'datetime'
  },
  singleChoice: {
    field: { key: 'severity', type: 'singleChoice', options: ['low', 'high'] },
    stored: 'high',
    cell: 'high',
    kind: 'text'
  },
  multipleChoice: {
    field: { key: 'parts', type: 'multipleChoice', options: ['head', 'hands'] },
    stored: ['head', 'hands'],
    cell: 'head, hands',
    kind: 'text'
  },
  user: { field: { key: 'lead', type: 'user' }, stored: uuid, cell: uuid, kind: 'text' },
  recordRef: {
    field: { key: 'incident', type: 'recordRef', module: 'incident' },
    stored: uuid,
    cell: uuid,
    kind: 'text'
  },
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
  location: {
    field: { key: 'where', type: 'location' },
    stored: { latitude: 53.7997, longitude: -1.5492, label: 'Gate 3' },
    cell: '53.7997, -1.5492 (Gate 3)',
    kind: 'text'
  }
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

t.test(
  'export columns are the system columns and then every field in definition order, a user field followed by its id',
  async (t) => {
    const columns = exportColumns(incident, { hidden: new Set() })
    t.same(
      columns.map((c) => c.key),
      [...systemKeys, ...fieldKeys(incident.definition.fields)]
    )
    t.same(
      columns.slice(0, 7).map((c) => c.header),
      ['Number', 'State', 'Created', 'Updated', 'Created by', 'Updated by', 'External ref']
    )
    t.same(
      columns.slice(0, 7).map((c) => c.kind),
      ['text', 'text', 'datetime', 'datetime', 'text', 'text', 'text']
    )
    t.ok(columns.some((c) => c.key === 'investigationLead.id' && c.header === 'Investigation lead (id)'))
  }
)

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
  t.equal(keys.length, systemKeys.length + fieldKeys(incident.definition.fields).length - 1)
})

t.test('hidden fields are left out even when asked for by name', async (t) => {
  const keys = exportColumns(incident, {
    hidden: new Set(['medicalDetails']),
    only: ['title', 'medicalDetails', 'severity']
  }).map((c) => c.key)
  t.same(keys, ['title', 'severity'])
})

t.test('asking only for hidden fields is refused, without naming them as allowed', async (t) => {
  const err = t.throws(() =>
    exportColumns(incident, { hidden: new Set(['medicalDetails']), only: ['medicalDetails'] })
  ) as ExportColumnsError
  t.ok(err instanceof ExportColumnsError)
  t.notOk(err.allowed.includes('medicalDetails'))
})

t.test('only picks the named columns in the order asked', async (t) => {
  const columns = exportColumns(incident, {
    hidden: new Set(),
    only: ['severity', 'number', 'occurredAt', 'createdBy']
  })
  t.same(
    columns.map((c) => c.key),
    ['severity', 'number', 'occurredAt', 'createdBy']
  )
})

t.test('an unknown column key is an error that lists the allowed keys', async (t) => {
  const err = t.throws(() =>
    exportColumns(incident, { hidden: new Set(['medicalDetails']), only: ['title', 'colour', 'payload'] })
  ) as ExportColumnsError
  t.ok(err instanceof ExportColumnsError)
  t.same(err.unknown, ['colour', 'payload'])
  t.match(err.message, /"colour", "payload"/)
  t.match(err.message, /allowed: number, state, createdAt, updatedAt, createdBy, updatedBy, externalRef, title, /)
  t.notOk(err.allowed.includes('medicalDetails'), 'the allowed list does not reveal hidden fields')
})

t.test('a user field reads as its name, and its id column keeps the id', async (t) => {
  const names = new Map([[uuid, 'Sam Patel']])
  const byKey = new Map(
    exportColumns(incident, { hidden: new Set(), userName: (id) => names.get(id) }).map((c) => [c.key, c])
  )
  const record: ExportRecord = {
    number: 'INC-1',
    state: 'investigating',
    createdAt: '',
    updatedAt: '',
    createdBy: { name: 'Ann' },
    updatedBy: { name: 'Bea' },
    externalRef: 'SRC-9',
    payload: { investigationLead: uuid }
  }
  t.equal(byKey.get('investigationLead')!.get(record), 'Sam Patel')
  t.equal(byKey.get('investigationLead.id')!.get(record), uuid)
  t.equal(byKey.get('updatedBy')!.get(record), 'Bea')
  t.equal(byKey.get('externalRef')!.get(record), 'SRC-9')
  const unknownUser = { ...record, payload: { investigationLead: '00000000-0000-4000-8000-000000000000' } }
  t.equal(
    byKey.get('investigationLead')!.get(unknownUser),
    '00000000-0000-4000-8000-000000000000',
    'an id no user has stays an id'
  )
})

t.test('labels word states and choices by their labels; keys leave them as stored', async (t) => {
  const record: ExportRecord = {
    number: 'INC-1',
    state: 'investigating',
    createdAt: '',
    updatedAt: '',
    createdBy: { name: 'Ann' },
    payload: { category: 'property-damage', severity: 'high', bodyParts: ['head', 'hands'] }
  }
  const cells = (values?: 'keys' | 'labels') => {
    const byKey = new Map(exportColumns(incident, { hidden: new Set(), values }).map((c) => [c.key, c]))
    return ['state', 'category', 'severity', 'bodyParts'].map((k) => byKey.get(k)!.get(record))
  }
  t.same(cells(), ['investigating', 'property-damage', 'high', 'head, hands'])
  t.same(
    cells('labels'),
    ['Under investigation', 'Property damage', 'High', 'head, hands'],
    'an option without a label reads as its value (body parts)'
  )
})

t.test('the PDF default columns are Number, State, the summary columns and Created as a date', async (t) => {
  t.same(summaryColumns(incident), ['title', 'site', 'category', 'severity', 'occurredAt'])
  const columns = summaryExportColumns(incident, { hidden: new Set() })
  t.same(
    columns.map((c) => c.header),
    ['Number', 'State', 'Title', 'Site', 'Category', 'Severity', 'Occurred at', 'Created']
  )
  t.equal(columns.at(-1)!.kind, 'date')
  const noSeverity = summaryExportColumns(incident, { hidden: new Set(['severity']) }).map((c) => c.key)
  t.notOk(noSeverity.includes('severity'), 'a hidden summary column is left out')
})
