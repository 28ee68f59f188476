import { defineModule } from '@qehs-records/module-sdk'

/** Environmental measurements against their limits; an exceedance is reviewed only with a corrective action. */
export default defineModule({
  key: 'environmental-monitoring',
  version: '1.0.0',
  title: 'Environmental monitoring',
  description:
    'Measurements at monitoring points (discharges, noise, air) with their units and permitted limits; the platform ' +
    'flags an exceedance, which cannot be reviewed without a linked corrective action.',
  numberPattern: 'ENV-{YYYY}{MM}-{seq:5}',
  summaryColumns: ['monitoringPoint', 'parameter', 'value', 'unit', 'exceedance', 'sampledAt'],
  fields: [
    { key: 'monitoringPoint', type: 'text', label: 'Monitoring point', required: true, maxLength: 120 },
    { key: 'site', type: 'text', label: 'Site', required: true, maxLength: 120, filterable: true, sortable: true },
    {
      key: 'parameter',
      type: 'singleChoice',
      label: 'Parameter',
      required: true,
      options: [
        { value: 'ph', label: 'pH' },
        { value: 'cod', label: 'Chemical oxygen demand (COD)' },
        { value: 'bod', label: 'Biochemical oxygen demand (BOD)' },
        { value: 'tss', label: 'Total suspended solids (TSS)' },
        { value: 'ammonia', label: 'Ammoniacal nitrogen' },
        { value: 'oil', label: 'Oil and grease' },
        { value: 'temperature', label: 'Temperature' },
        { value: 'noise', label: 'Noise level' },
        { value: 'pm10', label: 'Particulate matter PM10' },
        { value: 'pm25', label: 'Particulate matter PM2.5' }
      ],
      filterable: true,
      sortable: true
    },
    { key: 'value', type: 'number', label: 'Measured value', required: true },
    {
      key: 'unit',
      type: 'singleChoice',
      label: 'Unit',
      required: true,
      options: [
        { value: 'ph-units', label: 'pH units' },
        { value: 'mg-l', label: 'mg/L' },
        { value: 'celsius', label: '°C' },
        { value: 'dba', label: 'dB(A)' },
        { value: 'ug-m3', label: 'µg/m³' }
      ]
    },
    { key: 'lowerLimit', type: 'number', label: 'Lower limit' },
    { key: 'upperLimit', type: 'number', label: 'Upper limit' },
    { key: 'sampledAt', type: 'datetime', label: 'Sampled at', required: true },
    { key: 'sampledBy', type: 'user', label: 'Sampled by' },
    { key: 'method', type: 'text', label: 'Method or instrument', maxLength: 200 },
    { key: 'labReference', type: 'text', label: 'Laboratory reference', maxLength: 120 },
    // Outside either limit given; no limits, no exceedance. Computed by the platform, read-only to clients.
    {
      key: 'exceedance',
      type: 'boolean',
      label: 'Limit exceeded',
      computed: '(has(lowerLimit) and value < lowerLimit) or (has(upperLimit) and value > upperLimit)',
      filterable: true
    },
    { key: 'correctiveAction', type: 'recordRef', module: 'corrective-action', label: 'Corrective action' },
    { key: 'reviewNote', type: 'longText', label: 'Review note' },
    { key: 'voidReason', type: 'longText', label: 'Why the sample is void' }
  ],
  workflow: {
    initial: 'recorded',
    states: [
      { key: 'recorded', label: 'Recorded' },
      {
        key: 'reviewed',
        label: 'Reviewed',
        requires: ['reviewNote'],
        // A reviewed measurement is evidence: reopening it shows in the activity.
        locks: ['monitoringPoint', 'site', 'parameter', 'value', 'unit', 'lowerLimit', 'upperLimit', 'sampledAt']
      },
      { key: 'void', label: 'Void', requires: ['voidReason'], final: true, locks: ['*'] }
    ],
    transitions: [
      {
        key: 'review',
        label: 'Review',
        from: ['recorded'],
        to: 'reviewed',
        roles: ['safety-manager'],
        // Not the person who took the sample.
        separateFrom: { fields: ['sampledBy'] }
      },
      { key: 'reopen', label: 'Reopen', from: ['reviewed'], to: 'recorded', roles: ['safety-manager'] },
      {
        key: 'void',
        label: 'Void the sample',
        from: ['recorded'],
        to: 'void',
        roles: ['safety-manager', 'environmental-officer']
      }
    ]
  },
  permissions: {
    'safety-manager': ['read', 'create', 'update', 'delete', 'export', 'attachments', 'transition:*'],
    'environmental-officer': ['read', 'create', 'update', 'attachments', 'transition:void'],
    auditor: ['read', 'export']
  },
  rules: [
    {
      check: 'upperLimit >= lowerLimit',
      message: 'cannot be below the lower limit',
      fields: ['upperLimit']
    },
    {
      check: 'not exceedance or has(correctiveAction)',
      message: 'is required to review an exceedance: link the corrective action raised for it',
      fields: ['correctiveAction'],
      on: { transitions: ['review'] }
    }
  ]
})
