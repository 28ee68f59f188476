import { assertCan, rowRule } from '../../core/auth/access.ts'
import type { Principal } from '../../core/auth/principal.ts'
import type { Queryable } from '../../core/db/index.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'
import { isUuid } from '../../core/validation.ts'
import { selectAny, type RecordRow } from './records.repository.ts'

/**
 * "May this caller see this record", decided on a loaded row: the row's module when the caller
 * sees the row; undefined when the record does not exist for it (no row, a module its tenant does
 * not have, a row outside its row-level rule), which the caller answers as 404, never 403, so an
 * unseen record's existence does not leak. A caller that may not read the module's records at all
 * is 403 (`assertCan`): that says what the credential lacks, about the module and not the record.
 */
export function readableModule(
  tenants: TenantDirectory,
  principal: Principal,
  row: RecordRow | undefined
): RegisteredModule | undefined {
  // A record of a module this instance cannot serve: 503 (installed), not a 404 that would say the record is gone.
  const module = row && tenants.installed(principal.tenantId, row.module_key)
  if (!module) return undefined
  assertCan(principal, module, 'read')
  return rowRule(principal, module)?.test(row) === false ? undefined : module
}

/**
 * The record `id` of the caller's tenant, live or deleted, with its module, when the caller may
 * see it (readableModule); undefined for a 404 (the caller words it: an attachment's, the audit
 * log's). The one decision the records service, the audit log and attachments share.
 */
export async function readableRecord(
  o: { db: Queryable; tenants: TenantDirectory },
  principal: Principal,
  id: string
): Promise<{ row: RecordRow; module: RegisteredModule } | undefined> {
  const row = isUuid(id) ? await selectAny(o.db, principal.tenantId, id) : undefined
  const module = readableModule(o.tenants, principal, row)
  return module && { row: row!, module }
}
