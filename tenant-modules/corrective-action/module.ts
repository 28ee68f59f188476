import { defineModule } from '@qehs-records/module-sdk'

/** Corrective and preventive actions (CAPA) raised from an incident, verified before closure. */
export default defineModule({
  key: 'corrective-action',
  version: '1.2.0',
  title: 'Corrective action',
  description:
    'Actions that remove the cause of an incident, with an owner, a due date and a verification of effectiveness.',
  numberPattern: 'CA-{YYYY}-{seq:4}',
  summaryColumns: ['title', 'kind', 'owner', 'dueDate', 'priority'],
  fields: [
    { key: 'title', type: 'text', label: 'Action', required: true, maxLength: 200 },
    { key: 'incident', type: 'recordRef', module: 'incident', label: 'Incident', required: true },
    {
      key: 'kind',
      type: 'singleChoice',
      label: 'Kind',
      required: true,
      options: [
        { value: 'corrective', label: 'Corrective' },
        { value: 'preventive', label: 'Preventive' },
        { value: 'containment', label: 'Containment' }
      ]
    },
    { key: 'description', type: 'longText', label: 'Description' },
    { key: 'owner', type: 'user', label: 'Owner' },
    { key: 'dueDate', type: 'date', label: 'Due date' },
    {
      key: 'priority',
      type: 'singleChoice',
      label: 'Priority',
      options: [
        { value: 'low', label: 'Low' },
        { value: 'medium', label: 'Medium' },
        { value: 'high', label: 'High' }
      ]
    },
    { key: 'estimatedCost', type: 'number', label: 'Estimated cost', minimum: 0 },
    { key: 'completionNote', type: 'longText', label: 'What was done' },
    { key: 'completedOn', type: 'date', label: 'Completed on' },
    { key: 'effective', type: 'boolean', label: 'Verified effective' },
    { key: 'verificationNote', type: 'longText', label: 'Verification note' }
  ],
  workflow: {
    initial: 'open',
    states: [
      { key: 'open', label: 'Open' },
      { key: 'in-progress', label: 'In progress', requires: ['owner', 'dueDate'] },
      { key: 'awaiting-verification', label: 'Awaiting verification', requires: ['completionNote', 'completedOn'] },
      { key: 'verified', label: 'Verified and closed', requires: ['effective', 'verificationNote'], final: true },
      { key: 'cancelled', label: 'Cancelled', final: true }
    ],
    transitions: [
      {
        key: 'start',
        label: 'Start work',
        from: ['open'],
        to: 'in-progress',
        roles: ['safety-manager', 'action-owner']
      },
      {
        key: 'complete',
        label: 'Mark complete',
        from: ['in-progress'],
        to: 'awaiting-verification',
        roles: ['safety-manager', 'action-owner']
      },
      {
        key: 'verify',
        label: 'Verify effectiveness',
        from: ['awaiting-verification'],
        to: 'verified',
        roles: ['safety-manager'],
        // Four eyes: not whoever raised the action, marked it complete or owns it.
        forbidSelf: true,
        separateFrom: { transitions: ['complete'], fields: ['owner'] }
      },
      {
        key: 'reject',
        label: 'Send back',
        from: ['awaiting-verification'],
        to: 'in-progress',
        roles: ['safety-manager']
      },
      { key: 'cancel', label: 'Cancel', from: ['open', 'in-progress'], to: 'cancelled', roles: ['safety-manager'] }
    ]
  },
  permissions: {
    'safety-manager': ['read', 'create', 'update', 'delete', 'export', 'attachments', 'transition:*'],
    'action-owner': ['read', 'update', 'attachments', 'transition:start', 'transition:complete'],
    auditor: ['read', 'export']
  },
  // An action owner works on the actions assigned to them.
  rowAccess: {
    'action-owner': [{ field: 'owner', equals: 'self' }]
  },
  // Overdue once its due date has passed while the action is still open or in progress (done, it awaits verification).
  due: { field: 'dueDate', until: ['awaiting-verification', 'verified', 'cancelled'] }
})
