import { assertCan, assertScope, assertWritable, canFire } from '../../core/auth/access.ts'
import { canonicalUserId, type Actor, type Principal } from '../../core/auth/principal.ts'
import { problems, type FieldProblem } from '../../core/errors/index.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import { computedProblems, plannedCreate, ruleProblems, withComputed } from '../../core/modules/field-rules.ts'
import { assertValid, validationError } from '../../core/validation.ts'
import { assertSeparated, dutyConflicts, type FiredTransition } from './records.duties.ts'
import { assertUnlocked } from './records.locks.ts'
import { diffPayload, hasValue, mergePatch, type FieldChange } from './records.payload.ts'

/**
 * The rules of a record write, in one place for every caller: the records service
 * (one record per call, from REST, the CLI and later transports) and bulk loads (many
 * rows per statement) both call these, then check references in one round trip
 * (records.checks.ts) and write through the one write path (records.write.ts), whose
 * statements also number, log the activity and write the event. Each rule throws the problem the
 * caller answers with; bulk turns it into that row's outcome.
 */

/**
 * The client's values with every user id in the form the platform keeps (canonicalUserId): top-level user fields and
 * the user members of a group's items. Anything that is not a string is left for the schema to refuse.
 */
function canonicalUsers(module: RegisteredModule, values: Record<string, unknown>): Record<string, unknown> {
  const out = { ...values }
  const user = (v: unknown) => (typeof v === 'string' ? canonicalUserId(v) : v)
  for (const f of module.definition.fields) {
    if (!Object.hasOwn(out, f.key)) continue
    if (f.type === 'user') out[f.key] = user(out[f.key])
    const members = f.type === 'group' ? f.fields.filter((m) => m.type === 'user') : []
    const items = out[f.key]
    if (members.length && Array.isArray(items))
      out[f.key] = items.map((item) =>
        item && typeof item === 'object' && !Array.isArray(item)
          ? {
              ...item,
              ...Object.fromEntries(
                members.filter((m) => Object.hasOwn(item, m.key)).map((m) => [m.key, user((item as never)[m.key])])
              )
            }
          : item
      )
  }
  return out
}

/**
 * A new record: the create right (and scope), the fields the principal may write (never a computed one), the
 * defaults of the fields it leaves out, the computed fields, the module schema, the rules on creates. Returns the
 * payload to store and the activity diff.
 */
export function createRules(
  principal: Principal,
  module: RegisteredModule,
  given: Record<string, unknown>
): PlannedChange {
  assertCan(principal, module, 'create')
  const sent = canonicalUsers(module, given)
  assertWritable(principal, module, Object.keys(sent))
  const { refused, payload } = plannedCreate(module.fieldRules, sent)
  refuse(refused)
  assertValid(module.validatePayload, payload, '/payload')
  refuse(ruleProblems(module.fieldRules, payload, { enters: module.definition.workflow.initial }))
  return { payload, changes: diffPayload({}, payload) }
}

export interface PlannedChange {
  payload: Record<string, unknown>
  /** Empty: the patch changes nothing, and nothing is written. */
  changes: FieldChange[]
}

/** Refuses a write with these problems (400 `field.invalid`), when there are any. */
function refuse(list: FieldProblem[]) {
  if (list.length) throw validationError(list)
}

/**
 * A JSON merge patch of a record: the update right, the fields it writes (never a computed one), the merged payload
 * with its computed fields computed afresh, against the schema and the rules that read a changed field (only when
 * something changes: an old record that a newer module version would refuse can still be left as it is).
 */
export function updateRules(
  principal: Principal,
  module: RegisteredModule,
  current: Record<string, unknown>,
  given: Record<string, unknown>
): PlannedChange {
  assertCan(principal, module, 'update')
  const patch = canonicalUsers(module, given)
  assertWritable(principal, module, Object.keys(patch))
  refuse(computedProblems(module.fieldRules, patch))
  const payload = withComputed(module.fieldRules, mergePatch(current, patch))
  const changes = diffPayload(current, payload)
  if (changes.length) {
    assertValid(module.validatePayload, payload, '/payload')
    refuse(ruleProblems(module.fieldRules, payload, { changed: new Set(changes.map((c) => c.field)) }))
  }
  return { payload, changes }
}

/**
 * A PATCH of a record where it stands (REST, GraphQL, a bulk update row): updateRules, then the locks of its state
 * on what the client's patch changes (records.locks.ts).
 */
export function patchRules(
  principal: Principal,
  module: RegisteredModule,
  current: { state: string; payload: Record<string, unknown> },
  patch: Record<string, unknown>
): PlannedChange {
  const plan = updateRules(principal, module, current.payload, patch)
  assertUnlocked(module, { state: current.state }, patch, plan.changes)
  return plan
}

export interface PlannedTransition extends PlannedChange {
  transition: { key: string; from: string; to: string }
}

/**
 * A workflow transition from the record's state, with fields set on the way: the
 * transition exists and starts here, scope, role, separation of duties (records.duties.ts;
 * `transitions` holds the record's earlier transitions its rule compares), the fields'
 * rights, schema and locks, and the target state's required fields.
 */
export function transitionRules(
  principal: Principal,
  module: RegisteredModule,
  record: {
    state: string
    payload: Record<string, unknown>
    createdBy?: Actor | null
    transitions?: readonly FiredTransition[]
  },
  key: string,
  patch: Record<string, unknown>
): PlannedTransition {
  const t = module.transitions.get(key)
  if (!t) {
    const allowed = [...module.transitions.keys()]
    throw validationError([
      {
        pointer: '/transition',
        field: 'transition',
        code: 'enum',
        detail: `must be one of: ${allowed.join(', ')}`,
        allowed
      }
    ])
  }
  const state = record.state
  if (!t.from.includes(state)) {
    const possible = module.definition.workflow.transitions.filter((x) => x.from.includes(state)).map((x) => x.key)
    throw problems.conflict(
      'transition.not_allowed',
      `Transition "${t.key}" cannot be fired from state "${state}" (it starts from ${t.from.join(', ')}). From "${state}" the workflow allows: ${possible.join(', ') || 'nothing'}.`,
      { currentState: state, allowedTransitions: possible }
    )
  }
  assertScope(principal, 'records:transition', module.definition.key)
  if (!canFire(principal, module, t)) {
    throw problems.forbidden(
      'permission.denied',
      `This credential may not fire transition "${t.key}"${t.roles?.length ? `; it needs one of the roles ${t.roles.join(', ')}` : ''}.`,
      { missing: `transition:${t.key}` }
    )
  }
  // The creator, earlier actors and the persons named in user fields as the record stands are judged before the
  // fields are set (renaming oneself away as author on the way does not help), and the persons named once they are,
  // after (nor does naming oneself reviewer on the way).
  const before = dutyConflicts(principal, t, record)
  // Fields set on the way are an update of the record, under the same rules; a field locked where the record is
  // may be set only by a transition to a state that does not lock it too.
  let planned: PlannedChange
  try {
    planned = Object.keys(patch).length
      ? updateRules(principal, module, record.payload, patch)
      : { payload: record.payload, changes: [] }
    assertUnlocked(module, { state, to: t.to }, patch, planned.changes)
  } catch (err) {
    if (before.length) assertSeparated(principal, t, record)
    throw err
  }
  const { payload, changes } = planned
  assertSeparated(principal, t, { ...record, payload }, before)
  const missing = module.guards.get(t.key)!.filter((f) => !hasValue(payload[f]))
  if (missing.length) {
    throw validationError(
      missing.map((f) => ({
        pointer: `/payload/${f}`,
        field: `payload.${f}`,
        code: 'guard',
        detail: `is required to enter state "${t.to}" by transition "${t.key}"`
      }))
    )
  }
  // The rules on this transition or its target state, whatever it changes (those on changed fields ran in updateRules).
  refuse(ruleProblems(module.fieldRules, payload, { changed: new Set(), transition: t.key, enters: t.to }))
  return { payload, changes, transition: { key: t.key, from: state, to: t.to } }
}

/** Soft-deleting a record: the delete right (and scope). */
export function deleteRules(principal: Principal, module: RegisteredModule): void {
  assertCan(principal, module, 'delete')
}
