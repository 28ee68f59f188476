import { defineModule } from '@qehs-records/module-sdk'

/** Permits to work: requested, approved by an issuing authority who is not the requester, valid for a window. */
export default defineModule({
  key: 'permit-to-work',
  version: '1.0.0',
  title: 'Permit to work',
  description:
    'Permits for hazardous work (hot work, confined spaces, work at height, isolations): the scope, the validity ' +
    'window and the precautions, approved by an issuing authority other than the requester, handed back when done.',
  numberPattern: 'PTW-{YYYY}-{seq:5}',
  summaryColumns: ['title', 'permitType', 'site', 'validFrom', 'validTo'],
  fields: [
    { key: 'title', type: 'text', label: 'Work description', required: true, maxLength: 200 },
    { key: 'method', type: 'longText', label: 'Method and scope of the work' },
    {
      key: 'permitType',
      type: 'singleChoice',
      label: 'Permit type',
      required: true,
      options: [
        { value: 'hot-work', label: 'Hot work' },
        { value: 'confined-space', label: 'Confined space entry' },
        { value: 'work-at-height', label: 'Work at height' },
        { value: 'electrical-isolation', label: 'Electrical isolation' },
        { value: 'mechanical-isolation', label: 'Mechanical isolation' },
        { value: 'excavation', label: 'Excavation' },
        { value: 'general', label: 'General work' }
      ],
      filterable: true,
      sortable: true
    },
    { key: 'site', type: 'text', label: 'Site', required: true, maxLength: 120, filterable: true, sortable: true },
    { key: 'workLocation', type: 'text', label: 'Location or equipment', maxLength: 200 },
    { key: 'validFrom', type: 'datetime', label: 'Valid from', required: true },
    { key: 'validTo', type: 'datetime', label: 'Valid to', required: true },
    { key: 'requestedBy', type: 'user', label: 'Requested by', required: true },
    { key: 'contractor', type: 'text', label: 'Contractor', maxLength: 200 },
    { key: 'workers', type: 'longText', label: 'People working under the permit' },
    {
      key: 'precautions',
      type: 'multipleChoice',
      label: 'Precautions',
      options: [
        { value: 'isolation-verified', label: 'Isolation verified and locked out' },
        { value: 'gas-test', label: 'Atmosphere tested' },
        { value: 'fire-watch', label: 'Fire watch posted' },
        { value: 'extinguisher', label: 'Extinguisher at hand' },
        { value: 'combustibles-removed', label: 'Combustibles removed or covered' },
        { value: 'barriers', label: 'Area barriered' },
        { value: 'ventilation', label: 'Ventilation in place' },
        { value: 'rescue-plan', label: 'Rescue plan in place' },
        { value: 'fall-protection', label: 'Fall protection' },
        { value: 'ppe', label: 'Specific PPE' }
      ]
    },
    { key: 'gasReadings', type: 'longText', label: 'Gas test readings' },
    { key: 'issuer', type: 'user', label: 'Issuing authority' },
    { key: 'workAreaSafe', type: 'boolean', label: 'Work area left safe' },
    { key: 'handBackNote', type: 'longText', label: 'Hand-back note' },
    { key: 'cancelReason', type: 'longText', label: 'Reason for cancelling' }
  ],
  workflow: {
    initial: 'requested',
    states: [
      { key: 'requested', label: 'Requested' },
      {
        key: 'approved',
        label: 'Approved',
        requires: ['issuer'],
        // The scope that was approved is the scope worked to: changing it means a new permit.
        locks: [
          'title',
          'method',
          'permitType',
          'site',
          'workLocation',
          'validFrom',
          'validTo',
          'requestedBy',
          'precautions',
          'issuer'
        ]
      },
      {
        key: 'active',
        label: 'Work in progress',
        locks: [
          'title',
          'method',
          'permitType',
          'site',
          'workLocation',
          'validFrom',
          'validTo',
          'requestedBy',
          'precautions',
          'issuer'
        ]
      },
      { key: 'closed', label: 'Closed', requires: ['workAreaSafe', 'handBackNote'], final: true, locks: ['*'] },
      { key: 'cancelled', label: 'Cancelled', requires: ['cancelReason'], final: true, locks: ['*'] },
      { key: 'expired', label: 'Expired', final: true, locks: ['*'] }
    ],
    transitions: [
      {
        key: 'approve',
        label: 'Approve',
        from: ['requested'],
        to: 'approved',
        roles: ['safety-manager', 'permit-issuer'],
        // No self-approval: not whoever raised the permit, nor the person it was requested by.
        separateFrom: { creator: true, fields: ['requestedBy'] }
      },
      {
        key: 'start-work',
        label: 'Start work',
        from: ['approved'],
        to: 'active',
        roles: ['safety-manager', 'permit-issuer']
      },
      {
        key: 'close',
        label: 'Hand back and close',
        from: ['active'],
        to: 'closed',
        roles: ['safety-manager', 'permit-issuer']
      },
      {
        key: 'cancel',
        label: 'Cancel',
        from: ['requested', 'approved', 'active'],
        to: 'cancelled',
        roles: ['safety-manager', 'permit-issuer']
      },
      // A permit past its validity expires by itself: the platform fires this once validTo has passed (an issuer may
      // expire it earlier by hand).
      {
        key: 'expire',
        label: 'Expire',
        from: ['approved', 'active'],
        to: 'expired',
        roles: ['safety-manager', 'permit-issuer'],
        auto: { after: 'validTo' }
      }
    ]
  },
  permissions: {
    'safety-manager': ['read', 'create', 'update', 'delete', 'export', 'attachments', 'transition:*'],
    'permit-issuer': ['read', 'create', 'update', 'attachments', 'transition:*'],
    reporter: ['read', 'create', 'update', 'attachments'],
    auditor: ['read', 'export']
  },
  rules: [
    { check: 'validTo > validFrom', message: 'must be after the start of validity', fields: ['validTo'] },
    // A permit covers a job, not a season: re-issue for longer work.
    {
      check: 'daysBetween(validFrom, validTo) <= 7',
      message: 'must be at most 7 days after the start of validity',
      fields: ['validTo']
    },
    {
      check: 'issuer != requestedBy',
      message: 'cannot be the person who requested the permit',
      fields: ['issuer']
    },
    {
      check: 'daysBetween(today(), validTo) >= 0',
      message: 'has passed: a permit whose validity has ended cannot be approved or started',
      fields: ['validTo'],
      on: { transitions: ['approve', 'start-work'] }
    }
  ],
  // Requesters see the permits they raised or that name them.
  rowAccess: {
    reporter: [{ createdBy: 'self' }, { field: 'requestedBy', equals: 'self' }]
  }
})
