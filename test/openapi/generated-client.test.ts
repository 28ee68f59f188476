import { execFile } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import t from '../helpers/tap.ts'
import openapiTS, { astToString } from 'openapi-typescript'
import { projectRoot } from '../../core/paths.ts'
import { startTestServer } from '../helpers/server.ts'

const run = promisify(execFile)
const server = await startTestServer()
t.teardown(() => server.close())
const clientDir = join(projectRoot, 'test', 'openapi', 'client')

t.test('a client generated from the tenant document creates, lists and transitions an incident', async (t) => {
  const spec = await server.request('GET', '/api/docs/spec.json', { token: server.keys.acme })
  t.equal(spec.status, 200)
  const source = astToString(await openapiTS(spec.body))
  mkdirSync(join(clientDir, 'generated'), { recursive: true })
  writeFileSync(join(clientDir, 'generated', 'acme.ts'), source)
  t.match(source, /IncidentPayload: \{/, 'the incident payload is a named type')

  // The generated types accept the client's calls and refuse the wrong ones (@ts-expect-error lines).
  const tsc = await run(
    process.execPath,
    [join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(clientDir, 'tsconfig.json')],
    { cwd: projectRoot }
  ).then(
    () => ({ code: 0, out: '' }),
    (err) => ({ code: err.code as number, out: `${err.stdout}${err.stderr}` })
  )
  t.equal(tsc.code, 0, `the client type-checks against the generated types${tsc.out ? `:\n${tsc.out}` : ''}`)

  // Imported by URL, not by a literal path: the project's own type check must not follow it
  // into a file that type-checks only once the generated types exist.
  const client: { createListTransition(url: string, token: string): Promise<any> } = await import(
    pathToFileURL(join(clientDir, 'acme-client.ts')).href
  )
  const { createListTransition } = client
  const result = await createListTransition(server.url, server.keys.acme)
  t.equal(result.created.status, 201)
  t.match(result.created.number, /^INC-\d{4}-\d{5}$/)
  t.equal(result.created.state, 'reported')
  t.equal(result.listed.status, 200)
  t.same(result.listed.numbers, [result.created.number], 'the new incident is listed')
  t.equal(result.listed.nextCursor, null)
  t.equal(result.moved.status, 200)
  t.equal(result.moved.state, 'closed')
  t.equal(result.refused.status, 409, 'a transition not allowed from closed is a typed problem')
  t.equal(result.refused.code, 'transition.not_allowed')
})
