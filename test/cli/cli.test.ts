import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { projectRoot } from '../../core/paths.ts'
import { startTestServer } from '../helpers/server.ts'

const exec = promisify(execFile)
const server = await startTestServer()
t.teardown(() => server.close())

/** Runs the CLI against the test server's database, as an operator would. */
function records(...args: string[]) {
  return exec(process.execPath, ['bin/records.js', ...args], {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: server.platform.db.url, NODE_CONFIG: JSON.stringify({ tenants: { acme: { modules: ['incident', 'corrective-action', 'inspection'] } } }) }
  })
}

t.test('lists tenants with their installed modules', async (t) => {
  const { stdout } = await records('tenant', 'list')
  t.match(stdout, /^acme\t.*\tcorrective-action,incident,inspection$/m)
  t.match(stdout, /^initech\t.*\tincident$/m)
})

t.test('creates an API key printed alone on the last line, which then works and can be revoked at once', async (t) => {
  const { stdout } = await records('token', 'create', '--tenant', 'acme', '--type', 'api-key', '--name', 'integration')
  const lines = stdout.trimEnd().split('\n')
  const token = lines[lines.length - 1]
  t.match(token, /^svc_k_[0-9A-Za-z]{40}$/)
  const ok = await server.request('GET', '/api/v1/modules', { token })
  t.equal(ok.status, 200)

  const listed = await records('token', 'list', '--tenant', 'acme')
  t.notOk(listed.stdout.includes(token), 'the secret is never listed')
  const row = listed.stdout.split('\n').find((l) => l.includes('integration'))!
  t.match(row, /\tactive\t/)
  const id = row.split('\t')[0]

  const revoked = await records('token', 'revoke', id)
  t.match(revoked.stdout, /^Revoked /)
  // The running server learns of the revocation through NOTIFY, not after its cache expires.
  const deadline = Date.now() + 2000
  let status = 200
  while (Date.now() < deadline && status === 200) status = (await server.request('GET', '/api/v1/modules', { token })).status
  t.equal(status, 401)
  const after = await server.request('GET', '/api/v1/modules', { token })
  t.equal(after.body.code, 'auth.revoked')
})

t.test('refuses an unknown tenant, a missing name and an unknown command with exit code 2', async (t) => {
  for (const args of [
    ['token', 'create', '--tenant', 'nobody', '--type', 'api-key', '--name', 'x'],
    ['token', 'create', '--tenant', 'acme', '--type', 'api-key'],
    ['token', 'create', '--tenant', 'acme', '--type', 'root', '--name', 'x'],
    ['frobnicate']
  ]) {
    const err = await records(...args).then(
      () => undefined,
      (e) => e
    )
    t.equal(err?.code, 2, args.join(' '))
    t.match(err?.stderr, /^records: /)
  }
})

t.test('migrate reports an up-to-date schema', async (t) => {
  const { stdout } = await records('migrate')
  t.equal(stdout.trim(), 'Schema is up to date.')
})
