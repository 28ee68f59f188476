import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from '../helpers/tap.ts'
import { runCli } from '../../core/cli/index.ts'
import { projectRoot } from '../../core/paths.ts'
import { plugins } from '../../plugins/index.ts'
import { startTestServer } from '../helpers/server.ts'

const exec = promisify(execFile)
// A few calls start bin/records.js as an operator does (a new node process loading TypeScript,
// 2-4 s; twice that on a busy 2-core machine); the rest run the same CLI in this process.
t.setTimeout(300_000)
const server = await startTestServer()
t.teardown(() => server.close())
const tenants = { acme: { modules: ['incident', 'corrective-action', 'inspection'] } }

/** Runs `bin/records.js` against the test server's database, as an operator would; rejects with the exit code on failure. */
function viaBin(...args: string[]) {
  return exec(process.execPath, ['bin/records.js', ...args], {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: server.platform.db.url, NODE_CONFIG: JSON.stringify({ tenants }) }
  })
}

/** The same CLI in this process (runCli, as the bin calls it): the same answers, without a process start per call. */
async function records(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return recordsWithInput('', ...args).then((r) => {
    if (r.code !== 0) throw Object.assign(new Error(r.stderr), r)
    return r
  })
}

/** Runs the CLI in this process with `input` on its stdin. */
async function recordsWithInput(
  input: string,
  ...args: string[]
): Promise<{ stdout: string; stderr: string; code: number }> {
  let stdout = ''
  let stderr = ''
  const code = await runCli(args, plugins, {
    out: (text) => (stdout += text),
    err: (text) => (stderr += text),
    input: async () => input,
    config: { database: { url: server.platform.db.url }, tenants }
  })
  return { stdout, stderr, code }
}

t.test(
  'bin/records.js runs the CLI as a process: output on stdout, refusals on stderr with exit code 2, failures exit 1',
  async (t) => {
    const { stdout } = await viaBin('tenant', 'list')
    t.match(stdout, /^acme\t.*\tcorrective-action,incident,inspection$/m)
    const refused = await viaBin('token', 'create', '--tenant', 'nobody', '--type', 'api-key', '--name', 'x').then(
      () => undefined,
      (e) => e
    )
    t.equal(refused?.code, 2)
    t.equal(refused?.stderr, 'records: no tenant "nobody" (see: records tenant list)\n')
    // A database that does not answer: a failure, not a refused command line.
    const failed = await exec(process.execPath, ['bin/records.js', 'tenant', 'list'], {
      cwd: projectRoot,
      env: { ...process.env, DATABASE_URL: 'postgres://postgres@127.0.0.1:9/none' }
    }).then(
      () => undefined,
      (e) => e
    )
    t.equal(failed?.code, 1, failed?.stderr)
    t.match(failed?.stderr, /^records: /)
    t.equal(failed?.stderr.trim().split('\n').length, 1, 'one line')
  }
)

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
  while (Date.now() < deadline && status === 200)
    status = (await server.request('GET', '/api/v1/modules', { token })).status
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

const lastLine = (stdout: string) => stdout.trimEnd().split('\n').at(-1)!

t.test(
  'an operator creates a user with a password, grants roles and issues a personal token that acts as that user',
  async (t) => {
    const created = await recordsWithInput(
      'correct horse battery staple\n',
      'user',
      'create',
      '--tenant',
      'acme',
      '--username',
      'maria',
      '--display-name',
      'Maria Lopez',
      '--roles',
      'reporter',
      '--password-stdin'
    )
    t.equal(created.code, 0, created.stderr)
    t.match(created.stdout, /^Created user [0-9a-f-]{36} "maria" in tenant acme; roles: reporter; can sign in\./)
    t.ok(
      await server.platform.users.checkPassword('acme', 'maria', 'correct horse battery staple'),
      'the password from stdin works'
    )

    const issued = await records(
      'token',
      'create',
      '--tenant',
      'acme',
      '--type',
      'personal',
      '--user',
      'maria',
      '--name',
      'laptop'
    )
    const token = lastLine(issued.stdout)
    t.match(token, /^svc_p_[0-9A-Za-z]{40}$/)
    const me = await server.request('GET', '/api/v1/me', { token })
    t.equal(me.body.actor.name, 'maria')
    t.same(me.body.roles, ['reporter'])

    const granted = await records('role', 'grant', '--tenant', 'acme', '--user', 'maria', '--role', 'safety-manager')
    t.match(granted.stdout, /effective reporter, safety-manager/)
    const deadline = Date.now() + 3000
    let roles: string[] = []
    while (Date.now() < deadline && roles.length < 2)
      roles = (await server.request('GET', '/api/v1/me', { token })).body.roles
    t.same(roles, ['reporter', 'safety-manager'], 'the running server sees the new role at once')

    await records('role', 'revoke', '--tenant', 'acme', '--user', 'maria', '--role', 'safety-manager')
    await records('group', 'create', '--tenant', 'acme', '--name', 'Auditors', '--roles', 'auditor')
    const added = await records('group', 'add', '--tenant', 'acme', '--group', 'Auditors', '--user', 'maria')
    t.match(added.stdout, /effective roles now auditor, reporter/)
    const listed = await records('user', 'list', '--tenant', 'acme')
    t.match(listed.stdout, /\tmaria\tactive\troles reporter\tgroups Auditors\teffective auditor,reporter/)
  }
)

t.test('issues service-account tokens with scopes and refuses what the tokens service refuses', async (t) => {
  const issued = await records(
    'token',
    'create',
    '--tenant',
    'acme',
    '--type',
    'service-account',
    '--name',
    'erp',
    '--scopes',
    'records:read:incident,modules:read'
  )
  t.match(issued.stdout, /\(scopes records:read:incident, modules:read\)/)
  const token = lastLine(issued.stdout)
  t.match(token, /^sa_[0-9A-Za-z]{40}$/)
  t.equal((await server.request('GET', '/api/v1/records?moduleKey=incident', { token })).status, 200)
  const refused = await server.request('POST', '/api/v1/records', {
    token,
    body: { moduleKey: 'incident', payload: {} }
  })
  t.equal(refused.body.missingScope, 'records:write')

  const noScopes = await records(
    'token',
    'create',
    '--tenant',
    'acme',
    '--type',
    'service-account',
    '--name',
    'erp'
  ).then(
    () => undefined,
    (e) => e
  )
  t.equal(noScopes.code, 1)
  t.match(noScopes.stderr, /scopes a service-account token needs at least one scope/)
  const badRole = await records('role', 'grant', '--tenant', 'acme', '--user', 'maria', '--role', 'pilot').then(
    () => undefined,
    (e) => e
  )
  t.match(badRole.stderr, /unknown role pilot; roles of this tenant: action-owner, admin, auditor/)
  const noUser = await records(
    'token',
    'create',
    '--tenant',
    'acme',
    '--type',
    'personal',
    '--name',
    'x',
    '--user',
    'ghost'
  ).then(
    () => undefined,
    (e) => e
  )
  t.match(noUser.stderr, /No user "ghost"/)
  const weak = await recordsWithInput(
    'short\n',
    'user',
    'create',
    '--tenant',
    'acme',
    '--username',
    'weak',
    '--password-stdin'
  )
  t.equal(weak.code, 1)
  t.match(weak.stderr, /password must be at least 12 characters/)
  t.equal(weak.stderr.split('must be at least 12 characters').length, 2, 'the error is said once, not twice')
  t.equal(weak.stderr.trim().split('\n').length, 1, 'one line')
})

t.test('lists the roles a tenant can grant and the scope names', async (t) => {
  const roles = await records('role', 'list', '--tenant', 'initech')
  t.match(roles.stdout, /^admin\tmanages users/m)
  t.match(roles.stdout, /^reporter\tincident: read create attachments$/m)
  t.notMatch(roles.stdout, /action-owner/, 'only roles of installed modules')
  const scopes = await records('scopes')
  t.match(scopes.stdout, /^records:read\[:<moduleKey>\]\t/m)
  t.match(scopes.stdout, /^scim\t/m)
})
