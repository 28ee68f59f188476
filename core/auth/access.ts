import { problems } from '../errors/index.ts'
import type { RegisteredModule } from '../modules/registry.ts'
import type { FieldDefinition, RowCondition, WorkflowTransition } from '../modules/types.ts'
import type { Principal } from './principal.ts'
import { hasScope, scopeForAction, type Scope } from './scopes.ts'

/**
 * Everything a principal may do with one module, in one place: module actions (roles
 * and scopes), row-level constraints, and field-level visibility. Every transport
 * reaches records through the records service, which asks only this file.
 */

function rolesAllow(principal: Principal, module: RegisteredModule, action: string): boolean {
  if (principal.roles === 'all') return true
  const perms = module.definition.permissions
  return principal.roles.some((role) => {
    const actions = perms[role]
    return (
      !!actions && (actions.includes(action) || (action.startsWith('transition:') && actions.includes('transition:*')))
    )
  })
}

/** Whether any of the principal's roles grants anything in the module (what module listings show). */
export function seesModule(principal: Principal, module: RegisteredModule): boolean {
  return principal.roles === 'all' || principal.roles.some((r) => (module.definition.permissions[r]?.length ?? 0) > 0)
}

/** Whether the principal may perform a module action (read, create, update, delete, export, attachments, transition:<key>). */
export function can(principal: Principal, module: RegisteredModule, action: string): boolean {
  return (
    hasScope(principal.scopes, scopeForAction(action), module.definition.key) && rolesAllow(principal, module, action)
  )
}

/** 403 naming the missing scope for a non-module endpoint. */
export function assertScope(principal: Principal, scope: Scope, moduleKey?: string) {
  if (!hasScope(principal.scopes, scope, moduleKey)) {
    const named = moduleKey ? `${scope} (or ${scope}:${moduleKey})` : scope
    throw problems.forbidden('scope.missing', `This token lacks the scope ${named}.`, { missingScope: scope })
  }
}

/** Throws 403 naming the missing scope first (the token's limit), then the missing role right. */
export function assertCan(principal: Principal, module: RegisteredModule, action: string) {
  assertScope(principal, scopeForAction(action), module.definition.key)
  if (!rolesAllow(principal, module, action)) {
    throw problems.forbidden(
      'permission.denied',
      `This credential may not ${action} records of module "${module.definition.key}".`,
      { missing: action }
    )
  }
}

/** Whether the principal's roles and scopes let it fire the transition (apart from guards and self-approval). */
export function canFire(principal: Principal, module: RegisteredModule, t: WorkflowTransition): boolean {
  if (!can(principal, module, `transition:${t.key}`)) return false
  if (principal.roles === 'all' || !t.roles?.length) return true
  return t.roles.some((r) => (principal.roles as readonly string[]).includes(r))
}

/**
 * The id of a record's creator in SQL, over `alias` (none: the bare column, as an index names it): the row rule
 * `createdBy: self`, the list filter `createdBy` and the index that serves both (plugins/records/records.indexes.ts)
 * compare this one expression.
 */
export const creatorId = (alias = 'r') => `${alias ? `${alias}.` : ''}created_by->>'id'`

/** What a row condition means, in SQL over `records r` and over a loaded row: one table, two readings. */
const conditionTo = {
  createdBy: {
    sql: () => `${creatorId()} = ?`,
    test: (row: RowLike, _c: RowCondition, self: string) => row.created_by?.id === self
  },
  field: {
    sql: (c: RowCondition) => `r.payload->>'${(c as { field: string }).field}' = ?`,
    test: (row: RowLike, c: RowCondition, self: string) => row.payload?.[(c as { field: string }).field] === self
  }
}

interface RowLike {
  created_by?: { id?: string } | null
  payload?: Record<string, unknown>
}

export interface RowRule {
  /** A stable key of the rule's shape (for prepared statements and cursor scopes). */
  key: string
  sql: string
  bindings: string[]
  test(row: RowLike): boolean
}

/**
 * The row-level constraint on the principal's reads of a module, ANDed into every
 * query (list, get, change); undefined when it sees every record. Only roles that
 * grant `read` count, and one such role without a rule lifts the restriction.
 */
export function rowRule(principal: Principal, module: RegisteredModule): RowRule | undefined {
  if (principal.roles === 'all') return undefined
  const rules = module.definition.rowAccess ?? {}
  const readers = principal.roles.filter((r) => module.definition.permissions[r]?.includes('read'))
  if (readers.length === 0 || readers.some((r) => !rules[r])) return undefined
  const conditions = readers.flatMap((r) => rules[r])
  const self = principal.userId ?? principal.actor.id
  const kind = (c: RowCondition) => ('createdBy' in c ? 'createdBy' : 'field')
  return {
    key: JSON.stringify(conditions),
    sql: `(${conditions.map((c) => conditionTo[kind(c)].sql(c)).join(' OR ')})`,
    bindings: conditions.map(() => self),
    test: (row) => conditions.some((c) => conditionTo[kind(c)].test(row, c, self))
  }
}

/** Top-level fields the principal may not see in this module (absent from every read). */
export function hiddenFields(principal: Principal, module: RegisteredModule): ReadonlySet<string> {
  if (principal.roles === 'all') return noFields
  const roles = principal.roles
  const { renamed, removed } = module.formerKeys
  // A renamed field's earlier keys follow its rule; a removed field's rule is gone with it, so it is shown to none but
  // the tenant's own keys (older activity entries and records not yet moved still name them).
  const hidden = module.restrictedFields
    .filter((f) => !f.access!.read.some((r) => roles.includes(r)))
    .flatMap((f) => [f.key, ...(renamed.get(f.key) ?? [])])
  hidden.push(...removed)
  return hidden.length ? new Set(hidden) : noFields
}
const noFields: ReadonlySet<string> = new Set()

/** Whether the principal's roles may write the field (its `access.write`, else `access.read`; a field without a rule is everyone's). */
export function writesField(principal: Principal, field: FieldDefinition | undefined): boolean {
  if (principal.roles === 'all' || !field?.access) return true
  const roles = principal.roles
  return (field.access.write ?? field.access.read).some((r) => roles.includes(r))
}

/** Throws 403 when a write touches a field the principal may not write. */
export function assertWritable(principal: Principal, module: RegisteredModule, fields: Iterable<string>) {
  for (const key of fields) {
    const access = module.fields.get(key)?.access
    if (access && !writesField(principal, module.fields.get(key))) {
      throw problems.forbidden(
        'field.forbidden',
        `This credential may not write field "${key}" of module "${module.definition.key}"; it needs one of the roles ${(access.write ?? access.read).join(', ')}.`,
        { field: key }
      )
    }
  }
}

/** The payload without hidden fields. */
export function redactPayload(payload: Record<string, unknown>, hidden: ReadonlySet<string>): Record<string, unknown> {
  if (!hidden.size) return payload
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(payload)) if (!hidden.has(k)) out[k] = v
  return out
}

/** Activity entries without changes to hidden fields. */
export function redactActivity<T extends { changes?: Array<{ field: string }> }>(
  activity: T[],
  hidden: ReadonlySet<string>
): T[] {
  if (!hidden.size) return activity
  return activity.map((a) => (a.changes ? { ...a, changes: a.changes.filter((c) => !hidden.has(c.field)) } : a))
}
