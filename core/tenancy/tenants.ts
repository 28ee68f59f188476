import type pg from 'pg'
import type { AppConfig } from '../config.ts'
import { transaction, type Queryable } from '../db/index.ts'
import { listenWithReconnect, type Listening } from '../db/listen.ts'
import { systemScope } from '../db/tenant-scope.ts'
import { problems, type ApiError } from '../errors/index.ts'
import { logger } from '../logger.ts'
import { upgradeRefusal } from '../modules/diff.ts'
import type { ModuleRegistry, RegisteredModule } from '../modules/registry.ts'
import type { ModuleDefinition } from '../modules/types.ts'

export interface Tenant {
  id: string
  name: string
  modules: ReadonlyMap<string, RegisteredModule>
  /**
   * Installed modules this instance may not serve, with why (for tenant admins and the log): no loaded package
   * provides them (broken, incompatible or removed), or the loaded version is one the tenant may not move to (a
   * downgrade, breaking changes without a migration that answers them). Their calls answer 503.
   */
  unavailable: ReadonlyMap<string, string>
  /** Installed module -> the version recorded at its installation or last sync (null: its package never loaded here). */
  versions: ReadonlyMap<string, string | null>
  /** Installed module -> every version the tenant has been on whose records may still be stored (core migration 018). */
  history: ReadonlyMap<string, readonly string[]>
}

/** Announced (at commit) by every sync of tenants and modules; each instance's directory reloads on it. */
export const tenantsChannel = 'records_tenants_changed'

/**
 * Tenants and their installed modules, as synced from config into the database. An instance
 * that syncs another module list (a rolling change of config) announces it, and every running
 * instance reloads at once, as credentials do for revocations.
 */
export class TenantDirectory {
  private tenants = new Map<string, Tenant>()
  private listening?: Listening

  constructor(
    private readonly pool: pg.Pool,
    private readonly registry: ModuleRegistry
  ) {}

  /** Reloads on every announced sync; a lost connection reconnects with backoff and reloads (announcements were missed meanwhile). */
  async listen(): Promise<void> {
    if (this.listening) return
    this.listening = await listenWithReconnect(this.pool, tenantsChannel, {
      logName: 'tenant listener',
      onNotify: () =>
        void this.load().catch((err) =>
          logger.warn('tenants could not be reloaded', { error: (err as Error).message })
        ),
      onResubscribed: () => this.load()
    })
  }

  async close() {
    const listening = this.listening
    this.listening = undefined
    await listening?.close()
  }

  /** Loads what the database says is installed; modules no longer shipped are skipped with a warning. */
  async load() {
    const { rows } = await systemScope('tenants.load', () =>
      this.pool.query(
        `SELECT t.id, t.name, coalesce(array_agg(m.module_key ORDER BY m.module_key) FILTER (WHERE m.installed), '{}') AS modules,
                coalesce(jsonb_object_agg(m.module_key, m.module_version) FILTER (WHERE m.installed), '{}') AS versions,
                coalesce(jsonb_object_agg(m.module_key, m.versions) FILTER (WHERE m.installed), '{}') AS history
           FROM tenants t LEFT JOIN tenant_modules m ON m.tenant_id = t.id GROUP BY t.id, t.name`
      )
    )
    const stored = await systemScope('modules.definitions', () => storedDefinitions(this.pool))
    const next = new Map<string, Tenant>()
    for (const r of rows) {
      const modules = new Map<string, RegisteredModule>()
      const unavailable = new Map<string, string>()
      const versions = new Map(Object.entries(r.versions as Record<string, string | null>))
      const history = new Map(Object.entries(r.history as Record<string, string[]>))
      for (const key of r.modules as string[]) {
        const m = this.registry.get(key)
        const refusal = m && refusalOf(stored, m, versions.get(key), history.get(key))
        if (m && !refusal) modules.set(key, m)
        else unavailable.set(key, refusal ?? unavailableReason(this.registry, key))
      }
      next.set(r.id, { id: r.id, name: r.name, modules, unavailable, versions, history })
    }
    this.tenants = next
  }

  /**
   * The 503 for a module a tenant has installed but no loaded package provides. The tenant is told the
   * module is unavailable and that its records are kept, not why (the reason names the deployment's
   * packages and files: operators read it at GET /api/v1/modules, on /readyz and in the log).
   */
  unavailable(tenantId: string, moduleKey: string): ApiError | undefined {
    if (!this.tenants.get(tenantId)?.unavailable.has(moduleKey)) return undefined
    return problems.unavailable(
      'module.unavailable',
      `Module "${moduleKey}" is installed for this tenant but unavailable on this deployment: its package did not load, or its version is one this tenant's records may not move to. Its records are kept and answer again once an operator fixes the package; tenant admins see the reason at GET /api/v1/modules.`,
      { moduleKey }
    )
  }

  get(tenantId: string): Tenant | undefined {
    return this.tenants.get(tenantId)
  }

  list(): Tenant[] {
    return [...this.tenants.values()]
  }

  /** The installed module, undefined when the tenant has none of that key; a 503 when it has one this instance cannot serve. */
  installed(tenantId: string, moduleKey: string): RegisteredModule | undefined {
    const m = this.tenants.get(tenantId)?.modules.get(moduleKey)
    if (m) return m
    const unavailable = this.unavailable(tenantId, moduleKey)
    if (unavailable) throw unavailable
    return undefined
  }

  /** The installed module; a 503 when it cannot be served, or a 404 that does not say whether the module exists elsewhere. */
  module(tenantId: string, moduleKey: string): RegisteredModule {
    const m = this.installed(tenantId, moduleKey)
    if (!m) throw problems.notFound('module.not_found', `No module "${moduleKey}" is installed for this tenant.`)
    return m
  }
}

/**
 * Makes the database match config: creates configured tenants, installs their listed
 * modules and marks modules dropped from config as uninstalled (their records stay).
 * Returns the ids of tenants created by this call.
 */
/** Why no loaded package serves `key`, in words for a tenant admin. */
function unavailableReason(registry: ModuleRegistry, key: string): string {
  const why = registry.unavailableModule(key)
  return why
    ? `Module package "${why.packageName}": ${why.where}: ${why.problem}`
    : 'No loaded module package provides this module (removed, or its package could not be read).'
}

/** The definitions recorded per version (core migration 017), by `key@version`. */
type StoredDefinitions = ReadonlyMap<string, ModuleDefinition>

async function storedDefinitions(db: Queryable): Promise<StoredDefinitions> {
  const { rows } = await db.query<{ module_key: string; version: string; definition: ModuleDefinition }>(
    'SELECT module_key, version, definition FROM module_definitions'
  )
  return new Map(rows.map((r) => [`${r.module_key}@${r.version}`, r.definition]))
}

/**
 * Why a tenant on version `recorded` of a module may not move to the loaded one, if it may not (upgradeRefusal). The
 * other versions it was on (`history`) are checked too: records keep the version they were last written under, so
 * records of any of them may still be stored, and the loaded version (its migrations) must take each.
 */
function refusalOf(
  stored: StoredDefinitions,
  m: RegisteredModule,
  recorded: string | null | undefined,
  history: readonly string[] = []
): string | undefined {
  if (!recorded) return undefined
  const { key } = m.definition
  const at = (version: string) => stored.get(`${key}@${version}`)
  for (const version of [recorded, ...history.filter((v) => v !== recorded)]) {
    const refusal = upgradeRefusal(at(version), m.definition, m.migrations, at)
    if (refusal)
      return `${refusal}${version === recorded ? '' : ` (records written under ${version}, a version this tenant was on, may still be stored)`}; the tenant stays on ${recorded} until a release it may move to is installed`
  }
  return undefined
}

/** A definition as its package exports it (without what the registry adds), as recorded. */
function exported(m: RegisteredModule): ModuleDefinition {
  const { packageName: _name, packagePath: _path, ...definition } = m.definition
  return definition
}

export async function syncTenants(pool: pg.Pool, config: AppConfig, registry: ModuleRegistry): Promise<string[]> {
  const created: string[] = []
  for (const [id, t] of Object.entries(config.tenants)) {
    for (const key of t.modules) {
      if (registry.get(key)) continue
      // Installed all the same (its records kept, its calls 503) so that fixing the package brings it back.
      logger.error('tenant module unavailable', { tenantId: id, module: key, reason: unavailableReason(registry, key) })
    }
  }
  await systemScope('tenants.sync', () =>
    transaction(pool, async (client) => {
      // One writer at a time when several instances start together.
      await client.query('SELECT pg_advisory_xact_lock(7301)')
      const stored = await storedDefinitions(client)
      const { rows: installed } = await client.query<{
        tenant_id: string
        module_key: string
        module_version: string | null
        versions: string[]
      }>('SELECT tenant_id, module_key, module_version, versions FROM tenant_modules')
      const recorded = new Map(installed.map((r) => [`${r.tenant_id}/${r.module_key}`, r.module_version]))
      const history = new Map(installed.map((r) => [`${r.tenant_id}/${r.module_key}`, r.versions]))
      for (const [id, t] of Object.entries(config.tenants)) {
        const { rows } = await client.query(
          `INSERT INTO tenants (id, name) VALUES ($1, $2)
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, updated_at = now() WHERE tenants.name IS DISTINCT FROM excluded.name
         RETURNING (xmax = 0) AS inserted`,
          [id, t.name ?? id]
        )
        if (rows[0]?.inserted) created.push(id)
        for (const key of t.modules) {
          // A module whose package did not load keeps the version it had (NULL if it never loaded here), and so does
          // one the tenant may not move to (its calls answer 503 until a release it may move to is installed).
          const m = registry.get(key)
          const was = recorded.get(`${id}/${key}`)
          const refusal = m && refusalOf(stored, m, was, history.get(`${id}/${key}`))
          if (refusal) logger.error('module upgrade refused', { tenantId: id, module: key, reason: refusal })
          // The definition of each version a tenant moves to (or stays on), kept as it was then: what the next version is
          // compared with. Only versions tenants are on are kept, so a package corrected before any tenant used it
          // replaces its definition.
          else if (m && !stored.has(`${key}@${m.definition.version}`)) {
            await client.query(
              'INSERT INTO module_definitions (module_key, version, definition) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
              [key, m.definition.version, JSON.stringify(exported(m))]
            )
          }
          // The version it moves to joins those it has been on (its records may be under any of them).
          await client.query(
            `INSERT INTO tenant_modules (tenant_id, module_key, module_version, versions)
             VALUES ($1, $2, $3, CASE WHEN $3::text IS NULL THEN '{}' ELSE ARRAY[$3::text] END)
           ON CONFLICT (tenant_id, module_key) DO UPDATE
             SET module_version = coalesce(excluded.module_version, tenant_modules.module_version), installed = true, uninstalled_at = NULL,
                 versions = CASE WHEN excluded.module_version IS NULL OR excluded.module_version = ANY(tenant_modules.versions)
                                 THEN tenant_modules.versions ELSE tenant_modules.versions || excluded.module_version END`,
            [id, key, refusal ? null : (m?.definition.version ?? null)]
          )
        }
        await client.query(
          `UPDATE tenant_modules SET installed = false, uninstalled_at = now() WHERE tenant_id = $1 AND installed AND NOT (module_key = ANY($2))`,
          [id, t.modules]
        )
      }
      // Delivered at commit: the running instances reload what this sync installed or removed.
      await client.query(`SELECT pg_notify($1, '')`, [tenantsChannel])
    })
  )
  return created
}

/**
 * Takes `versions` off the versions a tenant was on for a module once no live record of it is stored under them (a
 * migration run that moved them all): an upgrade is no longer held to them. The current version stays.
 */
export async function forgetVersions(db: Queryable, tenantId: string, moduleKey: string, versions: readonly string[]) {
  await db.query(
    `UPDATE tenant_modules SET versions = ARRAY(SELECT v FROM unnest(versions) v WHERE v = module_version OR NOT v = ANY($3::text[]))
      WHERE tenant_id = $1 AND module_key = $2`,
    [tenantId, moduleKey, versions]
  )
}
