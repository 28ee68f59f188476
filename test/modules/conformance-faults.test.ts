// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import { records } from '../helpers/cli.ts'

/**
 * The conformance kit catches what loading a definition cannot: each package below loads (the definition is
 * well formed), and `records module check` exits 1 naming the check that failed and why, and only that one.
 */
t.setTimeout(240_000)
const work = mkdtempSync(join(tmpdir(), 'records-kit-faults-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))
// Agenda leaves a referenced timer behind job runs (see test/idempotency/purge-job.test.ts): end the process once done.
t.teardown(() => void setTimeout(() => process.exit(), 200).unref())

const cli = (...args: string[]) => records(args)

const base = join(work, 'base')
const made = await cli('module', 'new', 'permit', '--name', '@fixture-kit/permit', '--dir', base)
if (made.code !== 0) throw new Error(made.stderr)
const source = readFileSync(join(base, 'module.ts'), 'utf8')

/** A copy of the scaffold with its definition changed by `edit` (which must change it). */
function variant(name: string, edit: (text: string) => string): string {
  const dir = join(work, name)
  cpSync(base, dir, { recursive: true })
  const changed = edit(source)
  if (changed === source) throw new Error(`variant ${name} changed nothing`)
  writeFileSync(join(dir, 'module.ts'), changed)
  return dir
}

const failures = (stdout: string) => stdout.split('\n').filter((l) => l.startsWith('  FAIL '))

t.test('the scaffold as written passes every check', async (t) => {
  const ok = await cli('module', 'check', base)
  t.equal(ok.code, 0, ok.stdout + ok.stderr)
  t.same(failures(ok.stdout), [])
})

t.test('a guard field that the only role firing the transition may not write fails that transition', async (t) => {
  const dir = variant('guard-not-writable', (s) =>
    s.replace(
      "{ key: 'owner', type: 'user', label: 'Owner' }",
      "{ key: 'owner', type: 'user', label: 'Owner', access: { read: ['author', 'approver'], write: ['approver'] } }"
    )
  )
  const res = await cli('module', 'check', dir)
  t.equal(res.code, 1, 'exit 1')
  t.match(res.stdout, /^OK @fixture-kit\/permit@1\.0\.0/, 'the definition itself loads')
  t.same(failures(res.stdout), [
    '  FAIL transition "submit": fires from "draft" to "submitted" for a user of author: answered 403 field.forbidden: This credential may not write field "owner" of module "permit"; it needs one of the roles approver.'
  ])
  t.match(res.stdout, /\n1 of \d+ checks failed\n$/)
})

t.test('a transition no role may fire (its roles lack the right) is named', async (t) => {
  // approve names the role approver, but approver's permissions no longer grant it.
  const dir = variant('nobody-fires', (s) =>
    s.replace("'transition:approve', 'transition:return'", "'transition:return'")
  )
  const res = await cli('module', 'check', dir)
  t.equal(res.code, 1)
  t.same(failures(res.stdout), [
    '  FAIL brings a record to where transition "approve" starts: no role of the module may fire it (permissions and its roles have none in common)'
  ])
})

t.test('a transition out of a state the workflow never reaches is named', async (t) => {
  const dir = variant('unreachable', (s) =>
    s
      .replace(
        "{ key: 'approved', label: 'Approved', final: true }",
        "{ key: 'approved', label: 'Approved', final: true },\n      { key: 'archived', label: 'Archived' }"
      )
      .replace(
        "{ key: 'return', label: 'Return to draft'",
        "{ key: 'restore', label: 'Restore', from: ['archived'], to: 'draft', roles: ['approver'] },\n      { key: 'return', label: 'Return to draft'"
      )
      .replace(
        "'transition:approve', 'transition:return'",
        "'transition:approve', 'transition:return', 'transition:restore'"
      )
  )
  const res = await cli('module', 'check', dir)
  t.equal(res.code, 1)
  t.same(failures(res.stdout), [
    '  FAIL brings a record to where transition "restore" starts: none of the states it starts from (archived) is reachable from "draft"'
  ])
})

t.test('--max-transitions bounds the walk and says which transitions it left out', async (t) => {
  const res = await cli('module', 'check', base, '--max-transitions', '1')
  t.equal(res.code, 0, res.stdout)
  t.ok(
    res.stdout.includes(
      "\n  ok   checks the first 1 of the module's 3 transitions (the cap): not checked: approve, return\n"
    ),
    res.stdout
  )
  t.notMatch(res.stdout, /transition "approve"/)
  const bad = await cli('module', 'check', base, '--max-transitions', 'lots')
  t.equal(bad.code, 2)
  t.match(bad.stderr, /--max-transitions takes a positive whole number/)
})
