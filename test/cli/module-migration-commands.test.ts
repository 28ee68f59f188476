// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import t from '../helpers/tap.ts'
import { records } from '../helpers/cli.ts'
import { freshDatabase } from '../helpers/database.ts'
import { fixtureModules, permitMigrations } from '../helpers/fixture-modules.ts'
import { startTestServer } from '../helpers/server.ts'

/**
 * Module migrations from the command line, as an author and an operator use them: `records module check --previous`
 * moves sample records of the published version through the new package's migrations and fails a release whose
 * migration leaves one invalid; `records module diff` shows the migration chain and what it leaves unanswered;
 * `records module dry-run` lists every record a version would refuse and writes nothing; `records module migrations`
 * shows the background job's run and every record it refused.
 */
t.setTimeout(300_000)
const work = mkdtempSync(join(tmpdir(), 'records-migration-cli-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))
// The job scheduler of the start with jobs leaves a timer behind: the process ends after the teardown.
t.teardown(() => void setTimeout(() => process.exit(), 200).unref())

const v1 = {
  key: 'permit',
  version: '1.0.0',
  title: 'Permit',
  numberPattern: 'PTW-{seq:5}',
  fields: [
    { key: 'title', type: 'text', required: true },
    { key: 'site', type: 'text' },
    { key: 'kind', type: 'singleChoice', options: ['hot-work', 'height'] }
  ],
  workflow: {
    initial: 'open',
    states: [{ key: 'open' }, { key: 'closed' }],
    transitions: [{ key: 'close', from: ['open'], to: 'closed' }]
  },
  permissions: { admin: ['read', 'create', 'update', 'transition:close'] }
}
/** 2.0.0 renames a field, a choice value and a state, and adds a required field. */
const v2 = {
  ...v1,
  version: '2.0.0',
  fields: [
    v1.fields[0],
    { key: 'location', type: 'text' },
    { key: 'kind', type: 'singleChoice', options: ['hot', 'height'] },
    { key: 'risk', type: 'singleChoice', options: ['low', 'high'], required: true }
  ],
  workflow: {
    initial: 'active',
    states: [{ key: 'active' }, { key: 'closed' }],
    transitions: [{ key: 'close', from: ['active'], to: 'closed' }]
  }
}
/** The migration that answers every change; its transform refuses a title that is not text. */
const goodMigrations = permitMigrations()
/** A transform answers every change as far as the release check can tell, but this one changes nothing. */
const lazyMigrations = `export const migrations = [{ from: '^1.0.0', to: '2.0.0', transform: (r) => r }]\n`
/** Steps for the field rename alone: the choice, the required field and the state go unanswered. */
const partialMigrations = `export const migrations = [{ from: '^1.0.0', to: '2.0.0', steps: [{ op: 'renameField', from: 'site', to: 'location' }] }]\n`

/** A module package folder, as `npm pack` would pack it. */
function writePackage(dir: string, definition: Record<string, unknown>, migrations = '') {
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({
      name: '@fixture/permit',
      version: String(definition.version),
      type: 'module',
      'records-module': { entry: 'module.ts', host: '>=0.1.0 <1.0.0' }
    })
  )
  writeFileSync(join(dir, 'module.ts'), `export default ${JSON.stringify(definition)}\n${migrations}`)
  return dir
}
const published = writePackage(join(work, 'permit-1.0.0'), v1)
const good = writePackage(join(work, 'permit-2.0.0'), v2, goodMigrations)
const lazy = writePackage(join(work, 'permit-2.0.0-lazy'), v2, lazyMigrations)
const partial = writePackage(join(work, 'permit-2.0.0-partial'), v2, partialMigrations)

/** Runs the CLI in this process, as bin/records.js does, with `config` on top of the test configuration. */
async function cli(config: Record<string, unknown>, ...args: string[]) {
  const out = await records(args, { config })
  return { ...out, lines: out.stdout.split('\n') }
}

t.test('check --previous passes a release whose migration moves every sample record to a valid one', async (t) => {
  const r = await cli({}, 'module', 'check', good, '--previous', published, '--load-only')
  t.equal(r.code, 0, 'exits 0', { output: r.stdout + r.stderr })
  t.match(r.stdout, /^OK @fixture\/permit@2\.0\.0: module "permit" 2\.0\.0/m)
  t.match(r.stdout, /^Upgrade from @fixture\/permit@1\.0\.0 \(module 1\.0\.0\), in memory:$/m)
  t.match(
    r.stdout,
    /^ {2}ok {3}the release 1\.0\.0 → 2\.0\.0 is accepted: 4 breaking change\(s\), answered by the migrations \^1\.0\.0 → 2\.0\.0 \(with a transform\)$/m
  )
  // Minimal and full, in each of the two states.
  const samples = r.lines.filter((l) =>
    /^ {2}ok {3}a (minimal|full) record of 1\.0\.0 in state "(open|closed)"/.test(l)
  )
  t.equal(samples.length, 4, 'minimal and full, in each state')
  for (const l of samples) t.match(l, /moves to 2\.0\.0 and is valid: moved by the migrations$/, 'moved and valid')
  t.match(r.stdout, /^all 5 checks passed$/m)
})

t.test('check --previous fails a release whose migration leaves a sample record invalid, naming it', async (t) => {
  const r = await cli({}, 'module', 'check', lazy, '--previous', published, '--load-only')
  t.equal(r.code, 1, 'exit 1')
  t.match(r.stdout, /^ {2}ok {3}the release 1\.0\.0 → 2\.0\.0 is accepted/m, 'the release check alone cannot tell')
  t.match(
    r.stdout,
    /^ {2}FAIL a full record of 1\.0\.0 in state "open" moves to 2\.0\.0 and is valid: state "open" is not a state of version 2\.0\.0; .*payload\.site is not an accepted field/m
  )
  t.match(r.stdout, /^ {2}FAIL a minimal record of 1\.0\.0 in state "closed" moves to 2\.0\.0 and is valid: .*risk/m)
  t.match(r.stdout, /^4 of 5 checks failed$/m)
})

t.test('check --previous fails a refused release, one line per change its migrations leave unanswered', async (t) => {
  const r = await cli({}, 'module', 'check', partial, '--previous', published, '--load-only')
  t.equal(r.code, 1)
  t.match(
    r.stdout,
    /^ {2}FAIL the release 1\.0\.0 → 2\.0\.0 is accepted: the migrations from 1\.0\.0 do not answer 3 breaking change\(s\)/m
  )
  for (const change of [
    'field "kind": option "hot-work" removed',
    'field "risk": added as required',
    'workflow state "open": removed'
  ])
    t.ok(r.lines.includes(`  FAIL a migration answers ${change}: no step or transform does`), change)
  t.notMatch(r.stdout, /moves to 2\.0\.0/, 'no sample is moved by a refused release')
  const unmigrated = await cli(
    {},
    'module',
    'check',
    writePackage(join(work, 'permit-2.0.0-none'), v2),
    '--previous',
    published,
    '--load-only'
  )
  t.equal(unmigrated.code, 1)
  t.match(
    unmigrated.stdout,
    /FAIL the release 1\.0\.0 → 2\.0\.0 is accepted: 4 breaking change\(s\) need a migration from 1\.0\.0 declared in the package/
  )
})

t.test('check --previous runs before the conformance kit, which still runs on a scratch database', async (t) => {
  const r = await cli({}, 'module', 'check', good, '--previous', published, '--max-transitions', '2')
  t.equal(r.code, 0, 'exits 0', { output: r.stdout + r.stderr })
  const upgrade = r.stdout.indexOf('Upgrade from')
  const kit = r.stdout.indexOf('Conformance kit')
  t.ok(upgrade > 0 && kit > upgrade, 'the upgrade checks, then the kit')
  t.match(r.stdout.slice(kit), /^all \d+ checks passed$/m)
})

t.test(
  'diff takes the new package’s migrations into account: the chain, and the changes it leaves unanswered',
  async (t) => {
    const ok = await cli({}, 'module', 'diff', published, good)
    t.equal(ok.code, 0, 'exits 0', { output: ok.stdout + ok.stderr })
    t.match(ok.stdout, /^ {2}BREAKING field "site": removed/m)
    t.match(ok.stdout, /^ {2}migrations \^1\.0\.0 → 2\.0\.0 \(with a transform\)$/m)
    t.notMatch(ok.stdout, /UNANSWERED/)
    t.match(ok.stdout, /^OK$/m)
    const refused = await cli({}, 'module', 'diff', published, partial)
    t.equal(refused.code, 1)
    t.match(refused.stdout, /^ {2}migrations \^1\.0\.0 → 2\.0\.0$/m)
    t.match(refused.stdout, /^ {2}UNANSWERED field "kind": option "hot-work" removed$/m)
    t.match(refused.stdout, /^ {2}UNANSWERED workflow state "open": removed$/m)
    t.match(refused.stdout, /^REFUSED: the migrations from 1\.0\.0 do not answer 3 breaking change\(s\)/m)
  }
)

// ---- A deployment with records: 1.0.0 installed, then 2.0.0 with its migration.

const installedDir = fixtureModules([v1])
t.teardown(() => installedDir.remove())
const db = await freshDatabase()
t.teardown(() => db.drop())
const deployment = {
  database: { url: db.url },
  modules: { directories: ['tenant-modules', installedDir.directory] },
  tenants: { acme: { name: 'Acme', modules: ['incident', 'permit'] } }
}
const start = (jobs: boolean) => startTestServer({ ...deployment, jobs: { enabled: jobs, processEverySeconds: 1 } })
const seedActor = `'{"type":"system","id":"seed","name":"seed"}'`
/** Records 1.0.0 stores: one made over REST, 2,400 written as an older deployment had them, every 4th with a title the 2.0.0 transform cannot trim. */
const seeded = 2400
const badCount = seeded / 4
const goodCount = seeded - badCount + 1

/** What a dry run must leave as it was: every record's version and payload, activity, events, migration runs. */
async function fingerprint() {
  const { rows } = await probe.query(`SELECT
      (SELECT md5(string_agg(id || module_version || version || state || payload::text, ',' ORDER BY seq)) FROM records) AS records,
      (SELECT count(*)::int FROM record_activity) AS activity,
      (SELECT count(*)::int FROM events) AS events,
      (SELECT count(*)::int FROM record_migrations) AS runs`)
  return rows[0]
}
const probe = new pg.Pool({ connectionString: db.url, max: 1 })
t.teardown(() => probe.end())

t.test('the tenant stores records under 1.0.0, some of which 2.0.0 will refuse', async (t) => {
  const server = await start(false)
  t.teardown(() => server.close())
  const made = await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'permit', payload: { title: ' Boiler room ', site: 'Leeds', kind: 'hot-work' } }
  })
  t.equal(made.status, 201)
  await server.platform.db.system.query(
    `INSERT INTO records (tenant_id, id, module_key, module_version, number, state, payload, created_by, updated_by)
     SELECT 'acme', gen_random_uuid(), 'permit', '1.0.0', 'OLD-' || lpad(g::text, 5, '0'), 'open',
            CASE WHEN g % 4 = 0 THEN '{"title": 7}'::jsonb
                 ELSE jsonb_build_object('title', ' Permit ' || g, 'site', 'Site ' || g, 'kind', 'height') END,
            ${seedActor}, ${seedActor}
       FROM generate_series(1, ${seeded}) g`
  )
  const { rows } = await server.platform.db.system.query(
    "SELECT count(*)::int AS n FROM records WHERE module_key = 'permit' AND module_version = '1.0.0'"
  )
  t.equal(rows[0].n, goodCount + badCount)
})

t.test('dry-run with the new package lists every record it would refuse, with why, and writes nothing', async (t) => {
  const before = await fingerprint()
  const r = await cli(deployment, 'module', 'dry-run', '--tenant', 'acme', '--module', 'permit', '--package', good)
  t.equal(r.code, 1, 'exit 1: some would be refused')
  t.equal(r.stderr, `records: ${badCount} record(s) of permit would be refused by 2.0.0\n`)
  t.match(r.stdout, /^Dry run of tenant acme's permit records to 2\.0\.0 \(nothing is written\):$/m)
  const refused = r.lines.filter((l) => l.startsWith('  REFUSED '))
  t.equal(refused.length, badCount, 'every one, across the pages of 1000 records')
  t.match(refused[0], /^ {2}REFUSED OLD-00004\t[0-9a-f-]{36}\tfrom 1\.0\.0: the migration refused it: .*trim/)
  t.match(refused[badCount - 1], /^ {2}REFUSED OLD-02400\t/)
  t.match(
    r.stdout,
    new RegExp(
      `^${goodCount + badCount} record\\(s\\) read not under 2\\.0\\.0: ${goodCount} would move, 0 would stay as stored, ${badCount} would be refused$`,
      'm'
    )
  )
  t.same(await fingerprint(), before, 'no record, activity entry, event or run was written')
})

t.test('dry-run refuses a package of another module, a module the tenant lacks and a missing tenant', async (t) => {
  const other = writePackage(join(work, 'other'), { ...v1, key: 'work-order', title: 'Work order' })
  const wrong = await cli(deployment, 'module', 'dry-run', '--tenant', 'acme', '--module', 'permit', '--package', other)
  t.equal(wrong.code, 2)
  t.match(wrong.stderr, /provides module "work-order", not "permit"/)
  const absent = await cli(deployment, 'module', 'dry-run', '--tenant', 'acme', '--module', 'inspection')
  t.equal(absent.code, 2)
  t.match(absent.stderr, /module "inspection" is not installed for tenant acme/)
  t.equal((await cli(deployment, 'module', 'dry-run', '--module', 'permit')).code, 2, '--tenant is required')
  const loaded = await cli(deployment, 'module', 'dry-run', '--tenant', 'acme', '--module', 'permit')
  t.equal(loaded.code, 0, 'against the loaded 1.0.0 nothing is behind')
  t.match(
    loaded.stdout,
    /^0 record\(s\) read not under 1\.0\.0: 0 would move, 0 would stay as stored, 0 would be refused$/m
  )
})

t.test('migrations shows no run before the upgrade', async (t) => {
  const r = await cli(deployment, 'module', 'migrations', '--tenant', 'acme')
  t.equal(r.code, 0, 'exits 0', { output: r.stderr })
  t.equal(r.stdout, 'No module migration has run for tenant acme.\n')
})

t.test(
  'after the upgrade, migrations shows the run and every record it refused, beyond what the API lists',
  async (t) => {
    for (const entry of readdirSync(installedDir.directory))
      rmSync(join(installedDir.directory, entry), { recursive: true })
    writePackage(join(installedDir.directory, 'permit-2'), v2, goodMigrations)
    const server = await start(true)
    t.teardown(() => server.close())
    const deadline = Date.now() + 120_000
    let migration
    do {
      await new Promise((r) => setTimeout(r, 250))
      migration = (await server.request('GET', '/api/v1/modules/permit')).body.migration
    } while (migration?.state !== 'done' && Date.now() < deadline)
    t.match(migration, { state: 'done', refused: badCount })
    t.ok(migration.refusals.length < badCount, `the API lists ${migration.refusals.length} of them`)

    const r = await cli(deployment, 'module', 'migrations', '--tenant', 'acme', '--module', 'permit')
    t.equal(r.code, 0, 'exits 0', { output: r.stderr })
    t.match(
      r.lines[0],
      new RegExp(
        `^permit\\tto 2\\.0\\.0\\tdone\\ttotal ${goodCount + badCount}\\tmigrated ${goodCount}\\trefused ${badCount}\\tremaining ${badCount}\\tstarted \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\tfinished \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z$`
      )
    )
    const refused = r.lines.filter((l) => l.startsWith('  refused '))
    t.equal(refused.length, badCount, 'every refused record, across the pages of 500 refusals')
    const numbers = refused.map((l) => l.split('\t')[0].replace('  refused ', ''))
    t.equal(new Set(numbers).size, badCount, 'each once')
    // The job refuses them a batch at a time, in list order; within a batch (one moment) by number.
    t.same(numbers, [...numbers].sort(), 'in list order')
    const shape = /^ {2}refused OLD-\d{5}\t[0-9a-f-]{36}\tfrom 1\.0\.0: the migration refused it: /
    t.same(
      refused.filter((l) => !shape.test(l)),
      [],
      'each names its number, id, version and reason'
    )
    t.equal(
      (await cli(deployment, 'module', 'migrations', '--tenant', 'acme', '--module', 'incident')).stdout,
      'No module migration has run for tenant acme, module incident.\n'
    )

    // The loaded version is 2.0.0 now: the dry run without a package sees the refused records still behind it.
    const dry = await cli(deployment, 'module', 'dry-run', '--tenant', 'acme', '--module', 'permit')
    t.equal(dry.code, 1)
    t.equal(dry.lines.filter((l) => l.startsWith('  REFUSED ')).length, badCount)
    t.match(
      dry.stdout,
      new RegExp(
        `^${badCount} record\\(s\\) read not under 2\\.0\\.0: 0 would move, 0 would stay as stored, ${badCount} would be refused$`,
        'm'
      )
    )
  }
)
