import { problems, type FieldProblem } from '../../core/errors/index.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import { stateLocks } from '../../core/modules/duties.ts'
import type { FieldChange } from './records.payload.ts'

/**
 * Locks by state: the fields a module's workflow state declares read-only to clients (`locks`, `['*']` for the whole
 * payload). Only what the client's patch changes is refused: a key it sends with the stored value changes nothing,
 * and values the platform derives are not the client's. A transition may set a field the state it leaves locks only
 * when the state it enters does not lock it too (`reopen` unlocks; a transition that stays locked does not).
 */

/** Whether `state` locks `field`. */
function isLocked(module: RegisteredModule, state: string, field: string): boolean {
  return stateLocks(module.states.get(state), field)
}

/**
 * Refuses 409 `field.locked` when the client's `patch` changes a field locked in `state` (and, for a transition,
 * locked in its target state `to` as well), naming each field, the state and the transitions that lead out of the lock.
 */
export function assertUnlocked(
  module: RegisteredModule,
  at: { state: string; to?: string },
  patch: Record<string, unknown>,
  changes: readonly FieldChange[]
): void {
  const changed = new Set(changes.map((c) => c.field))
  // In the order the client sent them.
  const locked = Object.keys(patch).filter(
    (f) => changed.has(f) && isLocked(module, at.state, f) && (at.to === undefined || isLocked(module, at.to, f))
  )
  if (!locked.length) return
  const out = module.definition.workflow.transitions
    .filter((t) => t.from.includes(at.state) && locked.some((f) => !isLocked(module, t.to, f)))
    .map((t) => ({ key: t.key, to: t.to }))
  const way = out.length
    ? `fire ${out.map((t) => `"${t.key}" (to ${t.to})`).join(' or ')} first`
    : 'no transition of the workflow leads out of the lock'
  const errors: FieldProblem[] = locked.map((f) => ({
    pointer: `/payload/${f}`,
    field: `payload.${f}`,
    code: 'locked',
    detail: `is locked in state "${at.state}"${at.to !== undefined ? ` and in "${at.to}"` : ''}; to change it, ${way}`
  }))
  throw problems.conflict(
    'field.locked',
    `${locked.map((f) => `"${f}"`).join(', ')} cannot be changed: state "${at.state}" locks ${locked.length > 1 ? 'them' : 'it'}${at.to !== undefined ? `, and so does "${at.to}", where transition leads` : ''}; to change ${locked.length > 1 ? 'them' : 'it'}, ${way}.`,
    { state: at.state, errors, unlockedBy: out }
  )
}
