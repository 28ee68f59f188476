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

/**
 * A value the platform computes from the record's other fields (docs/modules.md, "Computed fields"): an expression
 * (docs/modules.md, "Expressions") of the field's type, e.g. `likelihood * severity`, or
 * `band(likelihood * severity, [4, 'low'], [9, 'medium'], [25, 'high'])` for a choice whose options hold every label.
 * It is computed on every write, stored (so lists filter, sort and export it), and read-only: a client sending it is
 * refused. Top-level fields only; never `required`, never with a `default`; it may read computed fields declared
 * before it, not `today()`.
 */
interface Computed {
  computed?: string
}
/** The value a create gives the field when the client sends none (top-level fields only). */
interface Default<V> {
  default?: V
}

export type FieldDefinition = FieldBase &
  (
    | ({ type: 'text'; maxLength?: number; pattern?: string } & Filterable &
        Sortable &
        Searchable &
        Computed &
        Default<string>)
    | ({ type: 'longText'; maxLength?: number } & Searchable & Default<string>)
    | ({ type: 'number'; minimum?: number; maximum?: number } & Filterable & Sortable & Computed & Default<number>)
    | ({ type: 'integer'; minimum?: number; maximum?: number } & Filterable & Sortable & Computed & Default<number>)
    | ({ type: 'boolean' } & Filterable & Computed & Default<boolean>)
    /** A date's default may be `'today()'`: the day of the create (UTC), by the platform's clock. */
    | ({ type: 'date' } & Filterable & Sortable & Computed & Default<string>)
    | ({ type: 'datetime' } & Filterable & Sortable & Default<string>)
    | ({ type: 'singleChoice'; options: Array<string | ChoiceOption> } & Filterable &
        Sortable &
        Computed &
        Default<string>)
    | ({
        type: 'multipleChoice'
        options: Array<string | ChoiceOption>
        minItems?: number
        maxItems?: number
      } & Filterable &
        Default<string[]>)
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
  /**
   * Top-level fields a client may not change while a record is in this state (`['*']`: the whole payload). A PATCH,
   * a bulk update row or a GraphQL update that changes one is refused 409 `field.locked`; a transition may set it
   * on the way only when the state it leads to does not lock it too (e.g. `reopen`), and the activity shows that
   * transition. Values the platform computes are not refused.
   */
  locks?: string[]
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
  /** The record's creator may not fire this transition (four-eyes principle); short for `separateFrom: { creator: true }`. */
  forbidSelf?: boolean
  /** Whom the actor must differ from (separation of duties); refused 403 naming the rule that conflicts. */
  separateFrom?: SeparationOfDuties
  /**
   * Fired by the platform (a system principal, through the same rules and write path) once the date or date-time
   * field `after` of a record in a `from` state has passed, e.g. a permit's `expire` after `validTo`. Clients with
   * the right may still fire it earlier.
   */
  auto?: AutoTransition
}

/**
 * Separation of duties on a transition: the person firing it (the person behind a token, not the token) must not
 * be the record's creator (`creator`), anyone named in the top-level user `fields` of the record as the transition
 * finds it or as it leaves it (its own fields applied), nor anyone who fired one of the `transitions` on this record before (any
 * earlier firing, not only the last). System actions are not held to it.
 */
export interface SeparationOfDuties {
  creator?: boolean
  fields?: string[]
  transitions?: string[]
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

/**
 * A rule between fields (docs/modules.md, "Rules"): `check` is a boolean expression the record must satisfy, e.g.
 * `closedOn >= occurredOn` or `reviewDate > today()`. A check without a value (a field it reads is empty) passes: pair
 * it with `required` or a state's `requires` when the value must be there. A write that breaks it is refused (400)
 * with `message`, once per field of `fields` (default: the fields the check reads).
 */
export interface ModuleRule {
  check: string
  message: string
  fields?: string[]
  /**
   * When it is checked. Absent: on every create, and on every update or transition that changes a field the check
   * reads. Present: only on the writes that fire one of `transitions` or enter one of `states` (a create enters the
   * initial state), whatever they change.
   */
  on?: { states?: string[]; transitions?: string[] }
}

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
  /** Rules between fields, checked on writes (see ModuleRule). */
  rules?: ModuleRule[]
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
 * `payload` is every record's other values. Series can be paused, resumed and ended (`/api/v1/record-series`).
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

type StrictTransition<X> = Only<X, WorkflowTransition> &
  (X extends { separateFrom: infer S } ? { separateFrom: Only<S, SeparationOfDuties> } : unknown) &
  (X extends { auto: infer A } ? { auto: Only<A, AutoTransition> } : unknown)

type StrictWorkflow<W> = W extends { states: infer S; transitions: infer X }
  ? Only<W, Workflow> & {
      states: { [I in keyof S]: Only<S[I], WorkflowState> }
      transitions: { [I in keyof X]: StrictTransition<X[I]> }
    }
  : W

/** A due date and a recurrence as written, held to their members. */
type StrictDates<T> = (T extends { due: infer D } ? { due: Only<D, DueDate> } : unknown) &
  (T extends { recurrence: infer R } ? { recurrence: Only<R, Recurrence> } : unknown)

/** A definition as written, held to the format everywhere: top level, fields, workflow, row conditions. */
export type StrictDefinition<T> = T extends { fields: infer F; workflow: infer W }
  ? Only<T, ModuleDefinition> & { fields: StrictList<F>; workflow: StrictWorkflow<W> } & StrictDates<T> &
      (T extends {
        rules: infer R
      }
        ? { rules: { [I in keyof R]: Only<R[I], ModuleRule> } }
        : unknown)
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
