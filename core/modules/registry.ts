import { randomUUID } from 'node:crypto'
import { readdir, readFile, stat } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import semver from 'semver'
import type { TObject } from '@feathersjs/typebox'
import type { ValidateFunction } from 'ajv'
import { logger } from '../logger.ts'
import { projectRoot } from '../paths.ts'
import { compileData } from '../validation.ts'
import { optionValues, payloadSchema } from './derive/json-schema.ts'
import { compilePattern, type NumberPattern } from './record-number.ts'
import { compileFieldRules, plannedCreate, ruleProblems, withComputed, type FieldRules } from './field-rules.ts'
import { applyMigrations, migrationChain, validateMigrations } from './migrate.ts'
import type {
  FieldDefinition,
  LoadedModule,
  MigratingRecord,
  ModuleMigration,
  WorkflowState,
  WorkflowTransition
} from './types.ts'
import { ModuleDefinitionError, validateModuleDefinition } from './validate.ts'

/** The manifest key a module package carries in its package.json. */
export const manifestKey = 'records-module'
/** This platform's version, which a package's host range must accept. */
export const coreVersion: string = JSON.parse(await readFile(join(projectRoot, 'package.json'), 'utf8')).version

/** The package a module came from, as its package.json says (the catalogue shows it). */
export interface ModulePackage {
  name: string
  version?: string
  /** The platform versions it declares it fits (`records-module`.host). */
  host?: string
}

export interface RegisteredModule {
  definition: LoadedModule
  package: ModulePackage
  /** Cache key of everything derived from this module (validators, documents). */
  versionKey: string
  schema: TObject
  validatePayload: ValidateFunction
  numberPattern: NumberPattern
  fields: ReadonlyMap<string, FieldDefinition>
  /** Top-level fields with an access rule (field-level permissions). */
  restrictedFields: readonly FieldDefinition[]
  states: ReadonlyMap<string, WorkflowState>
  transitions: ReadonlyMap<string, WorkflowTransition>
  /** Per transition: the payload fields its guard needs (the target state's `requires` plus the transition's own). */
  guards: ReadonlyMap<string, readonly string[]>
  /** Its computed fields, defaults and rules, checked and parsed at load (core/modules/field-rules.ts). */
  fieldRules: FieldRules
  /** The migrations its package declares (core/modules/migrate.ts), checked against the definition. */
  migrations: readonly ModuleMigration[]
  /**
   * Keys its migrations renamed, by the key they became (top level), and keys they removed: older activity entries,
   * a migration's own entry and records not yet moved still name them, and field rules follow them (access.ts).
   */
  formerKeys: { renamed: ReadonlyMap<string, readonly string[]>; removed: readonly string[] }
  /**
   * A record stored under `version` as it is under this one (the migration chain between them applied), or undefined
   * when it is at this version or no migration applies. Throws when a migration refuses the record.
   */
  migrateFrom(version: string, record: MigratingRecord): MigratingRecord | undefined
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o)
    for (const v of Object.values(o)) deepFreeze(v)
  }
  return o
}

/**
 * A module package that did not load (its file, its definition, its host range, a module it
 * references): disabled alone, every other module serves. `key` is the module's when it is known
 * (from the definition, or `key` in the package's manifest for a file that cannot be loaded).
 */
export interface UnavailablePackage {
  packageName: string
  key?: string
  /** Where the problem is and what it is, as ModuleDefinitionError words them. */
  where: string
  problem: string
}

export class ModuleRegistry {
  private readonly modules = new Map<string, RegisteredModule>()
  /** The packages that did not load, in the order they were tried. */
  readonly unavailable: UnavailablePackage[] = []

  get(key: string): RegisteredModule | undefined {
    return this.modules.get(key)
  }

  all(): RegisteredModule[] {
    return [...this.modules.values()]
  }

  /** Validates, freezes and registers a definition; `packageName` is named in every error. */
  register(
    def: unknown,
    packageName: string,
    packagePath: string,
    info: Omit<ModulePackage, 'name'> = {},
    declaredMigrations?: unknown
  ): RegisteredModule {
    validateModuleDefinition(def, packageName)
    const migrations = Object.freeze(validateMigrations(declaredMigrations, def, packageName))
    if (this.modules.has(def.key)) {
      throw new ModuleDefinitionError(
        packageName,
        'key',
        `module "${def.key}" is already provided by ${this.modules.get(def.key)!.definition.packageName}`
      )
    }
    const definition = deepFreeze<LoadedModule>({ ...structuredClone(def), packageName, packagePath })
    const fieldRules = compileFieldRules(definition, (where, problem) => {
      throw new ModuleDefinitionError(packageName, where, problem)
    })
    const schema = payloadSchema(definition)
    let validatePayload: ValidateFunction
    try {
      validatePayload = compileData(schema)
    } catch (err) {
      throw new ModuleDefinitionError(
        packageName,
        'fields',
        `cannot compile the payload schema: ${(err as Error).message}`
      )
    }
    const refused = recurrenceRefusal(definition, validatePayload, fieldRules)
    if (refused) throw new ModuleDefinitionError(packageName, 'recurrence.payload', refused)
    const entry: RegisteredModule = {
      definition,
      package: { name: packageName, ...info },
      versionKey: `${definition.key}@${definition.version}`,
      schema,
      validatePayload,
      numberPattern: compilePattern(definition.numberPattern),
      fields: new Map(definition.fields.map((f) => [f.key, f])),
      restrictedFields: definition.fields.filter((f) => f.access),
      states: new Map(definition.workflow.states.map((s) => [s.key, s])),
      transitions: new Map(definition.workflow.transitions.map((t) => [t.key, t])),
      guards: new Map(
        definition.workflow.transitions.map((t) => {
          const target = definition.workflow.states.find((s) => s.key === t.to)
          return [t.key, Object.freeze([...new Set([...(target?.requires ?? []), ...(t.requires ?? [])])])]
        })
      ),
      fieldRules,
      migrations,
      formerKeys: formerKeysOf(migrations, new Set(definition.fields.map((f) => f.key))),
      migrateFrom: migrator(migrations, definition.version, fieldRules)
    }
    this.modules.set(definition.key, entry)
    return entry
  }

  /**
   * Disables a package: its problem is kept for operators; `registered`, the folder of a package whose module was
   * registered, takes that module out of the registry. By folder, not name: another version of the same package (the
   * one under `records module check`, a dry run's) may hold the key, and a copy refused beside it must not remove it.
   */
  disable(err: ModuleDefinitionError, key?: string, registered?: string) {
    if (key !== undefined && registered !== undefined && this.modules.get(key)?.definition.packagePath === registered)
      this.modules.delete(key)
    this.unavailable.push({ packageName: err.packageName, key, where: err.where, problem: err.problem })
  }

  /** Why no module `key` is here: the package that should have provided it, else undefined. */
  unavailableModule(key: string): UnavailablePackage | undefined {
    return this.modules.has(key) ? undefined : this.unavailable.find((u) => u.key === key)
  }

  /**
   * Cross-module checks, once every package is registered: a module whose record references name a
   * module no loaded package provides is disabled too, and so on until every reference resolves.
   */
  checkReferences() {
    for (let changed = true; changed;) {
      changed = false
      for (const m of [...this.modules.values()]) {
        const missing = missingReference(m.definition.fields, (key) => this.modules.has(key))
        if (!missing) continue
        this.disable(
          new ModuleDefinitionError(
            m.definition.packageName,
            `field "${missing.key}"`,
            `references module "${missing.module}", which no loaded package provides`
          ),
          m.definition.key,
          m.definition.packagePath
        )
        changed = true
      }
    }
  }
}

/**
 * The records a recurrence would make (its per field filled with each option, or a sample record id), as the write
 * rules of a create see them (plugins/records/records.rules.ts createRules: defaults, computed fields, the schema, the
 * rules on creates; core/modules/field-rules.ts plannedCreate), checked at load: a module whose own rules refuse its recurring records does not load. A rule
 * that reads today() is left to the job (its answer changes from day to day; a refusal is logged there, per series
 * and period); so is anything only the database knows. Returns the problem, naming the module and the rule, or
 * undefined.
 */
function recurrenceRefusal(d: LoadedModule, validatePayload: ValidateFunction, rules: FieldRules): string | undefined {
  const r = d.recurrence
  if (!r) return undefined
  const per = r.per ? d.fields.find((f) => f.key === r.per) : undefined
  const values = per?.type === 'singleChoice' ? optionValues(per) : ['00000000-0000-4000-8000-000000000000']
  for (const value of values) {
    const { refused, payload: sample } = plannedCreate(rules, { ...r.payload, ...(per ? { [per.key]: value } : {}) })
    const as = per?.type === 'singleChoice' ? ` (the series of ${per.key} ${JSON.stringify(value)})` : ''
    if (refused.length)
      return `the records it makes would be refused${as}: ${refused.map((p) => `${p.field} ${p.detail}`).join('; ')}`
    if (!validatePayload(sample))
      return `the records it makes would be refused by the module schema${as}: ${(validatePayload.errors ?? [])
        .slice(0, 3)
        .map((e) => `${e.instancePath || '/'} ${e.message}`)
        .join('; ')}`
    for (const [i, rule] of rules.rules.entries()) {
      if (rule.expr.readsToday) continue
      const one = { ...rules, rules: [rule] }
      if (ruleProblems(one, sample, { enters: d.workflow.initial }, '').length)
        return `the records module "${d.key}" makes would be refused by its rules[${i}]${as}, check ${JSON.stringify(rule.expr.source)} ("${rule.message}"): give the fields it reads a value in recurrence.payload or a default`
    }
  }
  return undefined
}

/**
 * RegisteredModule.formerKeys: the top-level renames and removals of the migrations, in version order, followed
 * through, less the keys the loaded version has fields of again.
 */
function formerKeysOf(
  migrations: readonly ModuleMigration[],
  live: ReadonlySet<string>
): RegisteredModule['formerKeys'] {
  const renamed = new Map<string, string[]>()
  const removed: string[] = []
  for (const m of [...migrations].sort((a, b) => semver.compare(a.to, b.to)))
    for (const step of m.steps ?? []) {
      if (step.op === 'renameField' && !step.from.includes('.')) {
        const olds = [step.from, ...(renamed.get(step.from) ?? [])]
        renamed.delete(step.from)
        renamed.set(step.to, [...(renamed.get(step.to) ?? []), ...olds])
      } else if (step.op === 'removeField' && !step.field.includes('.')) {
        removed.push(step.field, ...(renamed.get(step.field) ?? []))
        renamed.delete(step.field)
      }
    }
  // A key the loaded version uses again for a field of its own is that field's, with that field's rule.
  for (const [key, olds] of renamed)
    renamed.set(
      key,
      olds.filter((k) => !live.has(k))
    )
  return { renamed, removed: removed.filter((k) => !live.has(k)) }
}

/** RegisteredModule.migrateFrom: the chain from each stored version, worked out once. */
function migrator(migrations: readonly ModuleMigration[], version: string, rules: FieldRules) {
  const chains = new Map<string, ModuleMigration[]>()
  return (from: string, record: MigratingRecord): MigratingRecord | undefined => {
    if (from === version || !migrations.length) return undefined
    let chain = chains.get(from)
    if (!chain) chains.set(from, (chain = migrationChain(migrations, from, version)))
    if (!chain.length) return undefined
    // Computed fields are computed afresh under this version's formulas: a changed formula needs a migration (diff.ts).
    const moved = applyMigrations(chain, record)
    return { ...moved, payload: withComputed(rules, moved.payload) }
  }
}

/** The first record reference (groups included) to a module `has` does not know. */
function missingReference(
  fields: readonly FieldDefinition[],
  has: (key: string) => boolean
): { key: string; module: string } | undefined {
  for (const f of fields) {
    if (f.type === 'recordRef' && !has(f.module)) return { key: f.key, module: f.module }
    if (f.type === 'group') {
      const inner = missingReference(f.fields, has)
      if (inner) return inner
    }
  }
  return undefined
}

interface PackageJson {
  name?: string
  version?: string
  [manifestKey]?: { entry?: string; host?: string; key?: string }
}

/**
 * Loads one package into the registry; a package that does not load is disabled with its reason
 * (registry.unavailable) and logged, and the next one is tried.
 */
async function loadPackage(registry: ModuleRegistry, pkgDir: string) {
  let name = relative(projectRoot, pkgDir)
  let key: string | undefined
  try {
    let pkg: PackageJson
    try {
      pkg = JSON.parse(await readFile(join(pkgDir, 'package.json'), 'utf8'))
    } catch (err) {
      throw new ModuleDefinitionError(name, 'package.json', `cannot be read: ${(err as Error).message}`)
    }
    name = pkg.name ?? name
    key = typeof pkg[manifestKey]?.key === 'string' ? pkg[manifestKey].key : undefined
    const { definition, migrations } = await definitionOf(pkg, name, pkgDir)
    const given = (definition as { key?: unknown } | null)?.key
    if (typeof given === 'string') key = given
    registry.register(definition, name, pkgDir, { version: pkg.version, host: pkg[manifestKey]?.host }, migrations)
  } catch (err) {
    const e =
      err instanceof ModuleDefinitionError ? err : new ModuleDefinitionError(name, 'package', (err as Error).message)
    registry.disable(e, key)
    logger.error('module package disabled', { package: e.packageName, module: key, reason: e.message })
  }
}

/** The definition (default export) and migrations (`migrations`) a package exports, once its manifest and host range allow loading it. */
async function definitionOf(
  pkg: PackageJson,
  name: string,
  pkgDir: string
): Promise<{ definition: unknown; migrations: unknown }> {
  const manifest = pkg[manifestKey]
  if (!manifest || typeof manifest.entry !== 'string') {
    throw new ModuleDefinitionError(
      name,
      `package.json "${manifestKey}"`,
      'must be an object with "entry" naming the module file'
    )
  }
  if (manifest.host && !semver.satisfies(coreVersion, manifest.host, { includePrerelease: true })) {
    throw new ModuleDefinitionError(
      name,
      `package.json "${manifestKey}".host`,
      `"${manifest.host}" does not accept this platform version ${coreVersion}`
    )
  }
  let exported: { default?: unknown; module?: unknown; migrations?: unknown }
  try {
    exported = await importModuleFile(resolve(pkgDir, manifest.entry))
  } catch (err) {
    throw new ModuleDefinitionError(name, manifest.entry, `cannot be loaded: ${(err as Error).message}`)
  }
  return { definition: exported.default ?? exported.module, migrations: exported.migrations }
}

/**
 * A module's entry file. Under tsx (tests, `npm start` from the sources) tsx loads it; the
 * compiled build leaves module packages as they are, TypeScript included, and Node 24 strips
 * their types itself. What Node will not strip (a package under node_modules, syntax that is
 * not erasable such as an enum) goes through tsx, a dependency of the service.
 */
async function importModuleFile(path: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(path).href
  try {
    return await import(url)
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code !== 'ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING' && code !== 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX')
      throw err
    // Loaded through a tsx loader of its own, unregistered once the entry and its static imports are in: a loader left
    // registered holds a message port open, and a CLI run (`records module check` of a package under node_modules)
    // never exited.
    const { register } = await import('tsx/esm/api')
    const loader = register({ namespace: `records-module-${randomUUID()}` })
    try {
      return (await loader.import(url, import.meta.url)) as Record<string, unknown>
    } finally {
      await loader.unregister()
    }
  }
}

/**
 * Discovers module packages in the configured folders and npm packages and builds the registry. A package
 * that does not load is disabled alone (registry.unavailable, an error line each): the others serve.
 */
export async function loadModules(options: {
  directories: string[]
  packages: string[]
  /** Package folders loaded first, before the configured ones (`records module check`: the package under check wins its key). */
  packageDirs?: string[]
}): Promise<ModuleRegistry> {
  const registry = new ModuleRegistry()
  for (const dir of options.packageDirs ?? []) await loadPackage(registry, resolve(dir))
  for (const dir of options.directories) {
    const abs = resolve(projectRoot, dir)
    const entries = await readdir(abs, { withFileTypes: true }).catch(() => [])
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (!e.isDirectory()) continue
      const pkgDir = join(abs, e.name)
      if (await stat(join(pkgDir, 'package.json')).catch(() => null)) await loadPackage(registry, pkgDir)
    }
  }
  const require = createRequire(join(projectRoot, 'package.json'))
  for (const name of options.packages) {
    let pkgFile: string
    try {
      pkgFile = require.resolve(`${name}/package.json`)
    } catch {
      const e = new ModuleDefinitionError(name, 'package', 'is listed in modules.packages but is not installed')
      registry.disable(e)
      logger.error('module package disabled', { package: name, reason: e.message })
      continue
    }
    await loadPackage(registry, dirname(pkgFile))
  }
  registry.checkReferences()
  return registry
}
