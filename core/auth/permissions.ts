import { problems } from '../errors/index.ts'
import type { RegisteredModule } from '../modules/registry.ts'
import type { WorkflowTransition } from '../modules/types.ts'
import type { Principal } from './principal.ts'

/** Whether the principal may perform a module action (read, create, update, delete, export, attachments, transition:<key>). */
export function can(principal: Principal, module: RegisteredModule, action: string): boolean {
  if (principal.roles === 'all') return true
  const perms = module.definition.permissions
  return principal.roles.some((role) => {
    const actions = perms[role]
    return !!actions && (actions.includes(action) || (action.startsWith('transition:') && actions.includes('transition:*')))
  })
}

/** Throws 403 naming the missing right. */
export function assertCan(principal: Principal, module: RegisteredModule, action: string) {
  if (!can(principal, module, action)) {
    throw problems.forbidden('permission.denied', `This credential may not ${action} records of module "${module.definition.key}".`, { missing: action })
  }
}

/** Whether the principal's roles let it fire the transition (apart from guards and self-approval). */
export function canFire(principal: Principal, module: RegisteredModule, t: WorkflowTransition): boolean {
  if (!can(principal, module, `transition:${t.key}`)) return false
  if (principal.roles === 'all' || !t.roles?.length) return true
  return t.roles.some((r) => (principal.roles as readonly string[]).includes(r))
}
