import type { Params } from '@feathersjs/feathers'
import type pg from 'pg'
import { dueUntil, migrationRefusals, migrationRuns } from '../records/records.shared.ts'
import { assertScope, hiddenFields, seesModule } from '../../core/auth/access.ts'
import { problems } from '../../core/errors/index.ts'
import { isAdmin, requirePrincipal, type Principal } from '../../core/auth/principal.ts'
import { summaryColumns } from '../../core/modules/derive/columns.ts'
import { fieldFinding } from '../../core/modules/derive/filters.ts'
import type { ModuleRegistry, RegisteredModule } from '../../core/modules/registry.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'

/** Refused records a module's answer lists (the CLI lists them all: `records module migrations`). */
const refusalsShown = 20

interface ModuleParams extends Params {
  principal?: Principal
}

function summary(m: RegisteredModule) {
  const d = m.definition
  return {
    key: d.key,
    version: d.version,
    title: d.title,
    description: d.description ?? null,
    numberPattern: d.numberPattern,
    states: d.workflow.states.map((s) => s.key),
    links: { schema: `/api/v1/modules/${d.key}`, records: `/api/v1/records?moduleKey=${d.key}` }
  }
}

/** The module's summary columns (or the default) without the fields this caller may not read. */
const summaryColumnsOf = (m: RegisteredModule, principal: Principal) =>
  summaryColumns(m).filter((k) => !hiddenFields(principal, m).has(k))

/** Installed modules of the caller's tenant and their full schemas, straight from the registry. */
export class ModulesService {
  constructor(
    private readonly tenants: TenantDirectory,
    private readonly pool: pg.Pool
  ) {}

  private principal(params: ModuleParams): Principal {
    return requirePrincipal(params, 'A modules call')
  }

  async find(params: ModuleParams) {
    const principal = this.principal(params)
    assertScope(principal, 'modules:read')
    const tenant = this.tenants.get(principal.tenantId)
    const items = [...(tenant?.modules.values() ?? [])]
      .filter((m) => seesModule(principal, m))
      .sort((a, b) => a.definition.key.localeCompare(b.definition.key))
      .map(summary)
    // Installed modules this deployment does not serve (their package did not load, or its version is one this tenant
    // may not move to): their calls answer 503 module.unavailable. A tenant admin
    // also reads why (the package, where and what), which names the deployment's packages and files.
    const admin = isAdmin(principal)
    const unavailable = [...(tenant?.unavailable ?? [])]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, reason]) => ({ key, status: 'unavailable' as const, ...(admin ? { reason } : {}) }))
    return { items, unavailable }
  }

  async get(key: string, params: ModuleParams) {
    const principal = this.principal(params)
    assertScope(principal, 'modules:read')
    const m = this.tenants.module(principal.tenantId, String(key))
    if (!seesModule(principal, m))
      throw problems.forbidden(
        'permission.denied',
        `None of this credential's roles has rights in module "${m.definition.key}".`,
        { missing: 'read' }
      )
    const d = m.definition
    return {
      ...summary(m),
      fields: d.fields.map((f) => ({ ...f, ...fieldFinding(f) })),
      schema: m.schema,
      workflow: d.workflow,
      permissions: d.permissions,
      rowAccess: d.rowAccess ?? {},
      summaryColumns: summaryColumnsOf(m, principal),
      rules: d.rules ?? [],
      due: d.due ? { field: d.due.field, until: dueUntil(m) } : null,
      recurrence: d.recurrence ?? null,
      package: { name: d.packageName },
      ...(isAdmin(principal) ? { migration: await this.migration(principal.tenantId, m) } : {})
    }
  }

  /**
   * For tenant admins: the move of the tenant's records to the loaded version through the migration its package
   * declares (records.migrate.ts), with the first records it refused; null when the package declares none or the job
   * has not looked at this module yet.
   */
  private async migration(tenantId: string, m: RegisteredModule) {
    if (!m.migrations.length) return null
    const [run] = await migrationRuns(this.pool, tenantId, m.definition.key, m.definition.version)
    if (!run) return null
    const { tenantId: _t, moduleKey: _k, ...progress } = run
    const refusals = run.refused
      ? await migrationRefusals(this.pool, tenantId, m.definition.key, run.toVersion, refusalsShown)
      : []
    return { ...progress, refusals }
  }
}

/**
 * The modules this deployment offers (every package that loaded), with what each says of itself and
 * whether the caller's tenant has it installed, at which version. Installing stays in operator config
 * (`tenants.<id>.modules`): this is what a tenant can ask its operator for.
 */
export class ModuleCatalogueService {
  constructor(
    private readonly tenants: TenantDirectory,
    private readonly registry: ModuleRegistry
  ) {}

  async find(params: ModuleParams) {
    const principal = requirePrincipal(params, 'A module catalogue call')
    assertScope(principal, 'modules:read')
    const tenant = this.tenants.get(principal.tenantId)
    const items = this.registry
      .all()
      .sort((a, b) => a.definition.key.localeCompare(b.definition.key))
      .map((m) => {
        const d = m.definition
        // The version the tenant is on: the one offered, or an older one it may not move from (GET /api/v1/modules says why).
        const installed = tenant?.versions.has(d.key) ? { version: tenant.versions.get(d.key) ?? d.version } : null
        return {
          key: d.key,
          title: d.title,
          version: d.version,
          description: d.description ?? null,
          host: m.package.host ?? null,
          package: { name: m.package.name, version: m.package.version ?? null },
          installed
        }
      })
    return { items }
  }
}
