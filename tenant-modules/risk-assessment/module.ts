import { defineModule } from '@qehs-records/module-sdk'

/** Task risk assessments: hazards, likelihood × severity banded by the platform, reviewed by someone else. */
/** What was assessed: it stays as approved, and as reviewed, until the assessment is revised. */
const assessed = [
  'title',
  'site',
  'area',
  'scope',
  'hazards',
  'likelihood',
  'severity',
  'additionalControls',
  'residualLikelihood',
  'residualSeverity',
  'assessor',
  'assessedOn'
]

export default defineModule({
  key: 'risk-assessment',
  version: '1.0.0',
  title: 'Risk assessment',
  description:
    'Assessments of an activity or task: its hazards, who is at risk, the controls in place, a risk rating computed ' +
    'from likelihood and severity, further controls, and a review by a second person before a review date.',
  numberPattern: 'RA-{YYYY}-{seq:4}',
  // What a safety manager scans a register for: the highest ratings and the reviews coming up.
  summaryColumns: ['title', 'site', 'riskRating', 'assessor', 'reviewDate'],
  fields: [
    { key: 'title', type: 'text', label: 'Activity or task', required: true, maxLength: 200 },
    { key: 'site', type: 'text', label: 'Site', required: true, maxLength: 120, filterable: true, sortable: true },
    { key: 'area', type: 'text', label: 'Area or department', maxLength: 120 },
    { key: 'scope', type: 'longText', label: 'Scope of the activity' },
    {
      key: 'hazards',
      type: 'group',
      label: 'Hazards',
      maxItems: 100,
      fields: [
        { key: 'hazard', type: 'text', label: 'Hazard', required: true, maxLength: 300 },
        {
          key: 'whoAtRisk',
          type: 'multipleChoice',
          label: 'Who is at risk',
          options: [
            { value: 'employees', label: 'Employees' },
            { value: 'contractors', label: 'Contractors' },
            { value: 'visitors', label: 'Visitors' },
            { value: 'public', label: 'Members of the public' },
            { value: 'vulnerable', label: 'Young, new or expectant workers' }
          ]
        },
        { key: 'harm', type: 'text', label: 'How they could be harmed', maxLength: 500 },
        { key: 'existingControls', type: 'longText', label: 'Controls already in place', maxLength: 4000 }
      ]
    },
    { key: 'likelihood', type: 'integer', label: 'Likelihood (1-5)', required: true, minimum: 1, maximum: 5 },
    { key: 'severity', type: 'integer', label: 'Severity (1-5)', required: true, minimum: 1, maximum: 5 },
    // Computed by the platform on every write, read-only to clients: a 5×5 matrix and its bands.
    {
      key: 'riskScore',
      type: 'integer',
      label: 'Risk score',
      computed: 'likelihood * severity',
      filterable: true,
      sortable: true
    },
    {
      key: 'riskRating',
      type: 'singleChoice',
      label: 'Risk rating',
      options: [
        { value: 'low', label: 'Low' },
        { value: 'medium', label: 'Medium' },
        { value: 'high', label: 'High' },
        { value: 'very-high', label: 'Very high' }
      ],
      computed: "band(riskScore, [4, 'low'], [9, 'medium'], [16, 'high'], [25, 'very-high'])",
      filterable: true,
      sortable: true
    },
    { key: 'additionalControls', type: 'longText', label: 'Further controls needed' },
    {
      key: 'residualLikelihood',
      type: 'integer',
      label: 'Residual likelihood (1-5)',
      minimum: 1,
      maximum: 5
    },
    { key: 'residualSeverity', type: 'integer', label: 'Residual severity (1-5)', minimum: 1, maximum: 5 },
    {
      key: 'residualRating',
      type: 'singleChoice',
      label: 'Residual risk rating',
      options: [
        { value: 'low', label: 'Low' },
        { value: 'medium', label: 'Medium' },
        { value: 'high', label: 'High' },
        { value: 'very-high', label: 'Very high' }
      ],
      computed:
        "band(residualLikelihood * residualSeverity, [4, 'low'], [9, 'medium'], [16, 'high'], [25, 'very-high'])",
      filterable: true
    },
    { key: 'assessor', type: 'user', label: 'Assessor' },
    { key: 'assessedOn', type: 'date', label: 'Assessed on', default: 'today()' },
    { key: 'reviewer', type: 'user', label: 'Reviewer' },
    { key: 'reviewDate', type: 'date', label: 'Review date', sortable: true },
    { key: 'reviewNote', type: 'longText', label: 'Review note' }
  ],
  workflow: {
    initial: 'draft',
    states: [
      { key: 'draft', label: 'Draft' },
      { key: 'in-review', label: 'In review', requires: ['assessor', 'hazards'] },
      {
        key: 'approved',
        label: 'Approved',
        requires: ['reviewer', 'reviewDate'],
        // What was assessed and approved stays as approved: changing it means revising, which the activity shows.
        locks: [...assessed, 'reviewer', 'reviewDate']
      },
      {
        key: 'review-due',
        label: 'Review due',
        // The review: the assessment as approved stays, the reviewer sets the next review date and confirms it.
        locks: assessed
      },
      { key: 'superseded', label: 'Superseded', final: true, locks: ['*'] },
      { key: 'archived', label: 'Archived', final: true, locks: ['*'] }
    ],
    transitions: [
      {
        key: 'submit',
        label: 'Submit for review',
        from: ['draft'],
        to: 'in-review',
        roles: ['safety-manager', 'assessor']
      },
      {
        key: 'approve',
        label: 'Approve',
        from: ['in-review'],
        to: 'approved',
        roles: ['safety-manager'],
        // A second pair of eyes: not the assessor the record names, nor whoever submitted it.
        separateFrom: { fields: ['assessor'], transitions: ['submit'] }
      },
      {
        key: 'return',
        label: 'Return to the assessor',
        from: ['in-review'],
        to: 'draft',
        roles: ['safety-manager']
      },
      // The periodic review: on its review date the platform moves an approved assessment to review-due; the reviewer
      // confirms it with the next review date (or it is revised, superseded or archived).
      {
        key: 'review',
        label: 'Review due',
        from: ['approved'],
        to: 'review-due',
        roles: ['safety-manager'],
        auto: { after: 'reviewDate' }
      },
      {
        key: 'confirm',
        label: 'Confirm after review',
        from: ['review-due'],
        to: 'approved',
        roles: ['safety-manager']
      },
      {
        key: 'revise',
        label: 'Revise',
        from: ['approved', 'review-due'],
        to: 'draft',
        roles: ['safety-manager', 'assessor']
      },
      {
        key: 'supersede',
        label: 'Supersede',
        from: ['approved', 'review-due'],
        to: 'superseded',
        roles: ['safety-manager']
      },
      {
        key: 'archive',
        label: 'Archive',
        from: ['draft', 'approved', 'review-due'],
        to: 'archived',
        roles: ['safety-manager']
      }
    ]
  },
  permissions: {
    'safety-manager': ['read', 'create', 'update', 'delete', 'export', 'attachments', 'transition:*'],
    assessor: ['read', 'create', 'update', 'attachments', 'transition:submit', 'transition:revise'],
    reporter: ['read'],
    auditor: ['read', 'export']
  },
  rules: [
    // Also as fields: the approver is held apart from the assessor by separateFrom, and the reviewer named here.
    {
      check: 'reviewer != assessor',
      message: 'must be someone other than the assessor',
      fields: ['reviewer']
    },
    {
      check: 'reviewDate > today()',
      message: 'must be in the future to approve',
      fields: ['reviewDate'],
      on: { transitions: ['approve', 'confirm'] }
    },
    {
      check: 'daysBetween(today(), reviewDate) <= 366',
      message: 'must be within a year: an assessment is reviewed at least once a year',
      fields: ['reviewDate'],
      on: { transitions: ['approve', 'confirm'] }
    }
  ],
  // Overdue while approved or due for review: the review date has passed and nobody has confirmed or revised it.
  due: { field: 'reviewDate', until: ['draft', 'in-review', 'superseded', 'archived'] }
})
