// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import { records } from '../helpers/cli.ts'
import { writeModulePackage } from '../helpers/fixture-modules.ts'

/**
 * The conformance kit takes a module with computed fields, defaults and rules as it is: it sends no computed field
 * (the platform refuses one), expects the computed values and defaults beside what it sent, and its sample dates lie
 * ahead of the clock, so a rule such as "a review date in the future to approve" lets its transitions fire.
 */
t.setTimeout(240_000)
const work = mkdtempSync(join(tmpdir(), 'records-kit-field-rules-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))
t.teardown(() => void setTimeout(() => process.exit(), 200).unref())

const risk = {
  key: 'risk',
  version: '1.0.0',
  title: 'Risk assessment',
  numberPattern: 'RA-{seq:4}',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'likelihood', type: 'integer', minimum: 1, maximum: 5, required: true },
    { key: 'severity', type: 'integer', minimum: 1, maximum: 5, required: true },
    { key: 'riskRating', type: 'integer', computed: 'likelihood * severity', sortable: true },
    {
      key: 'riskBand',
      type: 'singleChoice',
      options: ['low', 'medium', 'high'],
      computed: "band(riskRating, [4, 'low'], [9, 'medium'], [25, 'high'])"
    },
    { key: 'assessedOn', type: 'date', default: 'today()' },
    { key: 'status', type: 'singleChoice', options: ['draft', 'final'], default: 'draft' },
    { key: 'startsOn', type: 'date' },
    { key: 'endsOn', type: 'date' },
    { key: 'reviewDate', type: 'date' }
  ],
  workflow: {
    initial: 'draft',
    states: [{ key: 'draft' }, { key: 'approved', requires: ['reviewDate'] }],
    transitions: [
      { key: 'approve', from: ['draft'], to: 'approved' },
      { key: 'reopen', from: ['approved'], to: 'draft' }
    ]
  },
  permissions: { assessor: ['read', 'create', 'update', 'transition:*'] },
  rules: [
    { check: 'endsOn >= startsOn', message: 'must not be before the start date', fields: ['endsOn'] },
    { check: 'reviewDate > today()', message: 'must be in the future to approve', on: { transitions: ['approve'] } }
  ]
}

t.test('a module with computed fields, defaults and a date rule passes every check', async (t) => {
  const dir = join(work, 'risk')
  writeModulePackage(dir, risk)
  const res = await records(['module', 'check', dir])
  t.equal(res.code, 0, res.stdout + res.stderr)
  t.notMatch(res.stdout, /FAIL/)
  t.match(res.stdout, /transition "approve": fires from "draft" to "approved"/)
})
