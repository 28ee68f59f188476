import { isDeepStrictEqual } from 'node:util'
import semver from 'semver'
import type { BreakingChange } from './diff.ts'
import type { RegisteredModule } from './registry.ts'
import type { FieldDefinition, MigratingRecord, MigrationStep, ModuleDefinition, ModuleMigration } from './types.ts'
import { compileData, validationProblems } from '../validation.ts'
import { fieldToSchema } from './derive/json-schema.ts'
import { isObject, ModuleDefinitionError } from './validate.ts'

/**
 * Module migrations (a package's `migrations` export, declared with the SDK's defineMigrations): how records stored
 * under an older version of a module move to the loaded one. Here: their check at load, the chain that takes a record
 * from its version to the loaded one, applying it to one record, the move of one record with the new version's verdict
 * on it (`moveRecord`, `refusalOf`), and which breaking changes a chain answers. Where they run (reads, writes, the
 * background job, the dry run) is the records plugin's (records.migrate.ts); `records module check --previous` moves
 * sample records with the same functions. docs/modules.md, "Upgrading a module", is the author's guide.
 */

const stepMembers: Record<MigrationStep['op'], readonly string[]> = {
  renameField: ['from', 'to'],
  removeField: ['field'],
  mapChoice: ['field', 'values'],
  setDefault: ['field', 'value'],
  renameState: ['from', 'to']
}
const migrationMembers = new Set(['from', 'to', 'steps', 'transform'])

/** The field at `path` (`key`, or `group.member`) of a definition, if any. */
export function fieldAt(fields: readonly FieldDefinition[], path: string): FieldDefinition | undefined {
  const [head, member] = path.split('.', 2)
  const f = fields.find((x) => x.key === head)
  if (member === undefined || !f) return f
  return f.type === 'group' ? f.fields.find((x) => x.key === member) : undefined
}

/**
 * Checks a package's migrations against the definition it ships with: each has a range `from`, a version `to` no later
 * than the definition's, known steps with their members, and an optional function `transform`. A migration that ends at
 * the definition's version may only name what that version has: the field a rename or a default targets, the options a
 * choice is mapped to, the state a rename targets. An error names the migration and the member.
 */
export function validateMigrations(value: unknown, def: ModuleDefinition, packageName: string): ModuleMigration[] {
  if (value === undefined) return []
  const fail = (where: string, problem: string): never => {
    throw new ModuleDefinitionError(packageName, where, problem)
  }
  if (!Array.isArray(value)) return fail('migrations', 'must be an array (defineMigrations([...]))')
  value.forEach((m: unknown, i) => {
    const at = `migrations[${i}]`
    if (!isObject(m)) return fail(at, 'must be an object with from, to and steps or transform')
    for (const k of Object.keys(m)) if (!migrationMembers.has(k)) fail(`${at}.${k}`, 'is not a member of a migration')
    if (typeof m.from !== 'string' || !semver.validRange(m.from))
      fail(`${at}.from`, 'must be a semantic version range, e.g. "^1.0.0"')
    if (typeof m.to !== 'string' || !semver.valid(m.to)) fail(`${at}.to`, 'must be a semantic version, e.g. "2.0.0"')
    const [from, to] = [m.from as string, m.to as string]
    if (semver.gt(to, def.version)) fail(`${at}.to`, `${to} is later than the module's version ${def.version}`)
    if (semver.satisfies(to, from)) fail(at, `its range "${from}" includes its own target ${to}`)
    if (m.transform !== undefined && typeof m.transform !== 'function')
      fail(`${at}.transform`, 'must be a function (record) => record')
    if (m.steps === undefined && m.transform === undefined) fail(at, 'needs steps, a transform or both')
    if (m.steps !== undefined && !Array.isArray(m.steps)) fail(`${at}.steps`, 'must be an array')
    const final = semver.eq(to, def.version)
    ;((m.steps ?? []) as unknown[]).forEach((s, j) => checkStep(s, `${at}.steps[${j}]`, final ? def : undefined, fail))
  })
  return value as ModuleMigration[]
}

function checkStep(
  s: unknown,
  at: string,
  target: ModuleDefinition | undefined,
  fail: (where: string, problem: string) => never
) {
  if (!isObject(s) || typeof s.op !== 'string' || !(s.op in stepMembers))
    return fail(`${at}.op`, `must be one of ${Object.keys(stepMembers).join(', ')}`)
  const members = stepMembers[s.op as MigrationStep['op']]
  for (const k of Object.keys(s))
    if (k !== 'op' && !members.includes(k)) fail(`${at}.${k}`, `is not a member of ${s.op}`)
  for (const k of members) {
    if (k === 'value') {
      if (!('value' in s) || s.value === undefined || s.value === null) fail(`${at}.value`, 'must be a value')
    } else if (k === 'values') {
      if (!isObject(s.values) || Object.values(s.values).some((v) => typeof v !== 'string'))
        fail(`${at}.values`, 'must map old choice values to new ones (strings)')
    } else if (typeof s[k] !== 'string' || !s[k]) fail(`${at}.${k}`, 'must be a non-empty string')
  }
  if (!target) return
  const step = s as MigrationStep
  const needField = (path: string, member: string) => {
    if (!fieldAt(target.fields, path)) fail(`${at}.${member}`, `"${path}" is not a field of version ${target.version}`)
  }
  if (step.op === 'renameField') {
    needField(step.to, 'to')
    const level = (p: string) => (p.includes('.') ? p.slice(0, p.indexOf('.')) : '')
    if (level(step.from) !== level(step.to))
      fail(`${at}.to`, `"${step.from}" → "${step.to}": a field moves within its level (top level, or one group)`)
  }
  if (step.op === 'setDefault') {
    needField(step.field, 'field')
    const problem = defaultProblem(fieldAt(target.fields, step.field)!, step.value)
    if (problem) fail(`${at}.value`, problem)
  }
  if (step.op === 'mapChoice') {
    needField(step.field, 'field')
    const f = fieldAt(target.fields, step.field)!
    if (!('options' in f)) return fail(`${at}.field`, `"${step.field}" is not a choice field`)
    const options = new Set(f.options.map((o) => (typeof o === 'string' ? o : o.value)))
    for (const v of Object.values<string>(step.values))
      if (!options.has(v)) fail(`${at}.values`, `"${v}" is not an option of "${step.field}"`)
  }
  if (step.op === 'renameState' && !target.workflow.states.some((x) => x.key === step.to))
    fail(`${at}.to`, `"${step.to}" is not a state of version ${target.version}`)
}

/** Why `value` cannot be the value of field `f`, by the field's own schema (the payload's, derive/json-schema.ts), or undefined. */
function defaultProblem(f: FieldDefinition, value: unknown): string | undefined {
  const found = validationProblems(compileData(fieldToSchema[f.type](f as never)), value)
  return found && `is not a value of "${f.key}": ${found.list.map((p) => p.detail).join('; ')}`
}

/**
 * The migrations that take a record at `from` to `target`, in order: each step the one whose range accepts the version
 * reached so far with the nearest target (so that each runs in turn when ranges overlap), never past `target`. Empty
 * when none applies (the versions between differ only compatibly, or `from` is not a version).
 */
export function migrationChain(
  migrations: readonly ModuleMigration[],
  from: string,
  target: string
): ModuleMigration[] {
  const chain: ModuleMigration[] = []
  let at = semver.valid(from)
  while (at && chain.length < migrations.length) {
    const v = at
    const next = migrations
      .filter((m) => semver.satisfies(v, m.from, { includePrerelease: true }) && semver.gt(m.to, v))
      .filter((m) => semver.lte(m.to, target))
      .sort((a, b) => semver.compare(a.to, b.to))[0]
    if (!next) break
    chain.push(next)
    at = next.to
  }
  return chain
}

/** Applies `fn` to the container(s) of a field path: the payload for `key`, each item of the group for `group.member`. */
function atPath(
  payload: Record<string, unknown>,
  path: string,
  fn: (holder: Record<string, unknown>, key: string) => void
) {
  const dot = path.indexOf('.')
  if (dot < 0) return fn(payload, path)
  const items = payload[path.slice(0, dot)]
  if (Array.isArray(items)) for (const item of items) if (isObject(item)) fn(item, path.slice(dot + 1))
}

/** Moves `holder[from]` to `holder[to]`; a record already holding another value at `to` is refused, not overwritten. */
function moveValue(holder: Record<string, unknown>, from: string, to: string) {
  const there = holder[to]
  if (there !== undefined && there !== null && !isDeepStrictEqual(there, holder[from]))
    throw new Error(`renameField ${from} → ${to}: the record already holds another value in "${to}"`)
  holder[to] = holder[from]
  delete holder[from]
}

function applyStep(r: MigratingRecord, s: MigrationStep) {
  switch (s.op) {
    case 'renameField': {
      const dot = s.from.indexOf('.')
      const sameGroup = dot >= 0 && s.to.startsWith(s.from.slice(0, dot + 1))
      if (dot < 0 && !s.to.includes('.')) {
        if (Object.hasOwn(r.payload, s.from)) {
          moveValue(r.payload, s.from, s.to)
        }
      } else if (sameGroup)
        atPath(r.payload, s.from, (item, key) => {
          if (Object.hasOwn(item, key)) moveValue(item, key, s.to.slice(dot + 1))
        })
      else throw new Error(`renameField ${s.from} → ${s.to}: a field moves within its level (top level, or one group)`)
      return
    }
    case 'removeField':
      return atPath(r.payload, s.field, (holder, key) => {
        delete holder[key]
      })
    case 'mapChoice':
      return atPath(r.payload, s.field, (holder, key) => {
        const v = holder[key]
        const map = (x: unknown) => (typeof x === 'string' && Object.hasOwn(s.values, x) ? s.values[x] : x)
        if (Array.isArray(v)) holder[key] = [...new Set(v.map(map))]
        else if (v !== undefined) holder[key] = map(v)
      })
    case 'setDefault':
      return atPath(r.payload, s.field, (holder, key) => {
        if (holder[key] === undefined || holder[key] === null) holder[key] = structuredClone(s.value)
      })
    case 'renameState':
      if (r.state === s.from) r.state = s.to
  }
}

/**
 * A record as it is after `chain`: steps in order, then each migration's transform. Never changes its argument. A throw
 * (a transform's, or a transform returning no record) means the record cannot move: the caller refuses it.
 */
export function applyMigrations(chain: readonly ModuleMigration[], record: MigratingRecord): MigratingRecord {
  let r: MigratingRecord = { payload: structuredClone(record.payload), state: record.state }
  for (const m of chain) {
    for (const s of m.steps ?? []) applyStep(r, s)
    if (m.transform) {
      const out = m.transform(r)
      if (!isObject(out) || !isObject(out.payload) || typeof out.state !== 'string')
        throw new Error(`the transform of ${m.from} → ${m.to} did not return a record ({ payload, state })`)
      // A copy: a transform may return objects it shares (a module-level default) that later steps would change.
      r = { payload: structuredClone(out.payload), state: out.state }
    }
  }
  return r
}

/**
 * What a chain's steps alone make of a record (no transform; a step that cannot apply is passed by): how a record
 * whose migration failed is shown and handed to a writer, fields and states renamed as far as they can be, so that a
 * write can make it valid.
 */
export function applySteps(chain: readonly ModuleMigration[], record: MigratingRecord): MigratingRecord {
  const r: MigratingRecord = { payload: structuredClone(record.payload), state: record.state }
  for (const m of chain)
    for (const s of m.steps ?? []) {
      try {
        applyStep(r, s)
      } catch {
        // A rename onto a field holding another value: left as it is.
      }
    }
  return r
}

/**
 * Whether a chain answers a breaking change: the last migration's transform answers anything (the author says so); otherwise a removed
 * field needs a rename or removal of it, a field made (or added) required a default, a removed option a mapping of it,
 * a removed state a rename of it. A removed transition leaves records as they are (its activity keeps its key). A
 * changed type, narrowed limit, new pattern or changed reference needs a transform.
 */
export function answers(chain: readonly ModuleMigration[], b: BreakingChange): boolean {
  if (b.subject.kind === 'transition') return true
  // The last migration's transform ends at the loaded version: it answers what is left. An earlier one only knew the
  // version it ended at, not changes made after it.
  if (chain.at(-1)?.transform) return true
  const steps = chain.flatMap((m) => m.steps ?? [])
  const s = b.subject
  switch (s.kind) {
    case 'field':
      // Any migration answers a changed formula: every record it moves is computed afresh.
      if (b.change.startsWith('computed ')) return chain.length > 0
      if (b.change.startsWith('removed'))
        return steps.some(
          (x) => (x.op === 'renameField' && x.from === s.path) || (x.op === 'removeField' && x.field === s.path)
        )
      if (b.change === 'made required' || b.change === 'added as required')
        return steps.some((x) => x.op === 'setDefault' && x.field === s.path)
      if (s.option !== undefined)
        return steps.some((x) => x.op === 'mapChoice' && x.field === s.path && Object.hasOwn(x.values, s.option!))
      return false
    case 'state':
      return steps.some((x) => x.op === 'renameState' && x.from === s.key)
    default:
      return false
  }
}

/** What a version of a module needs to judge a record: its version, states, payload validator and migrations. */
export type MoveTarget = Pick<
  RegisteredModule,
  'definition' | 'states' | 'validatePayload' | 'migrateFrom' | 'migrations'
>

/** Why `target` refuses a record (as a migration left it, or as stored), or undefined when it accepts it. */
export function refusalOf(target: MoveTarget, record: MigratingRecord): string | undefined {
  const problems: string[] = []
  if (!target.states.has(record.state))
    problems.push(`state "${record.state}" is not a state of version ${target.definition.version}`)
  // Worded as a create's 400 words them (core/validation.ts), bounded as it is.
  const found = validationProblems(target.validatePayload, record.payload, '/payload')
  for (const p of found?.list ?? []) problems.push(`${p.field} ${p.detail}`)
  return problems.length ? problems.join('; ') : undefined
}

/** The outcome of moving one record to a version: where it ends up, and whether that version takes it. */
export interface RecordMove {
  /** The record after the migration chain (the record itself when none applies). */
  record: MigratingRecord
  /** Whether a migration applied (false: the versions differ only compatibly, or the record is at the version). */
  migrated: boolean
  /** Why the version refuses the moved record (a migration that threw, or what it left invalid). */
  refusal?: string
}

/**
 * The move of one record stored under `fromVersion` to `target` (pure: nothing is written), the one rule the records
 * plugin (reads, writes, the job, the dry run) and `records module check --previous` apply: the migration chain, then
 * the target's verdict on what it made. A record no migration applies to is not judged here (it is stored under its
 * own version until its next write, which the target checks): callers that must know call `refusalOf` on it.
 */
export function moveRecord(target: MoveTarget, fromVersion: string, record: MigratingRecord): RecordMove {
  if (fromVersion === target.definition.version) return { record, migrated: false }
  let moved
  try {
    moved = target.migrateFrom(fromVersion, record)
  } catch (err) {
    // Refused, and shown as its steps leave it (fields and states renamed) for a write to correct.
    const steps = applySteps(migrationChain(target.migrations, fromVersion, target.definition.version), record)
    return { record: steps, migrated: true, refusal: `the migration refused it: ${(err as Error).message}` }
  }
  if (!moved) return { record, migrated: false }
  return { record: moved, migrated: true, refusal: refusalOf(target, moved) }
}
