import { canFire } from '../../core/auth/access.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { Desk, RecordView } from './workspace.context.ts'
import { stateLabel } from './workspace.context.ts'

/** Roles whose rights let them fire a transition: the transition's own roles, or those granted `transition:<key>`. */
function rolesFor(m: RegisteredModule, key: string): string[] {
  const t = m.transitions.get(key)!
  if (t.roles?.length) return [...t.roles]
  return Object.entries(m.definition.permissions)
    .filter(([, actions]) => actions.includes(`transition:${key}`) || actions.includes('transition:*'))
    .map(([role]) => role)
}

/** A role as people say it: `safety-manager` is "a safety manager", `investigator` "an investigator". */
const aRole = (role: string) => {
  const words = role.replace(/[-_]+/g, ' ')
  return `${/^[aeiou]/i.test(words) ? 'an' : 'a'} ${words}`
}

/**
 * Why this person may not fire the transition on the record as it stands, or undefined when they may: the service's
 * own answer first (a transition it lists as available, or its separation-of-duties refusal), then the state the
 * record is in, then who may. The record page shows it beside the disabled button; the transition's form refuses with it.
 */
export function whyUnavailable(desk: Desk, m: RegisteredModule, rec: RecordView, key: string): string | undefined {
  const t = m.transitions.get(key)!
  const available = rec.availableTransitions?.find((a) => a.key === key)
  if (available) return available.refusal?.detail
  if (!t.from.includes(rec.state))
    return `${t.label ?? t.key} does not lead out of ${stateLabel(m, rec.state).toLowerCase()}.`
  if (!canFire(desk.principal, m, t)) return `Only ${rolesFor(m, key).map(aRole).join(' or ')} may do this.`
  return 'Not available to you now.'
}
