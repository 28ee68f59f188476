// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import t from '../helpers/tap.ts'
import { records } from '../helpers/cli.ts'
import { projectRoot } from '../../core/paths.ts'
import { startTestServer } from '../helpers/server.ts'

/**
 * A module author's way, end to end, with no platform code touched: `records module new` scaffolds a
 * package in a folder of its own, the package's own tsc passes against the SDK (and refuses a typo),
 * `npm pack` makes its tarball, `records module check` accepts it and its conformance kit passes (also as the
 * package's own `npm test`), the tarball is installed into the
 * deployment's node_modules and listed in config, and a tenant uses the module over REST, bulk,
 * exports, GraphQL and OpenAPI.
 */
const exec = promisify(execFile)
t.setTimeout(240_000)
const work = mkdtempSync(join(tmpdir(), 'records-author-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))
// A name of its own per run: the tarball goes into the checkout's node_modules, removed at the end.
// A key no bundled module has: the package is installed beside tenant-modules/, and keys are unique.
const packageName = `@fixture-author/method-statement-${randomUUID().slice(0, 8)}`
const installed = join(projectRoot, 'node_modules', ...packageName.split('/'))
t.teardown(() => {
  rmSync(installed, { recursive: true, force: true })
  // The scope folder too, once no other run's package is in it.
  if (!readdirSync(dirname(installed)).length) rmSync(dirname(installed), { recursive: true, force: true })
})
const dir = join(work, 'method-statement')
// Agenda leaves a referenced timer behind job runs (see test/idempotency/purge-job.test.ts): end the process once done.
t.teardown(() => void setTimeout(() => process.exit(), 200).unref())

const cli = (...args: string[]) => records(args)

const tsc = (project: string) =>
  exec(process.execPath, [join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project]).then(
    () => ({ code: 0, out: '' }),
    (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout })
  )

t.test('records module new scaffolds a package whose own tsc passes against the SDK', async (t) => {
  const made = await cli('module', 'new', 'method-statement', '--name', packageName, '--dir', dir)
  t.equal(made.code, 0, made.stderr)
  t.same(readdirSync(dir).sort(), ['.gitignore', 'README.md', 'module.ts', 'package.json', 'tsconfig.json'])
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  t.match(manifest, {
    name: packageName,
    'records-module': { entry: 'module.ts', key: 'method-statement', host: /^>=0\./ },
    peerDependencies: { '@qehs-records/module-sdk': /^\^/ }
  })
  // What `npm install` of the SDK's tarball gives the author: the SDK under the package's node_modules.
  mkdirSync(join(dir, 'node_modules', '@qehs-records'), { recursive: true })
  symlinkSync(join(projectRoot, 'packages', 'module-sdk'), join(dir, 'node_modules', '@qehs-records', 'module-sdk'))
  const clean = await tsc(dir)
  t.equal(clean.code, 0, `tsc of the scaffold: ${clean.out}`)
  const source = readFileSync(join(dir, 'module.ts'), 'utf8')
  writeFileSync(join(dir, 'module.ts'), source.replace('required: true, maxLength: 200', 'requird: true'))
  const typo = await tsc(dir)
  t.not(typo.code, 0, 'a misspelt key fails the package’s tsc')
  t.match(typo.out, /module\.ts\(\d+,\d+\): error TS2322/)
  writeFileSync(join(dir, 'module.ts'), source)
  const again = await cli('module', 'new', 'method-statement', '--dir', dir)
  t.equal(again.code, 2, 'it never writes into a folder that is not empty')
})

let tarball = ''
t.test('npm pack makes the tarball, and records module check accepts it or says why not', async (t) => {
  rmSync(join(dir, 'node_modules'), { recursive: true, force: true })
  const { stdout } = await exec('npm', ['pack', '--silent', '--pack-destination', work], { cwd: dir })
  tarball = join(work, stdout.trim().split('\n').at(-1)!)
  const ok = await cli('module', 'check', tarball)
  t.equal(ok.code, 0, ok.stdout + ok.stderr)
  t.match(ok.stdout, new RegExp(`^OK ${packageName}@1\\.0\\.0: module "method-statement" 1\\.0\\.0, host >=0\\.`))
  // The whole conformance kit ran on a scratch database, and every check held.
  t.match(ok.stdout, /\nConformance kit \(a scratch database, removed after\):\n/)
  t.notMatch(ok.stdout, /^ {2}FAIL /m, 'no check failed')
  for (const sentence of [
    'creates a record with every field',
    'transition "approve": refuses the record\'s creator (four eyes)',
    'transition "submit": refuses without the fields its guard needs, naming them: names owner',
    'loads NDJSON rows in bulk with one outcome per row, the bad row refused',
    'exports its records to XLSX and downloads the file',
    'types the module in the GraphQL schema, and a query of a record returns its fields'
  ])
    t.ok(ok.stdout.includes(`\n  ok   ${sentence}`), sentence)
  t.match(ok.stdout, /\nall \d+ checks passed\n$/)
  const folder = await cli('module', 'check', dir, '--load-only')
  t.equal(folder.code, 0, 'a folder checks the same')
  t.notMatch(folder.stdout, /Conformance kit/, '--load-only loads the package and runs no kit')

  const broken = join(work, 'broken')
  rmSync(broken, { recursive: true, force: true })
  await cli('module', 'new', 'broken-thing', '--name', '@fixture-author/broken', '--dir', broken)
  const source = readFileSync(join(broken, 'module.ts'), 'utf8')
  writeFileSync(join(broken, 'module.ts'), source.replace("to: 'approved', roles", "to: 'archived', roles"))
  const refused = await cli('module', 'check', broken)
  t.equal(refused.code, 1)
  t.equal(
    refused.stdout.trim(),
    'REFUSED @fixture-author/broken: workflow transition "approve": to names unknown state "archived"'
  )
  // This process's stagings only (named by its pid): other test files check packages at the same time.
  t.same(
    readdirSync(join(projectRoot, 'node_modules', '.records-module-check')).filter((e) =>
      e.startsWith(`${process.pid}-`)
    ),
    [],
    'nothing left staged'
  )
})

t.test('npm test in the scaffolded package runs records module check . (the conformance kit)', async (t) => {
  // What the author has once the platform is installed beside the package: its `records` command on the path.
  const bin = join(work, 'bin')
  mkdirSync(bin, { recursive: true })
  symlinkSync(join(projectRoot, 'bin', 'records.js'), join(bin, 'records'))
  const run = await exec('npm', ['test', '--silent'], {
    cwd: dir,
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
    timeout: 120_000
  }).then(
    (r) => ({ code: 0, out: r.stdout }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr })
  )
  t.equal(run.code, 0, run.out)
  t.match(run.out, /\nall \d+ checks passed\n/)
})

t.test(
  'records module diff names the breaking changes of a new version and refuses one without a new major or a migration',
  async (t) => {
    const next = join(work, 'next')
    cpSync(dir, next, { recursive: true })
    const source = readFileSync(join(next, 'module.ts'), 'utf8')
    const changed = source
      .replace("options: ['low', 'medium', 'high']", "options: ['medium', 'high', 'critical']")
      .replace("{ key: 'site', type: 'text', label: 'Site', maxLength: 120 },", '')
      .replace("summaryColumns: ['title', 'site', 'owner', 'dueDate']", "summaryColumns: ['title', 'owner', 'dueDate']")
    writeFileSync(join(next, 'module.ts'), changed.replace("version: '1.0.0'", "version: '1.1.0'"))
    const minor = await cli('module', 'diff', tarball, next)
    t.equal(minor.code, 1, 'refused: ' + minor.stderr)
    t.same(minor.stdout.trim().split('\n'), [
      'method-statement 1.0.0 → 1.1.0',
      '  BREAKING field "site": removed (a rename is a removal and an addition)',
      '  BREAKING field "priority": option "low" removed',
      '  compatible field "priority": option "critical" added',
      'REFUSED: 2 breaking change(s) need a new major version (1.0.0 → 2.0.0 or later)'
    ])
    writeFileSync(join(next, 'module.ts'), changed.replace("version: '1.0.0'", "version: '2.0.0'"))
    const unmigrated = await cli('module', 'diff', tarball, next)
    t.equal(unmigrated.code, 1, 'a new major without a migration is refused')
    t.match(
      unmigrated.stdout,
      /^ {2}migrations none\n {2}UNANSWERED field "site": removed[\s\S]*\nREFUSED: 2 breaking change\(s\) need a migration from 1\.0\.0/m
    )
    // The package declares the migration that answers both changes.
    const migration = `export const migrations = [{ from: '^1.0.0', to: '2.0.0', steps: [{ op: 'removeField', field: 'site' }, { op: 'mapChoice', field: 'priority', values: { low: 'medium' } }] }]\n`
    writeFileSync(join(next, 'module.ts'), changed.replace("version: '1.0.0'", "version: '2.0.0'") + migration)
    const major = await cli('module', 'diff', tarball, next)
    t.equal(major.code, 0, major.stdout)
    t.match(major.stdout, /BREAKING field "site"[\s\S]*\n {2}migrations \^1\.0\.0 → 2\.0\.0\nOK\n$/)
    const down = await cli('module', 'diff', next, tarball)
    t.equal(down.code, 1)
    t.match(down.stdout, /REFUSED: a downgrade \(2\.0\.0 → 1\.0\.0\)/)
  }
)

t.test('installed from its tarball and listed for a tenant, the module serves every transport', async (t) => {
  mkdirSync(installed, { recursive: true })
  await exec('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1'])
  const server = await startTestServer({
    jobs: { enabled: true, processEverySeconds: 1 },
    modules: { directories: ['tenant-modules'], packages: [packageName] },
    tenants: { acme: { name: 'Acme', modules: ['incident', 'method-statement'] } }
  })
  t.teardown(() => server.close())
  t.same(server.platform.registry.unavailable, [], 'it loads')

  const created = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'method-statement', payload: { title: 'Forklift aisle', site: 'Leeds', priority: 'high' } }
  })
  t.equal(created.status, 201, JSON.stringify(created.body))
  t.match(created.body.number, /^MS-\d{4}-0001$/)
  const submitted = await server.request('POST', `/api/v1/records/${created.body.id}:transition`, {
    body: { transition: 'submit', payload: { owner: '6d1f3c52-3b7e-4c55-9d1e-0c5b8a1f2e11' } }
  })
  t.equal(submitted.status, 200, JSON.stringify(submitted.body))
  t.equal(submitted.body.state, 'submitted')

  const bulk = await server.request('POST', '/api/modules/method-statement/bulk', {
    raw: ['Ladder store', 'Paint booth'].map((title) => JSON.stringify({ payload: { title } })).join('\n') + '\n',
    headers: { 'content-type': 'application/x-ndjson' }
  })
  t.equal(bulk.status, 200)
  t.equal(
    bulk.text
      .trim()
      .split('\n')
      .filter((l) => JSON.parse(l).status === 'created').length,
    2,
    'bulk created two'
  )

  const exported = await server.request('POST', '/api/v1/exports', {
    body: { moduleKey: 'method-statement', format: 'csv' }
  })
  t.equal(exported.status, 202)
  let job = exported.body
  for (let i = 0; i < 100 && job.status !== 'succeeded' && job.status !== 'failed'; i++) {
    await new Promise((r) => setTimeout(r, 200))
    job = (await server.request('GET', `/api/v1/exports/${job.id}`)).body
  }
  t.equal(job.status, 'succeeded', JSON.stringify(job.problem))
  t.equal(job.progress.rowsDone, 3)
  const csv = await fetch(job.download.url).then((r) => r.text())
  t.match(csv.split('\n')[0], /Title.*Site.*Owner.*Due date.*Priority/)

  const graphql = await server.request('POST', '/api/graphql', {
    body: { query: '{ methodStatements(first: 10) { nodes { number state payload { title priority } } } }' }
  })
  t.equal(graphql.status, 200, JSON.stringify(graphql.body.errors))
  t.equal(graphql.body.data.methodStatements.nodes.length, 3)
  t.match(graphql.body.data.methodStatements.nodes, [{ state: 'submitted', payload: { priority: 'HIGH' } }])

  const doc = await server.request('GET', '/api/docs/spec.json')
  t.ok(doc.body.components.schemas.MethodStatementPayload, 'the OpenAPI document types its payload')
  t.match(doc.body.components.schemas.MethodStatementTransition, { enum: ['submit', 'approve', 'return'] })
  const catalogue = await server.request('GET', '/api/v1/module-catalogue')
  t.match(
    catalogue.body.items.find((m: { key: string }) => m.key === 'method-statement'),
    { package: { name: packageName, version: '1.0.0' }, installed: { version: '1.0.0' } }
  )
})
