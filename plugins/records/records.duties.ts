import { canFire } from '../../core/auth/access.ts'
import { canonicalUserId, personOf, sameActor, type Actor, type Principal } from '../../core/auth/principal.ts'
import { problems } from '../../core/errors/index.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { WorkflowTransition } from '../../core/modules/types.ts'
import { separationOf } from '../../core/modules/duties.ts'
import { hasValue } from './records.payload.ts'

/**
 * Separation of duties: who may not fire a transition of a record (its `separateFrom`, and `forbidSelf`, which is
 * `separateFrom: { creator: true }`). Pure functions of the principal, the transition and the record, so the reason
 * a transition is unavailable can be shown without firing it (`transitionBlockers`), and transitionRules throws
 * exactly what they find. The person is compared, not the credential: a token acts for the person who created it
 * (core/auth/principal.ts, `sameActor` and `personOf`).
 */

/** An earlier transition of a record, as its activity keeps it: which one, and who fired it. */
export interface FiredTransition {
  key: string
  actor: Actor
}

/** What the rules read of a record: the payload (as it will be after the transition), its creator, its earlier transitions. */
export interface DutyRecord {
  payload: Record<string, unknown>
  createdBy?: Actor | null
  /** Earlier transitions of the record (any order); those `comparedTransitions` names are enough. */
  transitions?: readonly FiredTransition[]
}

/** One rule the principal breaks: the creator, a user field naming them, or an earlier transition they fired. */
export type DutyConflict =
  { rule: 'creator' } | { rule: 'field'; field: string } | { rule: 'transition'; transition: string }

/**
 * A user id as a person is known by, whatever way a payload wrote it: the schema takes a UUID in any case and as
 * `urn:uuid:…`, and the same person written another way must not pass for another.
 */
const userIdOf = (v: unknown): string | undefined => (typeof v === 'string' ? canonicalUserId(v) : undefined)

/** Where the principal breaks `t`'s separation of duties on `record`; empty when it may fire it. System actions never do. */
export function dutyConflicts(principal: Principal, t: WorkflowTransition, record: DutyRecord): DutyConflict[] {
  if (principal.kind === 'system') return []
  const sep = separationOf(t)
  const out: DutyConflict[] = []
  if (sep.creator && sameActor(record.createdBy, principal.actor)) out.push({ rule: 'creator' })
  const person = userIdOf(personOf(principal.actor)?.userId)
  for (const field of sep.fields) {
    if (person !== undefined && userIdOf(record.payload[field]) === person) out.push({ rule: 'field', field })
  }
  for (const key of sep.transitions)
    if (record.transitions?.some((x) => x.key === key && sameActor(x.actor, principal.actor)))
      out.push({ rule: 'transition', transition: key })
  return out
}

const whom = (c: DutyConflict) =>
  c.rule === 'creator'
    ? "the record's creator"
    : c.rule === 'field'
      ? `the person named in "${c.field}"`
      : `a person who fired "${c.transition}" on this record`

/** The problem the conflicts make: 403 `workflow.self_approval` when the creator is one, else `workflow.separation_of_duties`. */
function conflictText(t: WorkflowTransition, conflicts: DutyConflict[]) {
  return {
    code: conflicts.some((c) => c.rule === 'creator') ? 'workflow.self_approval' : 'workflow.separation_of_duties',
    detail: `Transition "${t.key}" may not be fired by ${conflicts.map(whom).join(', nor by ')}, and the caller is that person (a token acts for the person who created it); another person with the role must fire it.`
  }
}

function conflictProblem(t: WorkflowTransition, conflicts: DutyConflict[]) {
  const { code, detail } = conflictText(t, conflicts)
  return problems.forbidden(code, detail, { transition: t.key, conflicts })
}

/**
 * Throws the 403 when the principal breaks `t`'s separation of duties on `record`, or broke it on the record as it
 * stood (`before`: its conflicts there, which a transition's fields cannot undo); each rule named once.
 */
export function assertSeparated(
  principal: Principal,
  t: WorkflowTransition,
  record: DutyRecord,
  before: readonly DutyConflict[] = []
): void {
  const seen = new Set<string>()
  const conflicts = [...before, ...dutyConflicts(principal, t, record)].filter((c) => {
    const key = JSON.stringify(c)
    return !seen.has(key) && !!seen.add(key)
  })
  if (conflicts.length) throw conflictProblem(t, conflicts)
}

/**
 * What firing `t` would answer for its separation of duties on the record as it stands (a record's
 * `availableTransitions[].refusal`): the code, the detail and the rules; undefined when nothing holds the caller
 * apart. Fields the transition would set on the way can add a conflict, never remove one.
 */
export function separationRefusal(
  principal: Principal,
  t: WorkflowTransition,
  record: DutyRecord
): { code: string; detail: string; conflicts: DutyConflict[] } | undefined {
  const conflicts = dutyConflicts(principal, t, record)
  // What the 403 would say, without making the error (a list asks this of every record).
  return conflicts.length ? { ...conflictText(t, conflicts), conflicts } : undefined
}

/** Why a transition cannot be fired now, with the code firing it would answer. */
export interface TransitionBlocker {
  code: 'permission.denied' | 'workflow.self_approval' | 'workflow.separation_of_duties' | 'field.invalid'
  detail: string
  /** Separation of duties: the rules the principal breaks. */
  conflicts?: DutyConflict[]
  /** `field.invalid`: the fields the guard still needs (the transition may set them on the way). */
  missingFields?: string[]
}

/**
 * For each transition that starts from the record's state, why the principal cannot fire it as the record is now
 * (empty: it can): its role, separation of duties (fields as they are now; fields the transition sets could add a
 * conflict) and the fields its guard still needs. What the browser workspace shows beside an unavailable transition.
 */
export function transitionBlockers(
  principal: Principal,
  module: RegisteredModule,
  record: DutyRecord & { state: string }
): Array<{ transition: string; blockers: TransitionBlocker[] }> {
  return module.definition.workflow.transitions
    .filter((t) => t.from.includes(record.state))
    .map((t) => {
      const blockers: TransitionBlocker[] = []
      if (!canFire(principal, module, t))
        blockers.push({ code: 'permission.denied', detail: `The caller's roles may not fire "${t.key}".` })
      const refusal = separationRefusal(principal, t, record)
      if (refusal) blockers.push({ ...refusal, code: refusal.code as TransitionBlocker['code'] })
      const missing = module.guards.get(t.key)!.filter((f) => !hasValue(record.payload[f]))
      if (missing.length)
        blockers.push({
          code: 'field.invalid',
          detail: `To enter "${t.to}", ${missing.join(', ')} must hold a value (the transition may set them).`,
          missingFields: missing
        })
      return { transition: t.key, blockers }
    })
}
