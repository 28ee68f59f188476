import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import { projectRoot } from '../../core/paths.ts'
import { loadModules } from '../../core/modules/registry.ts'
import { freshDatabase } from '../helpers/database.ts'

const coreVersion: string = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')).version
const fixturesDir = join(projectRoot, 'test', 'fixtures')
mkdirSync(fixturesDir, { recursive: true })
const root = mkdtempSync(join(fixturesDir, 'modules-'))
t.teardown(() => rmSync(root, { recursive: true, force: true }))

type Definition = Record<string, any>

/** A small, valid module; each case breaks one thing. */
function validDefinition(key = 'fixture-ok'): Definition {
  return {
    key,
    version: '1.0.0',
    title: 'Fixture',
    numberPattern: 'FIX-{YYYY}-{seq:3}',
    fields: [
      { key: 'title', type: 'text', required: true, maxLength: 50 },
      { key: 'level', type: 'singleChoice', options: ['low', 'high'] },
      { key: 'note', type: 'longText' },
      { key: 'parent', type: 'recordRef', module: key },
      { key: 'items', type: 'group', fields: [{ key: 'label', type: 'text', required: true }] }
    ],
    workflow: {
      initial: 'open',
      states: [{ key: 'open' }, { key: 'done', requires: ['note'], final: true }],
      transitions: [{ key: 'finish', from: ['open'], to: 'done' }]
    },
    permissions: { editor: ['read', 'create', 'transition:finish'] }
  }
}

/** Writes one module package into its own folder (loadModules stops at the first bad package). */
function writePackage(folder: string, name: string, definition: Definition, host = '>=0.1.0 <1.0.0'): string {
  const dir = join(root, folder)
  mkdirSync(join(dir, 'pkg'), { recursive: true })
  writeFileSync(
    join(dir, 'pkg', 'package.json'),
    JSON.stringify({ name, version: '1.0.0', type: 'module', 'records-module': { entry: 'module.ts', host } })
  )
  writeFileSync(join(dir, 'pkg', 'module.ts'), `export default ${JSON.stringify(definition, null, 2)}\n`)
  return dir
}

const cases: Array<{ name: string; where: string; problem: RegExp; breakIt(d: Definition): void; host?: string }> = [
  {
    name: 'an unknown field type',
    where: 'field "level"',
    problem: /unknown type "colour"/,
    breakIt: (d) => void (d.fields[1].type = 'colour')
  },
  {
    name: 'a singleChoice without options',
    where: 'field "level"',
    problem: /options must list at least one choice/,
    breakIt: (d) => void delete d.fields[1].options
  },
  {
    name: 'a singleChoice with empty options',
    where: 'field "level"',
    problem: /options must list/,
    breakIt: (d) => void (d.fields[1].options = [])
  },
  {
    name: 'a workflow transition to an unknown state',
    where: 'workflow transition "finish"',
    problem: /to names unknown state "archived"/,
    breakIt: (d) => void (d.workflow.transitions[0].to = 'archived')
  },
  {
    name: 'a workflow transition from an unknown state',
    where: 'workflow transition "finish"',
    problem: /from names unknown state "draft"/,
    breakIt: (d) => void (d.workflow.transitions[0].from = ['draft'])
  },
  {
    name: 'a state that requires an unknown field',
    where: 'workflow state "done"',
    problem: /requires unknown field "summary"/,
    breakIt: (d) => void (d.workflow.states[1].requires = ['summary'])
  },
  {
    name: 'a recordRef to a module no package provides',
    where: 'field "parent"',
    problem: /module "nobody", which no loaded package provides/,
    breakIt: (d) => void (d.fields[3].module = 'nobody')
  },
  {
    name: 'a numberPattern without {seq}',
    where: 'numberPattern',
    problem: /exactly one \{seq\}/,
    breakIt: (d) => void (d.numberPattern = 'FIX-{YYYY}')
  },
  {
    name: 'a numberPattern with an unknown token',
    where: 'numberPattern',
    problem: /unknown token/,
    breakIt: (d) => void (d.numberPattern = 'FIX-{QQ}-{seq:4}')
  },
  {
    name: 'a duplicate field key',
    where: 'field "title"',
    problem: /is declared twice/,
    breakIt: (d) => void d.fields.push({ key: 'title', type: 'text' })
  },
  {
    name: 'a field inside a group of unknown type',
    where: 'field "items.label"',
    problem: /unknown type "txt"/,
    breakIt: (d) => void (d.fields[4].fields[0].type = 'txt')
  },
  {
    name: 'a permission naming an unknown transition',
    where: 'permissions.editor',
    problem: /unknown transition "approve"/,
    breakIt: (d) => void d.permissions.editor.push('transition:approve')
  },
  {
    name: 'a field access rule naming an undeclared role',
    where: 'field "note"',
    problem: /access names role "medic", which the module's permissions do not declare/,
    breakIt: (d) => void (d.fields[2].access = { read: ['medic'] })
  },
  {
    name: 'a field access rule without roles',
    where: 'field "note"',
    problem: /access must be \{ read: \[roles...\]/,
    breakIt: (d) => void (d.fields[2].access = { read: [] })
  },
  {
    name: 'a field access rule inside a group',
    where: 'field "items.label"',
    problem: /access rules apply to top-level fields only/,
    breakIt: (d) => void (d.fields[4].fields[0].access = { read: ['editor'] })
  },
  {
    name: 'a row rule for an undeclared role',
    where: 'rowAccess.viewer',
    problem: /names a role the module's permissions do not declare/,
    breakIt: (d) => void (d.rowAccess = { viewer: [{ createdBy: 'self' }] })
  },
  {
    name: 'a row rule on a field that is not a user field',
    where: 'rowAccess.editor',
    problem: /condition field "title" must be a top-level field of type user/,
    breakIt: (d) => void (d.rowAccess = { editor: [{ field: 'title', equals: 'self' }] })
  },
  {
    name: 'an unknown row condition',
    where: 'rowAccess.editor',
    problem: /unknown condition \{"team":"mine"\}/,
    breakIt: (d) => void (d.rowAccess = { editor: [{ team: 'mine' }] })
  },
  {
    name: 'a misspelt field member (requird)',
    where: 'fields[0] (field "title")',
    problem:
      /unknown key "requird" \(did you mean "required"\?\); known keys here: key, label, description, required, access, type, maxLength, pattern, filterable, sortable, searchable, computed, default$/,
    breakIt: (d) => void (d.fields[0].requird = true)
  },
  {
    name: 'a top-level key the format does not have (indexes)',
    where: 'definition',
    problem: /unknown key "indexes"; known keys here: key, version, title/,
    breakIt: (d) => void (d.indexes = [{ fields: ['title'] }])
  },
  {
    name: 'a member of another field type (options on a text field)',
    where: 'fields[0] (field "title")',
    problem: /unknown key "options"/,
    breakIt: (d) => void (d.fields[0].options = ['a'])
  },
  {
    name: 'an unsupported member inside a group (placeholder)',
    where: 'fields[4] (field "items").fields[0] (field "label")',
    problem: /unknown key "placeholder"/,
    breakIt: (d) => void (d.fields[4].fields[0].placeholder = 'x')
  },
  {
    name: 'a default on a member of a group (top-level fields only)',
    where: 'field "items.label"',
    problem: /^default applies to top-level fields only, not to the members of a group$/,
    breakIt: (d) => void (d.fields[4].fields[0].default = 'x')
  },
  {
    name: 'a transition member in the wrong case (forbidself)',
    where: 'workflow.transitions[0]',
    problem: /unknown key "forbidself" \(did you mean "forbidSelf"\?\)/,
    breakIt: (d) => void (d.workflow.transitions[0].forbidself = true)
  },
  {
    name: 'a separation of duties from a field that is not a user field',
    where: 'workflow transition "finish"',
    problem: /separateFrom\.fields names "note", which is not a top-level user field; user fields: none/,
    breakIt: (d) => void (d.workflow.transitions[0].separateFrom = { fields: ['note'] })
  },
  {
    name: 'a separation of duties from an unknown transition',
    where: 'workflow transition "finish"',
    problem: /separateFrom\.transitions names unknown transition "submit"; transitions: finish/,
    breakIt: (d) => void (d.workflow.transitions[0].separateFrom = { transitions: ['submit'] })
  },
  {
    name: 'a separation of duties that names nobody',
    where: 'workflow transition "finish"',
    problem: /separateFrom names nobody/,
    breakIt: (d) => void (d.workflow.transitions[0].separateFrom = { creator: false })
  },
  {
    name: 'a misspelt member of a separation of duties (field)',
    where: 'workflow.transitions[0].separateFrom',
    problem: /unknown key "field" \(did you mean "fields"\?\)/,
    breakIt: (d) => void (d.workflow.transitions[0].separateFrom = { field: ['note'] })
  },
  {
    name: 'a state that locks an unknown field',
    where: 'workflow state "done"',
    problem: /locks unknown field "summary"; top-level fields: title, level, note, parent, items/,
    breakIt: (d) => void (d.workflow.states[1].locks = ['summary'])
  },
  {
    name: 'a state that locks the whole payload beside a field',
    where: 'workflow state "done"',
    problem: /locks "\*" locks the whole payload; list it alone/,
    breakIt: (d) => void (d.workflow.states[1].locks = ['*', 'title'])
  },
  {
    name: 'a state with an empty list of locks',
    where: 'workflow state "done"',
    problem: /locks must list top-level field keys/,
    breakIt: (d) => void (d.workflow.states[1].locks = [])
  },
  {
    name: 'an unknown member of a field access rule',
    where: 'fields[2] (field "note").access',
    problem: /unknown key "wirte" \(did you mean "write"\?\)/,
    breakIt: (d) => void (d.fields[2].access = { read: ['editor'], wirte: ['editor'] })
  },
  {
    name: 'a host range the core version does not satisfy',
    where: 'package.json "records-module".host',
    problem: new RegExp(`">=2\\.0\\.0" does not accept this platform version ${coreVersion.replace(/\./g, '\\.')}`),
    breakIt: () => undefined,
    host: '>=2.0.0'
  }
]

for (const [i, c] of cases.entries()) {
  t.test(`disables a package with ${c.name}, naming the package and the field`, async (t) => {
    const definition = validDefinition()
    c.breakIt(definition)
    const name = `@fixture/case-${i}`
    const dir = writePackage(`case-${i}`, name, definition, c.host)
    const registry = await loadModules({ directories: [dir], packages: [] })
    t.equal(registry.all().length, 0, 'the package serves no module')
    t.equal(registry.unavailable.length, 1, 'one package disabled')
    const u = registry.unavailable[0]
    t.equal(u.packageName, name, 'packageName')
    t.equal(u.where, c.where, 'where')
    t.match(u.problem, c.problem, 'what is wrong')
    // A host range is refused before the file is loaded: its key is unknown unless the manifest names it.
    t.equal(u.key, c.host ? undefined : 'fixture-ok', 'the module key, when the definition was read')
  })
}

t.test('disables the second package of a module key and keeps the first', async (t) => {
  const dir = join(root, 'twice')
  writePackage('twice/a', '@fixture/first', validDefinition('twice'))
  writePackage('twice/b', '@fixture/second', validDefinition('twice'))
  const registry = await loadModules({ directories: [join(dir, 'a'), join(dir, 'b')], packages: [] })
  t.equal(registry.get('twice')?.definition.packageName, '@fixture/first')
  t.match(registry.unavailable, [
    { packageName: '@fixture/second', key: 'twice', where: 'key', problem: /already provided by @fixture\/first/ }
  ])
  t.equal(registry.unavailableModule('twice'), undefined, 'the key itself is served')
})

t.test(
  'a package loaded first keeps its key when a configured copy of the same package is refused beside it',
  async (t) => {
    // What records module check and dry-run do: the new version of a package, staged, beside the deployment's old one.
    const configured = writePackage('versions/old', '@fixture/versioned', validDefinition('versioned'))
    const staged = join(
      writePackage('versions/new', '@fixture/versioned', { ...validDefinition('versioned'), version: '2.0.0' }),
      'pkg'
    )
    const registry = await loadModules({ directories: [configured], packages: [], packageDirs: [staged] })
    t.equal(registry.get('versioned')?.definition.version, '2.0.0', 'the staged version serves')
    t.match(registry.unavailable, [{ packageName: '@fixture/versioned', where: 'key', problem: /already provided/ }])
  }
)

t.test('a package that cannot be loaded is disabled beside good ones, and so is a module referencing it', async (t) => {
  const dir = join(root, 'mixed')
  writePackage('mixed/good', '@fixture/good', validDefinition('good'))
  const referring = validDefinition('referring')
  referring.fields[3].module = 'broken'
  writePackage('mixed/referring', '@fixture/referring', referring)
  const brokenDir = join(dir, 'broken', 'pkg')
  mkdirSync(brokenDir, { recursive: true })
  writeFileSync(
    join(brokenDir, 'package.json'),
    JSON.stringify({ name: '@fixture/broken', type: 'module', 'records-module': { entry: 'module.ts', key: 'broken' } })
  )
  writeFileSync(join(brokenDir, 'module.ts'), 'export default {{ not javascript\n')
  writePackage('mixed/missing-entry', '@fixture/missing-entry', validDefinition('missing-entry'))
  rmSync(join(dir, 'missing-entry', 'pkg', 'module.ts'))
  const registry = await loadModules({
    directories: ['mixed/good', 'mixed/referring', 'mixed/broken', 'mixed/missing-entry'].map((d) => join(root, d)),
    packages: ['@fixture/not-installed']
  })
  t.same(
    registry.all().map((m) => m.definition.key),
    ['good'],
    'the good package serves'
  )
  t.match(registry.unavailable, [
    { packageName: '@fixture/broken', key: 'broken', where: 'module.ts', problem: /^cannot be loaded: / },
    // No key: its file did not load and its manifest names none.
    { packageName: '@fixture/missing-entry', key: undefined, where: 'module.ts', problem: /cannot be loaded/ },
    {
      packageName: '@fixture/not-installed',
      where: 'package',
      problem: /listed in modules.packages but is not installed/
    },
    {
      packageName: '@fixture/referring',
      key: 'referring',
      where: 'field "parent"',
      problem: 'references module "broken", which no loaded package provides'
    }
  ])
  t.equal(registry.unavailableModule('broken')?.packageName, '@fixture/broken')
})

t.test('loads a valid fixture whose payload validator works', async (t) => {
  const dir = writePackage('valid', '@fixture/valid', validDefinition())
  const registry = await loadModules({ directories: [dir], packages: [] })
  const m = registry.get('fixture-ok')
  if (!m) throw new Error('fixture-ok not registered')
  t.equal(m.definition.packageName, '@fixture/valid')
  t.equal(m.versionKey, 'fixture-ok@1.0.0')
  t.ok(Object.isFrozen(m.definition) && Object.isFrozen(m.definition.fields[1]), 'the definition is frozen')
  t.same([...m.states.keys()], ['open', 'done'])
  t.same([...m.transitions.keys()], ['finish'])
  t.same(m.numberPattern.render(new Date('2031-05-06T00:00:00Z')), { prefix: 'FIX-2031-', suffix: '', width: 3 })
  t.equal(m.numberPattern.example(new Date('2031-05-06T00:00:00Z')), 'FIX-2031-001', 'the first number, as an example')

  t.ok(m.validatePayload({ title: 'ok' }), 'only the required field')
  t.ok(
    m.validatePayload({
      title: 'ok',
      level: 'high',
      note: 'n',
      parent: '6f1c3a52-8c1e-4a8e-9d55-2d2f6c8f0a11',
      items: [{ label: 'a' }]
    }),
    'every field'
  )
  const refused: Array<[string, unknown, string]> = [
    ['missing title', { level: 'low' }, 'required'],
    ['title not a string', { title: 5 }, 'type'],
    ['title too long', { title: 'x'.repeat(51) }, 'maxLength'],
    ['level outside the options', { title: 'ok', level: 'medium' }, 'enum'],
    ['unknown field', { title: 'ok', colour: 'red' }, 'additionalProperties'],
    ['parent not a uuid', { title: 'ok', parent: '42' }, 'format'],
    ['group item without its required field', { title: 'ok', items: [{}] }, 'required']
  ]
  for (const [label, payload, keyword] of refused) {
    t.notOk(m.validatePayload(payload), label)
    t.ok(
      m.validatePayload.errors?.some((e) => e.keyword === keyword),
      `${label}: ${keyword} error`
    )
  }
})

t.test('a fixture may reference a module from another directory', async (t) => {
  const def = validDefinition('fixture-ref')
  def.fields[3].module = 'incident'
  const dir = writePackage('ref', '@fixture/ref', def)
  const registry = await loadModules({ directories: ['tenant-modules', dir], packages: [] })
  t.same(
    registry
      .all()
      .map((m) => m.definition.key)
      .sort(),
    [
      'corrective-action',
      'environmental-monitoring',
      'fixture-ref',
      'incident',
      'inspection',
      'permit-to-work',
      'risk-assessment'
    ]
  )
})

t.test(
  'the service starts with a bad module package beside the bundled ones and logs why, naming the package and field',
  async (t) => {
    const definition = validDefinition('fixture-bad')
    definition.workflow.transitions[0].to = 'archived'
    const dir = writePackage('service', '@fixture/bad-at-start', definition)
    const db = await freshDatabase()
    t.teardown(() => db.drop())
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      NODE_CONFIG: JSON.stringify({ modules: { directories: ['tenant-modules', dir] }, tenants: {} }),
      DATABASE_URL: db.url,
      PORT: '0',
      LOG_LEVEL: 'error'
    }
    delete env.NODE_OPTIONS
    delete env.NODE_CONFIG_DIR
    const child = spawn(process.execPath, ['--import', 'tsx', 'bin/server.ts'], {
      cwd: projectRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let stdout = ''
    let stderr = ''
    child.stderr.on('data', (c) => (stderr += c))
    const listening = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 60_000)
      child.stdout.on('data', (c) => {
        stdout += c
        if (/listening/i.test(stdout)) {
          clearTimeout(timer)
          resolve(true)
        }
      })
      child.on('close', () => resolve(false))
    })
    const closed = new Promise((resolve) => child.on('close', resolve))
    child.kill('SIGTERM')
    await closed
    t.ok(listening, 'it listens')
    const lines = stderr
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
    t.match(
      lines.find((l) => l.msg === 'module package disabled'),
      {
        level: 'error',
        package: '@fixture/bad-at-start',
        module: 'fixture-bad',
        reason:
          'Module package "@fixture/bad-at-start": workflow transition "finish": to names unknown state "archived"'
      },
      'one JSON error line names the package, the module and why'
    )
  }
)
