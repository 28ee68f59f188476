import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { basename, join, resolve, sep } from 'node:path'
import semver from 'semver'
import { projectRoot } from '../paths.ts'
import { printChecks, runScratchConformance, type ScratchIo } from './module-check.ts'
import { checkRelease } from '../modules/diff.ts'
import { chainText, upgradeChecks } from '../modules/conformance/upgrade-checks.ts'
import {
  coreVersion,
  loadModules,
  manifestKey,
  type RegisteredModule,
  type UnavailablePackage
} from '../modules/registry.ts'

/** What `records module …` needs of the command line: where to write, and how to refuse. */
export interface ModuleCliIo extends ScratchIo {
  out(line: string): void
  fail(message: string): never
  /** The configured module folders and packages (the check loads them beside the package under check). */
  modules: { directories: string[]; packages: string[] }
}

/** The flags of `records module check`. */
interface CheckFlags {
  'load-only'?: boolean | string
  previous?: string | boolean
  'max-transitions'?: string | boolean
}

const slug = /^[a-z][a-z0-9-]*$/
const sdkName = '@qehs-records/module-sdk'
const sdkVersion: string = JSON.parse(
  readFileSync(join(projectRoot, 'packages', 'module-sdk', 'package.json'), 'utf8')
).version

/** `Risk assessment` from `risk-assessment`. */
const titleOf = (key: string) => key.charAt(0).toUpperCase() + key.slice(1).replace(/-/g, ' ')

/** The host range a new package declares: this platform's version up to the next major (0.x: the next minor). */
export function hostRange(version = coreVersion): string {
  const v = semver.parse(version)!
  return `>=${v.major}.${v.minor}.0 <${v.major === 0 ? `0.${v.minor + 1}.0` : `${v.major + 1}.0.0`}`
}

/** The files of a new module package, keyed by path. */
export function scaffoldFiles(key: string, packageName: string): Record<string, string> {
  const title = titleOf(key)
  const prefix = key
    .split('-')
    .map((w) => w[0])
    .join('')
    .toUpperCase()
    .padEnd(2, 'X')
  const manifest = {
    name: packageName,
    version: '1.0.0',
    description: `QEHS records module: ${title.toLowerCase()}`,
    type: 'module',
    files: ['module.ts', 'README.md'],
    [manifestKey]: { entry: 'module.ts', host: hostRange(), key },
    // `npm test`: the platform's conformance kit on a scratch database (records module check runs it).
    scripts: { typecheck: 'tsc --noEmit', test: 'records module check .', check: 'records module check . --load-only' },
    peerDependencies: { [sdkName]: `^${sdkVersion}` },
    devDependencies: { [sdkName]: `^${sdkVersion}`, typescript: '^5.9.0' }
  }
  const moduleTs = `import { defineModule, type PayloadOf } from '${sdkName}'

/** ${title}: drafted by an author, submitted, approved by someone else. Change it to your process. */
const ${key.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())} = defineModule({
  key: '${key}',
  version: '1.0.0',
  title: '${title}',
  description: 'Describe what this record is for.',
  numberPattern: '${prefix}-{YYYY}-{seq:4}',
  summaryColumns: ['title', 'site', 'owner', 'dueDate'],
  fields: [
    { key: 'title', type: 'text', label: 'Title', required: true, maxLength: 200 },
    { key: 'details', type: 'longText', label: 'Details' },
    { key: 'site', type: 'text', label: 'Site', maxLength: 120 },
    { key: 'owner', type: 'user', label: 'Owner' },
    { key: 'dueDate', type: 'date', label: 'Due date' },
    { key: 'priority', type: 'singleChoice', label: 'Priority', options: ['low', 'medium', 'high'] }
  ],
  workflow: {
    initial: 'draft',
    states: [
      { key: 'draft', label: 'Draft' },
      { key: 'submitted', label: 'Submitted', requires: ['owner'] },
      { key: 'approved', label: 'Approved', final: true }
    ],
    transitions: [
      { key: 'submit', label: 'Submit', from: ['draft'], to: 'submitted' },
      { key: 'approve', label: 'Approve', from: ['submitted'], to: 'approved', roles: ['approver'], forbidSelf: true },
      { key: 'return', label: 'Return to draft', from: ['submitted'], to: 'draft', roles: ['approver'] }
    ]
  },
  permissions: {
    author: ['read', 'create', 'update', 'transition:submit'],
    approver: ['read', 'update', 'export', 'transition:approve', 'transition:return']
  }
})

export default ${key.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())}

/** A record's payload under this definition. */
export type ${title.replace(/ (\w)/g, (_, c: string) => c.toUpperCase())}Payload = PayloadOf<typeof ${key.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())}>
`
  const readme = `# ${packageName}

A module package for the QEHS records platform: ${title.toLowerCase()} records, their workflow and permissions,
defined in \`module.ts\` with the module SDK (\`${sdkName}\`).

- \`npm run typecheck\`: tsc against the SDK's types (an unknown key in the definition is a type error).
- \`npm test\` (where the platform's \`records\` command is on the path; from a platform checkout:
  \`npx records module check <this folder>\`): the platform loads the package as a deployment would, then runs
  its conformance kit on a scratch database: records created, read, patched and deleted, every transition with
  its guards, roles and four-eyes rule, row and field rules, bulk, exports in CSV, XLSX and PDF, the OpenAPI
  document and the GraphQL schema, one line per check. It fails when any check fails.
- \`npm run check\`: the load alone (\`records module check . --load-only\`), in a second.
- \`npm pack\` makes the tarball an operator installs into the platform's \`node_modules\` and lists in
  \`modules.packages\`; a tenant gets the module when its \`tenants.<id>.modules\` names \`${key}\`.

\`records-module.host\` in package.json is the range of platform versions this package fits.
`
  const tsconfig = {
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: []
    },
    include: ['module.ts']
  }
  return {
    'package.json': JSON.stringify(manifest, null, 2) + '\n',
    'module.ts': moduleTs,
    'README.md': readme,
    'tsconfig.json': JSON.stringify(tsconfig, null, 2) + '\n',
    '.gitignore': 'node_modules/\n*.tgz\n'
  }
}

/** `records module new <key> [--name @scope/pkg] [--dir PATH]`: a package folder, ready to check, typecheck and pack. */
function scaffold(io: ModuleCliIo, key: string | undefined, values: { name?: string; dir?: string }) {
  if (!key || !slug.test(key)) io.fail('records module new <key>: the key is a lower-case slug such as risk-assessment')
  const packageName = values.name ?? `@my-org/${key}`
  const dir = resolve(values.dir ?? key)
  if (existsSync(dir) && readdirSync(dir).length) io.fail(`${dir} exists and is not empty`)
  mkdirSync(dir, { recursive: true })
  for (const [file, text] of Object.entries(scaffoldFiles(key, packageName))) writeFileSync(join(dir, file), text)
  io.out(`Created ${packageName} (module "${key}") in ${dir}`)
  io.out(
    `Next: cd ${dir} && npm install && npm run typecheck && npm test (the conformance kit: records module check .)`
  )
}

/**
 * The package to check, staged where a deployment has its packages: under the platform's `node_modules`, so that it
 * imports the SDK by name from the platform's copy as it will once installed (a folder's own `node_modules` is left
 * out). A tarball `npm pack` made is unpacked there, in a folder named by the process id. The staging folder is removed after.
 */
function stagePackage(io: Pick<ModuleCliIo, 'fail'>, target: string): { dir: string; done: () => void } {
  const path = resolve(target)
  if (!existsSync(path)) io.fail(`${target}: no such folder or file`)
  const isFolder = statSync(path).isDirectory()
  if (!isFolder && !/\.(tgz|tar\.gz)$/.test(path))
    io.fail(`${target}: give a package folder or a .tgz made by npm pack`)
  const stage = join(projectRoot, 'node_modules', '.records-module-check', `${process.pid}-${randomUUID()}`)
  mkdirSync(stage, { recursive: true })
  const done = () => rmSync(stage, { recursive: true, force: true })
  try {
    if (isFolder) {
      cpSync(path, join(stage, 'package'), {
        recursive: true,
        filter: (src) => !src.slice(path.length).split(sep).includes('node_modules')
      })
    } else execFileSync('tar', ['-xzf', path, '-C', stage])
  } catch (err) {
    done()
    throw err
  }
  // npm pack puts the package under package/.
  return { dir: existsSync(join(stage, 'package', 'package.json')) ? join(stage, 'package') : stage, done }
}

export interface LoadedPackage {
  name: string
  module?: RegisteredModule
  refused?: UnavailablePackage
  /** Every module that loaded with it (the configured ones beside it). */
  loaded: RegisteredModule[]
}

/** Loads a staged package folder beside the configured modules (for the modules its record references name). */
async function loadStaged(io: Pick<ModuleCliIo, 'modules'>, dir: string): Promise<LoadedPackage> {
  const name = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string }).name ?? basename(dir)
  const registry = await loadModules({ ...io.modules, packageDirs: [dir] })
  const loaded = registry.all()
  // By its folder: a configured copy of the same package (a module of this repository checked from its folder) is
  // refused as a duplicate of the staged one, which loads first and wins its key.
  const module = loaded.find((r) => r.definition.packagePath === resolve(dir))
  if (module) return { name, module, loaded }
  return { name, refused: registry.unavailable.find((u) => u.packageName === name), loaded }
}

/**
 * Loads a package folder or tarball as a deployment would, beside the configured modules: its module, or why it is
 * refused (its manifest, host range or definition). The one load of `check` and `diff`.
 */
export async function loadPackageAt(io: Pick<ModuleCliIo, 'fail' | 'modules'>, target: string): Promise<LoadedPackage> {
  const { dir, done } = stagePackage(io, target)
  try {
    return await loadStaged(io, dir)
  } finally {
    done()
  }
}

/**
 * `records module check <dir|tgz> [--previous <dir|tgz>] [--load-only] [--max-transitions N]`: whether the package is
 * accepted (its manifest, host range and definition); with `--previous`, the upgrade from that published version
 * (conformance/upgrade-checks.ts, in memory); then the conformance kit on a scratch database (module-check.ts) unless
 * `--load-only`. Exit 0 when all holds, 1 with the reason or the failed checks when not.
 */
async function check(io: ModuleCliIo, target: string | undefined, values: CheckFlags): Promise<boolean> {
  if (!target)
    io.fail('records module check <folder|tarball> [--previous <folder|tarball>] [--load-only] [--max-transitions N]')
  if (values.previous !== undefined && typeof values.previous !== 'string')
    io.fail('--previous takes the folder or tarball of the previous published version')
  const maxTransitions = values['max-transitions'] === undefined ? undefined : Number(values['max-transitions'])
  if (maxTransitions !== undefined && !(Number.isInteger(maxTransitions) && maxTransitions > 0))
    io.fail('--max-transitions takes a positive whole number')
  const { dir, done } = stagePackage(io, target)
  try {
    const { name, module: m, refused, loaded } = await loadStaged(io, dir)
    if (!m) {
      io.out(`REFUSED ${name}: ${refused?.where}: ${refused?.problem}`)
      return false
    }
    const d = m.definition
    io.out(`OK ${name}@${m.package.version ?? '?'}: module "${d.key}" ${d.version}, host ${m.package.host ?? 'any'}`)
    io.out(
      `   ${d.fields.length} fields, ${d.workflow.states.length} states, ${d.workflow.transitions.length} transitions, roles ${Object.keys(d.permissions).join(', ') || '-'}`
    )
    let upgraded = true
    if (values.previous) {
      const old = await loadPackageAt(io, values.previous)
      if (!old.module) {
        io.out(`REFUSED previous ${old.name}: ${old.refused?.where}: ${old.refused?.problem}`)
        return false
      }
      io.out(
        `Upgrade from ${old.name}@${old.module.package.version ?? '?'} (module ${old.module.definition.version}), in memory:`
      )
      upgraded = printChecks(io, upgradeChecks(old.module, m))
    }
    if (values['load-only']) return upgraded
    io.out(`Conformance kit (a scratch database, removed after):`)
    const conforms = await runScratchConformance(
      io,
      dir,
      d,
      loaded.map((r) => r.definition),
      { maxTransitions }
    )
    return upgraded && conforms
  } finally {
    done()
  }
}

/** The module a package provides; a refused package stops the command. */
async function moduleIn(io: ModuleCliIo, target: string): Promise<RegisteredModule> {
  const { name, module: m, refused } = await loadPackageAt(io, target)
  if (!m) return io.fail(`${target}: ${name} is refused: ${refused?.where}: ${refused?.problem}`)
  return m
}

/**
 * `records module diff <old> <new>`: what the new version changes for records stored under the old one, and
 * whether its version may carry it (core/modules/diff.ts). Exit 1 when the release is refused.
 */
async function diff(io: ModuleCliIo, oldTarget: string | undefined, newTarget: string | undefined): Promise<boolean> {
  if (!oldTarget || !newTarget) io.fail('records module diff <old folder|tarball> <new folder|tarball>')
  const before = (await moduleIn(io, oldTarget)).definition
  const next = await moduleIn(io, newTarget)
  const after = next.definition
  const result = checkRelease(before, after, next.migrations)
  io.out(`${before.key} ${before.version} → ${after.version}`)
  for (const b of result.breaking) io.out(`  BREAKING ${b.at}: ${b.change}`)
  for (const c of result.compatible) io.out(`  compatible ${c}`)
  if (!result.breaking.length && !result.compatible.length) io.out('  no change to the definition')
  // checkRelease looks for migrations only when the version may carry the breaking changes.
  if (result.migrations) io.out(`  migrations ${chainText(result.migrations)}`)
  for (const b of result.unanswered) io.out(`  UNANSWERED ${b.at}: ${b.change}`)
  io.out(result.refused ? `REFUSED: ${result.refused}` : 'OK')
  return !result.refused
}

/** `records module new|check|diff`; undefined when the action is not one of them. */
export async function moduleCommand(
  io: ModuleCliIo,
  action: string | undefined,
  arg: string | undefined,
  values: { name?: string; dir?: string } & CheckFlags,
  second?: string
): Promise<'done' | 'refused' | undefined> {
  if (action === 'new') {
    scaffold(io, arg, values)
    return 'done'
  }
  if (action === 'check') return (await check(io, arg, values)) ? 'done' : 'refused'
  if (action === 'diff') return (await diff(io, arg, second)) ? 'done' : 'refused'
  return undefined
}
