import { defineModule } from '@qehs-records/module-sdk'

/** Incidents and near misses: reported by anyone, investigated and closed by safety staff. */
export default defineModule({
  key: 'incident',
  version: '1.3.0',
  title: 'Incident',
  description: 'Injuries, near misses, property damage and environmental releases, from first report to closure.',
  numberPattern: 'INC-{YYYY}-{seq:5}',
  // What a safety manager scans a list for.
  summaryColumns: ['title', 'site', 'category', 'severity', 'occurredAt'],
  fields: [
    { key: 'title', type: 'text', label: 'Title', required: true, maxLength: 200 },
    { key: 'description', type: 'longText', label: 'What happened', required: true },
    { key: 'occurredAt', type: 'datetime', label: 'Occurred at', required: true },
    { key: 'site', type: 'text', label: 'Site', required: true, maxLength: 120, filterable: true, sortable: true },
    { key: 'location', type: 'location', label: 'Exact location' },
    {
      key: 'category',
      type: 'singleChoice',
      label: 'Category',
      required: true,
      options: [
        { value: 'injury', label: 'Injury' },
        { value: 'near-miss', label: 'Near miss' },
        { value: 'property-damage', label: 'Property damage' },
        { value: 'environmental', label: 'Environmental release' },
        { value: 'security', label: 'Security' },
        { value: 'quality', label: 'Quality' }
      ]
    },
    {
      key: 'severity',
      type: 'singleChoice',
      label: 'Severity',
      required: true,
      options: [
        { value: 'low', label: 'Low' },
        { value: 'medium', label: 'Medium' },
        { value: 'high', label: 'High' },
        { value: 'critical', label: 'Critical' }
      ]
    },
    { key: 'injuredPeople', type: 'integer', label: 'People injured', minimum: 0, maximum: 10000 },
    {
      key: 'bodyParts',
      type: 'multipleChoice',
      label: 'Body parts affected',
      options: ['head', 'eyes', 'neck', 'back', 'arms', 'hands', 'legs', 'feet', 'internal'],
      filterable: true
    },
    { key: 'lostTimeDays', type: 'number', label: 'Lost time (days)', minimum: 0 },
    // Health data: only occupational health staff see or write it.
    { key: 'medicalDetails', type: 'longText', label: 'Medical details', access: { read: ['health-officer'] } },
    { key: 'immediateActions', type: 'longText', label: 'Immediate actions taken' },
    { key: 'investigationLead', type: 'user', label: 'Investigation lead' },
    { key: 'rootCause', type: 'longText', label: 'Root cause' },
    { key: 'regulatorNotified', type: 'boolean', label: 'Regulator notified' },
    { key: 'regulatorNotifiedOn', type: 'date', label: 'Regulator notified on' },
    { key: 'closureNote', type: 'longText', label: 'Closure note' }
  ],
  workflow: {
    initial: 'reported',
    states: [
      { key: 'reported', label: 'Reported' },
      { key: 'investigating', label: 'Under investigation', requires: ['investigationLead'] },
      { key: 'actions-pending', label: 'Actions pending', requires: ['rootCause'] },
      {
        key: 'closed',
        label: 'Closed',
        requires: ['closureNote'],
        final: true,
        // What was reported and concluded stays as closed: changing it means reopening, which the activity shows.
        locks: [
          'title',
          'description',
          'occurredAt',
          'site',
          'location',
          'category',
          'severity',
          'rootCause',
          'closureNote'
        ]
      }
    ],
    transitions: [
      {
        key: 'start-investigation',
        label: 'Start investigation',
        from: ['reported'],
        to: 'investigating',
        roles: ['safety-manager']
      },
      {
        key: 'record-root-cause',
        label: 'Record root cause',
        from: ['investigating'],
        to: 'actions-pending',
        roles: ['safety-manager', 'investigator']
      },
      {
        key: 'close',
        label: 'Close',
        from: ['actions-pending'],
        to: 'closed',
        roles: ['safety-manager'],
        forbidSelf: true
      },
      {
        key: 'dismiss',
        label: 'Dismiss as not an incident',
        from: ['reported'],
        to: 'closed',
        roles: ['safety-manager']
      },
      { key: 'reopen', label: 'Reopen', from: ['closed'], to: 'investigating', roles: ['safety-manager'] }
    ]
  },
  permissions: {
    'safety-manager': ['read', 'create', 'update', 'delete', 'export', 'attachments', 'transition:*'],
    investigator: ['read', 'update', 'attachments', 'transition:record-root-cause'],
    'health-officer': ['read', 'update'],
    reporter: ['read', 'create', 'attachments'],
    auditor: ['read', 'export']
  },
  // A notification is made after the event, not before it (compared by day: the date against the moment's UTC day).
  rules: [
    {
      check: 'daysBetween(occurredAt, regulatorNotifiedOn) >= 0',
      message: 'cannot be before the day the incident occurred',
      fields: ['regulatorNotifiedOn']
    }
  ],
  // Reporters see what they reported; investigators the incidents they lead.
  rowAccess: {
    reporter: [{ createdBy: 'self' }],
    investigator: [{ field: 'investigationLead', equals: 'self' }]
  }
})
