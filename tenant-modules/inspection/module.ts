import { defineModule } from '@qehs-records/module-sdk'

/** Planned inspections with a checklist; findings feed corrective actions. */
export default defineModule({
  key: 'inspection',
  version: '1.0.0',
  title: 'Inspection',
  description: 'Scheduled workplace, equipment and environmental inspections with a checklist of items and findings.',
  numberPattern: 'INS-{YYYY}{MM}-{seq:4}',
  summaryColumns: ['title', 'kind', 'site', 'scheduledFor', 'inspector'],
  fields: [
    { key: 'title', type: 'text', label: 'Inspection', required: true, maxLength: 200 },
    {
      key: 'kind',
      type: 'singleChoice',
      label: 'Kind',
      required: true,
      options: ['workplace', 'equipment', 'fire-safety', 'environmental', 'vehicle', 'ppe']
    },
    { key: 'site', type: 'text', label: 'Site', required: true, maxLength: 120 },
    { key: 'area', type: 'text', label: 'Area', maxLength: 120 },
    { key: 'location', type: 'location', label: 'Location' },
    { key: 'scheduledFor', type: 'date', label: 'Scheduled for', required: true },
    { key: 'inspector', type: 'user', label: 'Inspector' },
    { key: 'performedAt', type: 'datetime', label: 'Performed at' },
    {
      key: 'checklist',
      type: 'group',
      label: 'Checklist',
      maxItems: 300,
      fields: [
        { key: 'item', type: 'text', label: 'Item', required: true, maxLength: 300 },
        {
          key: 'result',
          type: 'singleChoice',
          label: 'Result',
          required: true,
          options: ['pass', 'fail', 'not-applicable']
        },
        { key: 'severity', type: 'singleChoice', label: 'Severity of finding', options: ['low', 'medium', 'high'] },
        { key: 'note', type: 'longText', label: 'Note', maxLength: 4000 },
        { key: 'photoTaken', type: 'boolean', label: 'Photo taken' }
      ]
    },
    { key: 'score', type: 'number', label: 'Score (%)', minimum: 0, maximum: 100 },
    { key: 'summary', type: 'longText', label: 'Summary' }
  ],
  workflow: {
    initial: 'scheduled',
    states: [
      { key: 'scheduled', label: 'Scheduled' },
      { key: 'in-progress', label: 'In progress', requires: ['inspector'] },
      { key: 'submitted', label: 'Submitted for review', requires: ['checklist', 'performedAt'] },
      { key: 'approved', label: 'Approved', requires: ['summary'], final: true },
      { key: 'cancelled', label: 'Cancelled', final: true }
    ],
    transitions: [
      {
        key: 'begin',
        label: 'Begin inspection',
        from: ['scheduled'],
        to: 'in-progress',
        roles: ['inspector', 'safety-manager']
      },
      {
        key: 'submit',
        label: 'Submit',
        from: ['in-progress'],
        to: 'submitted',
        roles: ['inspector', 'safety-manager']
      },
      {
        key: 'approve',
        label: 'Approve',
        from: ['submitted'],
        to: 'approved',
        roles: ['safety-manager'],
        forbidSelf: true
      },
      {
        key: 'return',
        label: 'Return to inspector',
        from: ['submitted'],
        to: 'in-progress',
        roles: ['safety-manager']
      },
      { key: 'cancel', label: 'Cancel', from: ['scheduled', 'in-progress'], to: 'cancelled', roles: ['safety-manager'] }
    ]
  },
  permissions: {
    'safety-manager': ['read', 'create', 'update', 'delete', 'export', 'attachments', 'transition:*'],
    inspector: ['read', 'create', 'update', 'attachments', 'transition:begin', 'transition:submit'],
    auditor: ['read', 'export']
  }
})
