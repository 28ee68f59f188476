import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { projectRoot } from '../../core/paths.ts'

/**
 * Module packages written for one test file into a folder of their own (removed by the
 * returned `remove`), as a module author publishes them: a package.json naming the entry
 * and the host versions, and a module.ts exporting the definition. Pass `directory` to
 * the server's `modules.directories` beside 'tenant-modules'.
 */
export function fixtureModules(definitions: Array<Record<string, unknown> & { key: string }>): {
  directory: string
  remove(): void
} {
  const directory = mkdtempSync(join(projectRoot, 'test', 'fixtures-modules-'))
  for (const d of definitions) writeModulePackage(join(directory, d.key), d, { version: '1.0.0' })
  return { directory, remove: () => rmSync(directory, { recursive: true, force: true }) }
}

/**
 * Writes one module package into `dir` (made afresh): package.json `@fixture/<key>` at the definition's version
 * unless `o.version` says otherwise, and module.ts exporting the definition, then `o.source` (e.g. its migrations).
 */
export function writeModulePackage(
  dir: string,
  definition: Record<string, unknown> & { key: string },
  o: { version?: string; source?: string } = {}
) {
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({
      name: `@fixture/${definition.key}`,
      version: o.version ?? String(definition.version),
      type: 'module',
      'records-module': { entry: 'module.ts', host: '>=0.1.0 <1.0.0' }
    })
  )
  writeFileSync(join(dir, 'module.ts'), `export default ${JSON.stringify(definition, null, 2)}\n${o.source ?? ''}`)
}

/** The transform of `permitMigrations` unless one is given: trims the title (and refuses one that is not text). */
const trimTitle = '(r) => ({ ...r, payload: { ...r.payload, title: r.payload.title.trim() } })'

/**
 * The `migrations` export (source text) of the permit fixtures' 2.0.0: site → location, choice hot-work → hot, risk
 * defaulted to low, state open → active, then `transform`.
 */
export const permitMigrations = (transform = trimTitle) => `export const migrations = [{
  from: '^1.0.0',
  to: '2.0.0',
  steps: [
    { op: 'renameField', from: 'site', to: 'location' },
    { op: 'mapChoice', field: 'kind', values: { 'hot-work': 'hot' } },
    { op: 'setDefault', field: 'risk', value: 'low' },
    { op: 'renameState', from: 'open', to: 'active' }
  ],
  transform: ${transform}
}]
`

/**
 * A risk assessment with separation of duties and locks by state (issue 30): `approve` must be fired by someone
 * other than the `author` and the `reviewer` the record names once approve has set its fields, and other than whoever
 * submitted it; `approved` locks the rating (`annotate` stays there, `reopen` and `archive` leave), `archived` locks
 * the whole payload.
 */
export const assessmentModule = {
  key: 'assessment',
  version: '1.0.0',
  title: 'Assessment',
  numberPattern: 'RA-{seq:4}',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'author', type: 'user' },
    { key: 'reviewer', type: 'user' },
    { key: 'severity', type: 'integer', minimum: 1, maximum: 5 },
    { key: 'likelihood', type: 'integer', minimum: 1, maximum: 5 },
    { key: 'notes', type: 'longText' }
  ],
  workflow: {
    initial: 'draft',
    states: [
      { key: 'draft' },
      { key: 'submitted' },
      { key: 'approved', locks: ['severity', 'likelihood'] },
      { key: 'archived', locks: ['*'], final: true }
    ],
    transitions: [
      { key: 'submit', from: ['draft'], to: 'submitted' },
      {
        key: 'approve',
        from: ['submitted'],
        to: 'approved',
        roles: ['approver'],
        requires: ['reviewer'],
        separateFrom: { fields: ['author', 'reviewer'], transitions: ['submit'] }
      },
      { key: 'annotate', from: ['approved'], to: 'approved' },
      { key: 'reopen', from: ['approved'], to: 'draft', roles: ['approver'] },
      { key: 'archive', from: ['approved'], to: 'archived', roles: ['approver'] }
    ]
  },
  permissions: {
    assessor: ['read', 'create', 'update', 'transition:submit', 'transition:annotate'],
    approver: ['read', 'update', 'transition:*']
  }
}
