import { isDeepStrictEqual } from 'node:util'
import semver from 'semver'
import { answers, migrationChain } from './migrate.ts'
import type { FieldDefinition, ModuleDefinition, ModuleMigration } from './types.ts'

/** One difference between two versions of a module definition that records stored under the old one may break. */
export interface BreakingChange {
  /** Where: `field "site"`, `field "items.label"`, `workflow state "closed"`, `numberPattern`. */
  at: string
  /** What changed, e.g. `removed`, `type text → number`, `option "low" removed`, `maxLength 200 → 100`. */
  change: string
  /** What it is about, for a migration's steps to answer (core/modules/migrate.ts `answers`). */
  subject:
    | { kind: 'field'; path: string; option?: string }
    | { kind: 'state'; key: string }
    | { kind: 'transition'; key: string }
}

/** The verdict on a release: its breaking changes and whether its version may carry them. */
export interface ReleaseCheck {
  breaking: BreakingChange[]
  compatible: string[]
  /** The migrations that take records from the old version to the new (when there are breaking changes). */
  migrations?: ModuleMigration[]
  /** Breaking changes those migrations do not answer. */
  unanswered: BreakingChange[]
  /** Why the release is refused (a downgrade, the same version changed, breaking changes without a new major), else undefined. */
  refused?: string
}

const optionValues = (f: FieldDefinition) =>
  'options' in f ? f.options.map((o) => (typeof o === 'string' ? o : o.value)) : []

/** Bounds where a smaller new value refuses stored values (upper) or a larger one does (lower). */
const upperBounds = ['maxLength', 'maximum', 'maxItems'] as const
const lowerBounds = ['minimum', 'minItems'] as const

function compareFields(
  before: readonly FieldDefinition[],
  after: readonly FieldDefinition[],
  prefix: string,
  out: ReleaseCheck
) {
  const next = new Map(after.map((f) => [f.key, f]))
  for (const old of before) {
    const at = `field "${prefix}${old.key}"`
    const subject = { kind: 'field' as const, path: `${prefix}${old.key}` }
    const now = next.get(old.key)
    if (!now) {
      out.breaking.push({ at, subject, change: 'removed (a rename is a removal and an addition)' })
      continue
    }
    if (now.type !== old.type) {
      out.breaking.push({ at, subject, change: `type ${old.type} → ${now.type}` })
      continue
    }
    if (now.required && !old.required) out.breaking.push({ at, subject, change: 'made required' })
    const kept = new Set(optionValues(now))
    for (const v of optionValues(old))
      if (!kept.has(v)) out.breaking.push({ at, subject: { ...subject, option: v }, change: `option "${v}" removed` })
    for (const v of optionValues(now))
      if (!optionValues(old).includes(v)) out.compatible.push(`${at}: option "${v}" added`)
    const bound = (f: FieldDefinition, b: (typeof upperBounds)[number] | (typeof lowerBounds)[number]) => {
      const v = (f as unknown as Record<string, unknown>)[b]
      return typeof v === 'number' ? v : undefined
    }
    for (const b of [...upperBounds, ...lowerBounds]) {
      const [was, is] = [bound(old, b), bound(now, b)]
      if (is === undefined) continue
      const upper = (upperBounds as readonly string[]).includes(b)
      if (was === undefined || (upper ? is < was : is > was))
        out.breaking.push({ at, subject, change: `${b} ${was ?? 'none'} → ${is}` })
    }
    if (old.type === 'text' && now.type === 'text' && now.pattern && now.pattern !== old.pattern)
      out.breaking.push({ at, subject, change: `pattern ${old.pattern ?? 'none'} → ${now.pattern}` })
    // Stored values follow the old formula: a migration computes them afresh (core/modules/registry.ts migrator).
    const formula = (f: FieldDefinition) => (f as { computed?: string }).computed
    if (formula(now) !== undefined && formula(now) !== formula(old))
      out.breaking.push({ at, subject, change: `computed ${formula(old) ?? 'none'} → ${formula(now)}` })
    const defaultOf = (f: FieldDefinition) => (f as { default?: unknown }).default
    if (!isDeepStrictEqual(defaultOf(old), defaultOf(now)))
      out.compatible.push(
        `${at}: default ${JSON.stringify(defaultOf(old) ?? null)} → ${JSON.stringify(defaultOf(now) ?? null)} (new records only)`
      )
    if (old.type === 'recordRef' && now.type === 'recordRef' && now.module !== old.module)
      out.breaking.push({ at, subject, change: `references ${old.module} → ${now.module}` })
    if (old.type === 'group' && now.type === 'group') compareFields(old.fields, now.fields, `${old.key}.`, out)
  }
  const known = new Set(before.map((f) => f.key))
  for (const f of after) {
    if (known.has(f.key)) continue
    if (f.required)
      out.breaking.push({
        at: `field "${prefix}${f.key}"`,
        subject: { kind: 'field', path: `${prefix}${f.key}` },
        change: 'added as required'
      })
    else if ((f as { computed?: string }).computed !== undefined)
      out.breaking.push({
        at: `field "${prefix}${f.key}"`,
        subject: { kind: 'field', path: `${prefix}${f.key}` },
        change: `computed none → ${(f as { computed?: string }).computed} (added)`
      })
    else out.compatible.push(`field "${prefix}${f.key}" added`)
  }
}

/**
 * What a new version of a module changes for records stored under the old one. Breaking: a field removed,
 * renamed, retyped or made required (or a required one added), a choice removed, a limit narrowed or a pattern
 * added, a state removed (records in it would be stranded), a transition removed; compatible: optional fields,
 * choices, states and transitions added, limits widened. A breaking change needs a new major version and a
 * migration the new package declares (`migrations`, core/modules/migrate.ts) that answers it; a downgrade, or a
 * changed definition under the same version, is refused.
 */
export function checkRelease(
  before: ModuleDefinition,
  after: ModuleDefinition,
  migrations: readonly ModuleMigration[] = []
): ReleaseCheck {
  const out: ReleaseCheck = { breaking: [], compatible: [], unanswered: [] }
  if (before.key !== after.key) {
    out.refused = `the module key changed (${before.key} → ${after.key}): that is another module`
    return out
  }
  compareFields(before.fields, after.fields, '', out)
  const states = new Set(after.workflow.states.map((s) => s.key))
  for (const s of before.workflow.states)
    if (!states.has(s.key))
      out.breaking.push({ at: `workflow state "${s.key}"`, subject: { kind: 'state', key: s.key }, change: 'removed' })
  for (const s of after.workflow.states)
    if (!before.workflow.states.some((o) => o.key === s.key)) out.compatible.push(`workflow state "${s.key}" added`)
  const transitions = new Set(after.workflow.transitions.map((t) => t.key))
  for (const t of before.workflow.transitions)
    if (!transitions.has(t.key))
      out.breaking.push({
        at: `workflow transition "${t.key}"`,
        subject: { kind: 'transition', key: t.key },
        change: 'removed'
      })
  if (after.workflow.initial !== before.workflow.initial)
    out.compatible.push(`initial state ${before.workflow.initial} → ${after.workflow.initial} (new records only)`)
  // A rule judges later writes only: stored records are not checked again (docs/modules.md, "Rules").
  if (!isDeepStrictEqual(before.rules ?? [], after.rules ?? []))
    out.compatible.push('rules changed (later writes only)')
  if (after.numberPattern !== before.numberPattern)
    out.compatible.push(`numberPattern ${before.numberPattern} → ${after.numberPattern} (new records only)`)

  const from = semver.parse(before.version)
  const to = semver.parse(after.version)
  if (!from || !to) out.refused = 'both versions must be semantic versions'
  else if (semver.lt(to, from)) out.refused = `a downgrade (${before.version} → ${after.version})`
  else if (semver.eq(to, from)) {
    if (out.breaking.length || out.compatible.length)
      out.refused = `the definition changed but its version is still ${after.version}`
  } else if (out.breaking.length && to.major === from.major)
    out.refused = `${out.breaking.length} breaking change(s) need a new major version (${before.version} → ${from.major + 1}.0.0 or later)`
  if (out.refused || !out.breaking.length) return out
  out.migrations = migrationChain(migrations, before.version, after.version)
  out.unanswered = out.breaking.filter((b) => !answers(out.migrations!, b))
  if (!out.unanswered.length) return out
  if (!out.migrations.length)
    out.refused = `${out.breaking.length} breaking change(s) need a migration from ${before.version} declared in the package (migrations: from "^${from!.major}.0.0" to ${after.version})`
  else if (out.unanswered.length)
    out.refused = `the migrations from ${before.version} do not answer ${out.unanswered.length} breaking change(s): ${describe(out.unanswered)} (a step for each, or a transform)`
  return out
}

const describe = (changes: readonly BreakingChange[]) => changes.map((b) => `${b.at}: ${b.change}`).join('; ')

/**
 * Why records stored under `stored` may not move to `loaded`, or undefined when they may: a refused release (a
 * downgrade, a definition changed under the same version, breaking changes without a new major version or without
 * migrations that answer them). The migration chain is judged hop by hop where the definition each hop ends at is
 * known (`definitionAt`: the versions the deployment served), so a transform early in the chain answers the changes of
 * its own hop; the rest of the way is judged against the loaded definition. A version never recorded (a database from
 * before definitions were kept) is taken as it is.
 */
export function upgradeRefusal(
  stored: ModuleDefinition | undefined,
  loaded: ModuleDefinition,
  migrations: readonly ModuleMigration[] = [],
  definitionAt: (version: string) => ModuleDefinition | undefined = () => undefined
): string | undefined {
  if (!stored) return undefined
  let from = stored
  for (const hop of migrationChain(migrations, stored.version, loaded.version)) {
    const target = hop.to === loaded.version ? loaded : definitionAt(hop.to)
    if (!target) break
    const refusal = refusalText(from, target, checkRelease(from, target, [hop]))
    if (refusal) return refusal
    from = target
  }
  if (from === loaded) return undefined
  return refusalText(from, loaded, checkRelease(from, loaded, migrations))
}

function refusalText(from: ModuleDefinition, to: ModuleDefinition, r: ReleaseCheck): string | undefined {
  if (!r.refused) return undefined
  // A refusal for unanswered changes names them already.
  const changes = r.migrations?.length ? '' : describe(r.breaking)
  return `${to.key} ${from.version} → ${to.version} refused: ${r.refused}${changes ? ` (${changes})` : ''}`
}
