import { loadPackageAt } from '../../core/cli/modules.ts'
import type { Queryable } from '../../core/db/index.ts'
import { moveRecord, refusalOf } from '../../core/modules/migrate.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { CliCommand, CliContext } from '../../core/plugin.ts'
import { everyMigrationRefusal, migrationRuns } from './records.migrate.ts'
import type { RecordRow } from './records.repository.ts'

/**
 * Module migrations for operators on the command line (records.migrate.ts runs them):
 * - `records module migrations --tenant ID [--module KEY]`: each run's progress and every record it refused;
 * - `records module dry-run --tenant ID --module KEY [--package DIR|TGZ]`: every record the target version would
 *   refuse, before (or while) it is installed, writing nothing.
 * Both read a page at a time, so a tenant with millions of records costs one page of memory.
 */

/** Records the dry run reads per query (keyset by seq): its memory is one page, however many records there are. */
export const dryRunPage = 1000

/** What a dry run found: records read, how many would move, stay as stored, or be refused. */
export interface DryRunSummary {
  read: number
  move: number
  kept: number
  refuse: number
}

/**
 * The dry run of a move to `target` (a version of the module, loaded or given as a package): every live record of the
 * tenant's module not under its version, read page by page in list order and moved in memory with the rule the job
 * applies (core's moveRecord); `onRefused` hears of each record the target would refuse, with why. A record no
 * migration applies to is judged as stored (its next write is checked against the target). Writes nothing.
 */
export async function dryRunMove(
  db: Queryable,
  tenantId: string,
  target: RegisteredModule,
  onRefused: (r: { id: string; number: string; fromVersion: string; reason: string }) => void
): Promise<DryRunSummary> {
  const summary: DryRunSummary = { read: 0, move: 0, kept: 0, refuse: 0 }
  const { key, version } = target.definition
  for (let after = '0'; ;) {
    const { rows } = await db.query<
      Pick<RecordRow, 'id' | 'number' | 'module_version' | 'state' | 'payload'> & { after: string }
    >(
      // By the table's seq (\`r.seq\`): the bare name would sort the text the query returns.
      `SELECT r.id, r.number, r.module_version, r.state, r.payload, r.seq::text AS after FROM records r
        WHERE r.tenant_id = $1 AND r.module_key = $2 AND r.deleted_at IS NULL AND r.module_version <> $3 AND r.seq > $4
        ORDER BY r.seq LIMIT $5`,
      [tenantId, key, version, after, dryRunPage]
    )
    for (const r of rows) {
      summary.read++
      const move = moveRecord(target, r.module_version, { payload: r.payload, state: r.state })
      const asStored = move.migrated || move.refusal ? undefined : refusalOf(target, move.record)
      const reason =
        move.refusal ??
        (asStored && `no migration from ${r.module_version} applies and ${version} refuses it as stored: ${asStored}`)
      if (reason) {
        summary.refuse++
        onRefused({ id: r.id, number: r.number, fromVersion: r.module_version, reason })
      } else if (move.migrated) summary.move++
      else summary.kept++
    }
    if (rows.length < dryRunPage) return summary
    after = rows[rows.length - 1].after
  }
}

/** The version a dry run moves to: the package given, else the loaded package of the tenant's module. */
async function dryRunTarget(c: CliContext, tenantId: string, key: string): Promise<RegisteredModule> {
  const tenant = c.platform.tenants.get(tenantId)!
  if (!tenant.modules.has(key) && !tenant.unavailable.has(key))
    c.fail(`module "${key}" is not installed for tenant ${tenantId} (see: records tenant list)`)
  const pkg = c.values.package
  if (pkg === undefined) {
    const loaded = c.platform.registry.get(key)
    if (!loaded) throw new Error(`no loaded package provides module "${key}": give the new one with --package`)
    return loaded
  }
  if (typeof pkg !== 'string' || !pkg) c.fail('--package takes a module package folder or a .tgz made by npm pack')
  // Loaded as `records module check` loads it: staged under node_modules, beside the configured modules.
  const { name, module, refused } = await loadPackageAt({ fail: c.fail, modules: c.platform.config.modules }, pkg)
  if (!module) throw new Error(`${pkg}: ${name} is refused: ${refused?.where}: ${refused?.problem}`)
  if (module.definition.key !== key) c.fail(`${pkg} provides module "${module.definition.key}", not "${key}"`)
  return module
}

/** `records module migrations` and `records module dry-run` (the records plugin's CLI, core/plugin.ts CliCommand). */
export const migrationCli: CliCommand[] = [
  {
    area: 'module',
    action: 'migrations',
    async run(c) {
      const tenantId = c.tenant()
      const key = typeof c.values.module === 'string' ? c.values.module : undefined
      const pool = c.platform.db.pool
      const runs = await migrationRuns(pool, tenantId, key)
      if (!runs.length) c.out(`No module migration has run for tenant ${tenantId}${key ? `, module ${key}` : ''}.`)
      for (const run of runs) {
        c.out(
          `${run.moduleKey}\tto ${run.toVersion}\t${run.state}\ttotal ${run.total}\tmigrated ${run.migrated}\trefused ${run.refused}\tremaining ${run.remaining}\tstarted ${run.startedAt}\tfinished ${run.finishedAt ?? '-'}`
        )
        for await (const r of everyMigrationRefusal(pool, tenantId, run.moduleKey, run.toVersion))
          c.out(`  refused ${r.number}\t${r.recordId}\tfrom ${r.fromVersion}: ${r.reason}`)
      }
    }
  },
  {
    area: 'module',
    action: 'dry-run',
    async run(c) {
      const tenantId = c.tenant()
      const key = c.required('module')
      const target = await dryRunTarget(c, tenantId, key)
      const { version } = target.definition
      c.out(`Dry run of tenant ${tenantId}'s ${key} records to ${version} (nothing is written):`)
      const s = await dryRunMove(c.platform.db.pool, tenantId, target, (r) =>
        c.out(`  REFUSED ${r.number}\t${r.id}\tfrom ${r.fromVersion}: ${r.reason}`)
      )
      c.out(
        `${s.read} record(s) read not under ${version}: ${s.move} would move, ${s.kept} would stay as stored, ${s.refuse} would be refused`
      )
      if (s.refuse) throw new Error(`${s.refuse} record(s) of ${key} would be refused by ${version}`)
    }
  }
]
