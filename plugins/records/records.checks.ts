import type { FieldProblem } from '../../core/errors/index.ts'
import type { Queryable } from '../../core/db/index.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'
import { existingRefs } from './records.repository.ts'

/**
 * Record-reference problems of many payloads at once (one query per referenced module,
 * however many payloads): single writes pass one, bulk passes a batch. `changed`, when
 * given, limits the check to references an update touched, so a link to a record
 * deleted later does not freeze every other edit.
 */
export async function referenceProblems(
  db: Queryable,
  tenants: TenantDirectory,
  tenantId: string,
  module: RegisteredModule,
  items: ReadonlyArray<{ payload: Record<string, unknown>; changed?: ReadonlySet<string> }>
): Promise<FieldProblem[][]> {
  const found: FieldProblem[][] = items.map(() => [])
  for (const f of module.definition.fields) {
    if (f.type !== 'recordRef') continue
    const wanted = items.map((it) =>
      typeof it.payload[f.key] === 'string' && (!it.changed || it.changed.has(f.key))
        ? (it.payload[f.key] as string)
        : undefined
    )
    const ids = [...new Set(wanted.filter((v): v is string => v !== undefined))]
    if (!ids.length) continue
    const installed = !!tenants.get(tenantId)?.modules.has(f.module)
    const live = installed ? await existingRefs(db, tenantId, f.module, ids) : new Set<string>()
    wanted.forEach((id, i) => {
      if (id !== undefined && !live.has(id)) {
        found[i].push({
          pointer: `/payload/${f.key}`,
          field: `payload.${f.key}`,
          code: 'reference',
          detail: `must be the id of a live ${f.module} record of this tenant`
        })
      }
    })
  }
  return found
}
