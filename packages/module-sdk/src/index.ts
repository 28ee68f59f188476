/**
 * The authoring SDK of the QEHS records platform: the types of a module definition and
 * `defineModule`, which checks a definition at compile time (an unknown key anywhere is a type
 * error) and returns it unchanged. Nothing runs at import time; the platform validates the
 * definition again when it loads the package (docs/modules.md). `PayloadOf<typeof module>`
 * is the type of a record's payload under the definition.
 */

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

/**
 * How lists find records by the field (docs/modules.md, "Finding records"). Each has a default by type; the platform
 * keeps an index for every field that is sortable, or filterable by declaration or by its type's default (choices,
 * users, references, dates), and builds, replaces and drops those indexes itself without blocking writes.
 */
interface Filterable {
  /**
   * Lists may filter on the field. Fields of a type that filters are filterable by default; `true` also keeps an
   * index for the field (the default for choices, users, references and dates), `false` refuses its filters.
   */
  filterable?: boolean
}
interface Sortable {
  /** Lists may sort by the field (indexed). Default: dates and date-times. Top-level fields only. */
  sortable?: boolean
}
interface Searchable {
  /**
   * Text search (`q`) looks in the field. Default: text and long text fields without an access rule; a field with
   * one cannot be searchable (every reader of the module searches the same text). Top-level fields only.
   */
  searchable?: boolean
}

export type FieldDefinition = FieldBase &
  (
    | ({ type: 'text'; maxLength?: number; pattern?: string } & Filterable & Sortable & Searchable)
    | ({ type: 'longText'; maxLength?: number } & Searchable)
    | ({ type: 'number'; minimum?: number; maximum?: number } & Filterable & Sortable)
    | ({ type: 'integer'; minimum?: number; maximum?: number } & Filterable & Sortable)
    | ({ type: 'boolean' } & Filterable)
    | ({ type: 'date' } & Filterable & Sortable)
    | ({ type: 'datetime' } & Filterable & Sortable)
    | ({ type: 'singleChoice'; options: Array<string | ChoiceOption> } & Filterable & Sortable)
    | ({
        type: 'multipleChoice'
        options: Array<string | ChoiceOption>
        minItems?: number
        maxItems?: number
      } & Filterable)
    | ({ type: 'user' } & Filterable)
    | ({ type: 'recordRef'; module: string } & Filterable)
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
  /**
   * Fired by the platform (a system principal, through the same rules and write path) once the date or date-time
   * field `after` of a record in a `from` state has passed, e.g. a permit's `expire` after `validTo`. Clients with
   * the right may still fire it earlier.
   */
  auto?: AutoTransition
}

/** When the platform fires a transition by itself: once the top-level date or date-time field `after` has passed. */
export interface AutoTransition {
  after: string
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
  /** The record's due date, for the `overdue` list filter and the `record.overdue` event (docs/modules.md, "Due dates"). */
  due?: DueDate
  /** Records the platform creates on a schedule, through the write path (docs/modules.md, "Recurrence"). */
  recurrence?: Recurrence
}

/**
 * Which field is a record's due date: a top-level `date` (due by the end of that day, UTC) or `datetime` field. A
 * record is overdue once it has passed while the record is not in one of the `until` states (default: the final
 * states).
 */
export interface DueDate {
  field: string
  until?: string[]
}

/** How often a series makes a record: a calendar unit from the series' start, or every `days` days. */
export type RecurrenceEvery = 'day' | 'week' | 'month' | 'year' | { days: number }

/**
 * A schedule of records. Without `per`, the module has one series; with `per` naming a top-level `singleChoice` field,
 * one series per option (e.g. an inspection every month per site), the option written to that field; naming a
 * `recordRef` field, one series per live record of the module it references (e.g. an annual review per risk
 * assessment), that record's id written to the field. A series starts when the platform first sees it (a
 * referenced record: when it was created) and makes one record per period, the first one period after its start;
 * `payload` is every record's other values. Series can be paused, resumed and ended (`/records/{moduleKey}/series`).
 */
export interface Recurrence {
  every: RecurrenceEvery
  per?: string
  payload?: Record<string, unknown>
}

/** `T` with every member `Allowed` does not declare typed `never`: tsc then names the unknown key where it is written. */
type Only<T, Allowed> = T & { [K in Exclude<keyof T, keyof Allowed>]: never }

type FieldOfType<Ty> = Extract<FieldDefinition, { type: Ty }>

/** A field as written, held to the members of its own type (and a group's fields, an access rule's, an option's). */
type StrictField<F> = F extends { type: infer Ty }
  ? Only<F, FieldOfType<Ty>> &
      (F extends { fields: infer G } ? { fields: StrictList<G> } : unknown) &
      (F extends { access: infer A } ? { access: Only<A, FieldAccess> } : unknown) &
      (F extends { options: infer O }
        ? { options: { [I in keyof O]: O[I] extends string ? O[I] : Only<O[I], ChoiceOption> } }
        : unknown)
  : F

type StrictList<L> = { [I in keyof L]: StrictField<L[I]> }

type StrictWorkflow<W> = W extends { states: infer S; transitions: infer X }
  ? Only<W, Workflow> & {
      states: { [I in keyof S]: Only<S[I], WorkflowState> }
      transitions: {
        [I in keyof X]: Only<X[I], WorkflowTransition> &
          (X[I] extends { auto: infer A } ? { auto: Only<A, AutoTransition> } : unknown)
      }
    }
  : W

/** A due date and a recurrence as written, held to their members. */
type StrictDates<T> = (T extends { due: infer D } ? { due: Only<D, DueDate> } : unknown) &
  (T extends { recurrence: infer R } ? { recurrence: Only<R, Recurrence> } : unknown)

/** A definition as written, held to the format everywhere: top level, fields, workflow, row conditions. */
export type StrictDefinition<T> = T extends { fields: infer F; workflow: infer W }
  ? Only<T, ModuleDefinition> & { fields: StrictList<F>; workflow: StrictWorkflow<W> } & StrictDates<T>
  : T

/**
 * Declares a module. It only checks the definition's type and returns it: a key the format
 * does not have (`requird`, `indexes`, `options` on a text field) is a compile error, as it is
 * a load error in the platform. The platform validates the rules between members at load.
 */
export function defineModule<const T extends ModuleDefinition>(definition: T & StrictDefinition<T>): T {
  return definition
}

type OptionValue<O> = O extends string ? O : O extends { value: infer V } ? V : never

/** A location value, as the platform stores and validates it. */
export interface LocationValue {
  latitude: number
  longitude: number
  label?: string
  accuracyMeters?: number
}

/** The payload value of one field, by its type (the same table as the platform's payload schema). */
export type FieldValue<F> = F extends { type: 'text' | 'longText' | 'date' | 'datetime' | 'user' | 'recordRef' }
  ? string
  : F extends { type: 'number' | 'integer' }
    ? number
    : F extends { type: 'boolean' }
      ? boolean
      : F extends { type: 'singleChoice'; options: ReadonlyArray<infer O> }
        ? OptionValue<O>
        : F extends { type: 'multipleChoice'; options: ReadonlyArray<infer O> }
          ? Array<OptionValue<O>>
          : F extends { type: 'location' }
            ? LocationValue
            : F extends { type: 'group'; fields: ReadonlyArray<infer G> }
              ? Array<PayloadOfFields<G>>
              : never

type Flat<T> = { [K in keyof T]: T[K] } & {}

/** Required fields as required members, the others optional. */
export type PayloadOfFields<F> = Flat<
  { [K in F as K extends { required: true; key: string } ? K['key'] : never]: FieldValue<K> } & {
    [K in F as K extends { required: true } ? never : K extends { key: string } ? K['key'] : never]?: FieldValue<K>
  }
>

/** The payload of a record of a module: `PayloadOf<typeof myModule>`. */
export type PayloadOf<M extends { fields: ReadonlyArray<unknown> }> = PayloadOfFields<M['fields'][number]>

// ---- Migrations: how records stored under an older version move to this one.

/** A record as a migration sees it: its payload and workflow state under the version it moves from. */
export interface MigratingRecord {
  payload: Record<string, unknown>
  state: string
}

/**
 * One declarative step of a migration, applied to every record in order:
 * - `renameField`: the value of `from` moves to `to` (a top-level field, or `group.member` inside every group item);
 * - `removeField`: the value is dropped;
 * - `mapChoice`: values of a choice field (single or multiple) are replaced by `values[old]`; values not named stay;
 * - `setDefault`: a field without a value gets `value` (a newly required field);
 * - `renameState`: records in state `from` are in state `to`.
 */
export type MigrationStep =
  | { op: 'renameField'; from: string; to: string }
  | { op: 'removeField'; field: string }
  | { op: 'mapChoice'; field: string; values: Record<string, string> }
  | { op: 'setDefault'; field: string; value: unknown }
  | { op: 'renameState'; from: string; to: string }

/**
 * How records of the versions `from` accepts move to version `to`: the steps, then `transform` (for what steps cannot
 * say). A transform is a pure function of the record: no I/O, no clock, no randomness (the platform runs it on reads of
 * records not yet moved, on writes and in the background job, and the outcome must be the same each time). It returns
 * the record as it is under `to`; a throw refuses the record (the dry run lists it with the message).
 */
export interface ModuleMigration {
  /** The versions this migration moves records from: a semantic version range, e.g. `^1.0.0` or `1.x`. */
  from: string
  /** The version records are at afterwards: this package's version, or an earlier one a later migration starts from. */
  to: string
  steps?: MigrationStep[]
  transform?: (record: MigratingRecord) => MigratingRecord
}

/**
 * Declares the migrations a package ships beside its definition (`export const migrations = defineMigrations([...])`
 * in the module's entry file). Only checks types; the platform checks them against the definition at load.
 */
export function defineMigrations<const T extends readonly ModuleMigration[]>(migrations: T): T {
  return migrations
}
