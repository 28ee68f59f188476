/** Field types a module may declare. Every derivation table has exactly one row per type. */
export const fieldTypes = [
  'text',
  'longText',
  'number',
  'integer',
  'boolean',
  'date',
  'datetime',
  'singleChoice',
  'multipleChoice',
  'user',
  'recordRef',
  'group',
  'location'
] as const

export type FieldType = (typeof fieldTypes)[number]

export interface ChoiceOption {
  value: string
  label?: string
}

/**
 * Field-level rule: only these roles see (read) or change (write) the field; write
 * defaults to read. Tenant API keys act as the tenant and are not restricted.
 */
export interface FieldAccess {
  read: string[]
  write?: string[]
}

interface FieldBase {
  key: string
  label?: string
  description?: string
  required?: boolean
  access?: FieldAccess
}

export type FieldDefinition = FieldBase &
  (
    | { type: 'text'; maxLength?: number; pattern?: string }
    | { type: 'longText'; maxLength?: number }
    | { type: 'number'; minimum?: number; maximum?: number }
    | { type: 'integer'; minimum?: number; maximum?: number }
    | { type: 'boolean' }
    | { type: 'date' }
    | { type: 'datetime' }
    | { type: 'singleChoice'; options: Array<string | ChoiceOption> }
    | { type: 'multipleChoice'; options: Array<string | ChoiceOption>; minItems?: number; maxItems?: number }
    | { type: 'user' }
    | { type: 'recordRef'; module: string }
    | { type: 'group'; fields: GroupMember[]; minItems?: number; maxItems?: number }
    | { type: 'location' }
  )

/** A field of a group: any type but a group (groups do not nest). */
export type GroupMember = Exclude<FieldDefinition, { type: 'group' }>

export interface WorkflowState {
  key: string
  label?: string
  /** Payload fields that must hold a value before a record may enter this state. */
  requires?: string[]
  final?: boolean
}

export interface WorkflowTransition {
  key: string
  label?: string
  from: string[]
  to: string
  /** Roles allowed to fire the transition; empty or absent means any role with `transition:<key>`. */
  roles?: string[]
  /** Extra payload fields required by this transition, on top of the target state's. */
  requires?: string[]
  /** The record's creator may not fire this transition (four-eyes principle). */
  forbidSelf?: boolean
}

export interface Workflow {
  initial: string
  states: WorkflowState[]
  transitions: WorkflowTransition[]
}

/**
 * A row-level condition: `createdBy: 'self'` matches records the caller created;
 * `{ field, equals: 'self' }` matches records whose top-level user field names the caller.
 */
export type RowCondition = { createdBy: 'self' } | { field: string; equals: 'self' }

export interface ModuleDefinition {
  key: string
  version: string
  title: string
  description?: string
  fields: FieldDefinition[]
  workflow: Workflow
  /** Role -> actions: read, create, update, delete, export, attachments, transition:<key> or transition:*. */
  permissions: Record<string, string[]>
  /**
   * Row-level rules: role -> conditions, any of which lets that role see a record.
   * A role without an entry sees every record its permissions let it read.
   */
  rowAccess?: Record<string, RowCondition[]>
  /** e.g. `INC-{YYYY}-{seq:5}`; tokens: {YYYY} {YY} {MM} {DD} {seq:N}. */
  numberPattern: string
  /**
   * The top-level fields that identify a record at a glance, in order (at most 8): the PDF
   * export's default columns after Number and State, list pages and GraphQL defaults.
   */
  summaryColumns?: string[]
}

/** A module as held by the registry: validated, frozen, with the package it came from. */
export interface LoadedModule extends ModuleDefinition {
  packageName: string
  packagePath: string
}
