import { checkRelease, type BreakingChange } from '../diff.ts'
import { samplePayload } from '../derive/sample.ts'
import { moveRecord, refusalOf, type MoveTarget } from '../migrate.ts'
import type { MigratingRecord, ModuleMigration } from '../types.ts'
import type { CheckResult } from './kit.ts'

/**
 * The conformance kit's upgrade check (`records module check <new> --previous <old>`): whether the release from the
 * previous published version is accepted (core/modules/diff.ts checkRelease, with the new package's migrations), then
 * sample records of the old version moved to the new one in memory with the rule the records plugin applies to stored
 * records (core/modules/migrate.ts moveRecord): each must come out as a record the new version accepts. No database:
 * what the migrations do to a record is a function of the record.
 */

/** Stand-ins for references and users in sample records (the payload validator checks their form, not that they exist). */
const sampleIds = {
  userId: '00000000-0000-4000-8000-000000000001',
  placeholderId: '00000000-0000-4000-8000-000000000002'
}

/** A sample record of a version: its name, and the record. */
interface Sample {
  name: string
  record: MigratingRecord
}

/** Minimal and full payloads (core/modules/derive/sample.ts), one of each per state of `old`'s workflow. */
export function upgradeSamples(old: MoveTarget): Sample[] {
  const ctx = { recordIds: {}, ...sampleIds }
  const payloads = {
    minimal: samplePayload(old.definition.fields, ctx, false),
    full: samplePayload(old.definition.fields, ctx, true)
  }
  return old.definition.workflow.states.flatMap((s) =>
    Object.entries(payloads).map(([kind, payload]) => ({
      name: `a ${kind} record of ${old.definition.version} in state "${s.key}"`,
      record: { payload: structuredClone(payload), state: s.key }
    }))
  )
}

const changeText = (b: BreakingChange) => `${b.at}: ${b.change}`

/** The chain of migrations a release runs, as `^1.0.0 → 2.0.0, ^2.0.0 → 3.0.0` (or `none`). */
export function chainText(chain: readonly ModuleMigration[] | undefined): string {
  return chain?.length
    ? chain.map((m) => `${m.from} → ${m.to}${m.transform ? ' (with a transform)' : ''}`).join(', ')
    : 'none'
}

/**
 * The upgrade from `old` to `next` as checks: the release (refused: a FAIL with the reason, and one per breaking change
 * the migrations leave unanswered), then, for an accepted release, one check per sample record of `old` (a FAIL names
 * the sample and why the new version refuses it as the migrations leave it).
 */
export function upgradeChecks(
  old: MoveTarget,
  next: MoveTarget & { migrations: readonly ModuleMigration[] }
): CheckResult[] {
  const [from, to] = [old.definition.version, next.definition.version]
  const release = checkRelease(old.definition, next.definition, next.migrations)
  const results: CheckResult[] = []
  const name = `the release ${from} → ${to} is accepted`
  if (release.refused) {
    results.push({ name, ok: false, detail: release.refused })
    for (const b of release.unanswered)
      results.push({ name: `a migration answers ${changeText(b)}`, ok: false, detail: 'no step or transform does' })
    return results
  }
  results.push({
    name,
    ok: true,
    detail: release.breaking.length
      ? `${release.breaking.length} breaking change(s), answered by the migrations ${chainText(release.migrations)}`
      : `${release.compatible.length} compatible change(s), no migration needed`
  })
  for (const sample of upgradeSamples(old)) {
    const check = `${sample.name} moves to ${to} and is valid`
    // A sample its own version refuses (a required pattern field has no example value) says nothing of the upgrade.
    const own = refusalOf(old, sample.record)
    if (own) {
      results.push({ name: check, ok: true, detail: `skipped: ${from} itself refuses the sample (${own})` })
      continue
    }
    const move = moveRecord(next, from, sample.record)
    // No migration applies (a compatible release): the record keeps its payload, which the new version must accept.
    const refusal = move.refusal ?? (move.migrated ? undefined : refusalOf(next, move.record))
    results.push(
      refusal
        ? { name: check, ok: false, detail: refusal }
        : { name: check, ok: true, detail: move.migrated ? 'moved by the migrations' : 'kept as it is' }
    )
  }
  return results
}
