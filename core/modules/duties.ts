import type { ModuleDefinition, WorkflowState, WorkflowTransition } from './types.ts'

/**
 * Separation of duties and locks by state as the descriptions derived from a definition word them (OpenAPI, GraphQL):
 * one wording, read from the definition, never written by hand. The rules themselves run in
 * plugins/records/records.duties.ts and records.locks.ts; their load-time checks are validate-duties.ts.
 */

/** The entry of a state's `locks` that locks the whole payload. */
export const allFields = '*'

/** Whether a state locks a top-level field, by name or by `'*'`. */
export const stateLocks = (s: WorkflowState | undefined, field: string): boolean =>
  !!s?.locks && (s.locks.includes(allFields) || s.locks.includes(field))

/** The states that lock a top-level field, in workflow order. */
export function statesLocking(d: Pick<ModuleDefinition, 'workflow'>, field: string): string[] {
  return d.workflow.states.filter((s) => stateLocks(s, field)).map((s) => s.key)
}

/** "Locked in states closed, archived: …" for a field some state locks; undefined for one no state locks. */
export function lockNote(d: Pick<ModuleDefinition, 'workflow'>, field: string): string | undefined {
  const states = statesLocking(d, field)
  if (!states.length) return undefined
  return `Locked (read-only to clients) in state${states.length > 1 ? 's' : ''} ${states.join(', ')}: a change there is refused 409 field.locked; a transition to a state that does not lock it may set it.`
}

/** A transition's separation of duties with `forbidSelf` (its shorthand for the creator) folded in: the one reading. */
export function separationOf(t: WorkflowTransition): {
  creator: boolean
  fields: readonly string[]
  transitions: readonly string[]
} {
  const s = t.separateFrom
  return { creator: !!(t.forbidSelf || s?.creator), fields: s?.fields ?? [], transitions: s?.transitions ?? [] }
}

/** Whether a transition holds its actor apart from anyone. */
export const separates = (t: WorkflowTransition): boolean => {
  const s = separationOf(t)
  return s.creator || s.fields.length > 0 || s.transitions.length > 0
}

/** Whom a transition's actor must differ from, as a phrase ("the record's creator, a person named in owner, …"); undefined if nobody. */
export function separationNote(t: WorkflowTransition): string | undefined {
  const s = separationOf(t)
  const whom = [
    ...(s.creator ? ["the record's creator"] : []),
    ...s.fields.map((f) => `the person named in ${f}`),
    ...s.transitions.map((k) => `whoever fired ${k} on the record`)
  ]
  return whom.length ? `not by ${whom.join(', ')}` : undefined
}
