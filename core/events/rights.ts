import { can, hiddenFields, rowRule } from '../auth/access.ts'
import { isAdmin, type Principal } from '../auth/principal.ts'
import { hasScope } from '../auth/scopes.ts'
import type { RegisteredModule } from '../modules/registry.ts'

/**
 * Who may see which event of the log, and what of it: the one decision for every reader
 * that hands events out (the events feed, webhook deliveries, later subscriptions). An
 * event needs the read right on its module, with the reader's row rule applied to the
 * record as it is now; export events are their requester's (and the admins'), identity
 * events (users, groups) an admin's; field names the reader may not read leave
 * `changedFields`. Readers apply it when they hand an event out, not when it was written,
 * so a right taken away stops the next event.
 */

/** A condition over `events e`, with `?` placeholders for its values. */
export interface EventCondition {
  sql: string
  values: unknown[]
}

/** The condition's SQL with its `?` as `$n` parameters appended to `values` (which holds the statement's others). */
export function bindCondition(condition: EventCondition, values: unknown[]): string {
  let i = 0
  return condition.sql.replace(/\?/g, () => `$${values.push(condition.values[i++])}`)
}

/** The fields of a stored event the decision reads. */
export interface EventRow {
  type: string
  moduleKey: string | null
  data: Record<string, unknown> | null
}

/** The modules of `installed` whose events the principal may read. */
export function readableModules(principal: Principal, installed: Iterable<RegisteredModule>): RegisteredModule[] {
  return [...installed].filter((m) => can(principal, m, 'read'))
}

/**
 * The events the principal may see, as one condition over `events e`: those of `modules`
 * (each checked with `readableModules` first), and identity events when `identity` is set
 * and the principal is an admin.
 */
export function visibleEvents(
  principal: Principal,
  modules: readonly RegisteredModule[],
  identity: boolean
): EventCondition {
  const parts: string[] = []
  const values: unknown[] = []
  const self = principal.actor.id
  if (identity && isAdmin(principal)) parts.push('e.module_key IS NULL')
  for (const module of modules) {
    const key = module.definition.key
    const rule = rowRule(principal, module)
    // An export is its requester's (and the admins'), as GET /api/v1/exports/{id} has it.
    const exports = hasScope(principal.scopes, 'exports:read', key)
      ? isAdmin(principal)
        ? 'true'
        : `e.actor->>'id' = ?`
      : 'false'
    const exportValues = exports === 'true' || exports === 'false' ? [] : [self]
    const records = rule
      ? `EXISTS (SELECT 1 FROM records r WHERE r.tenant_id = e.tenant_id AND r.id = e.subject_id AND ${rule.sql})`
      : 'true'
    parts.push(`(e.module_key = ? AND CASE WHEN e.type LIKE 'export.%' THEN ${exports} ELSE ${records} END)`)
    values.push(key, ...exportValues, ...(rule ? rule.bindings : []))
  }
  return { sql: parts.length ? parts.join(' OR ') : 'false', values }
}

/** Event types whose data names changed fields (`changedFields`), which field rules may hide. */
const withChangedFields = new Set(['record.updated', 'record.transitioned', 'record.migrated'])

/** The event without the names of fields the principal may not read (out of `changedFields`). */
export function redactEvent<T extends EventRow>(
  principal: Principal,
  module: RegisteredModule | undefined,
  event: T
): T {
  if (!withChangedFields.has(event.type) || !event.moduleKey || !Array.isArray(event.data?.changedFields)) return event
  const hidden = module ? hiddenFields(principal, module) : new Set<string>()
  if (!hidden.size) return event
  return {
    ...event,
    data: { ...event.data, changedFields: (event.data.changedFields as string[]).filter((f) => !hidden.has(f)) }
  }
}
