import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from '../helpers/tap.ts'
import { Validator } from '@seriousme/openapi-schema-validator'
import { projectRoot } from '../../core/paths.ts'
import { toDocumentSchema } from '../../core/openapi/builder.ts'
import { startTestServer } from '../helpers/server.ts'
import { userWithToken } from '../helpers/identity.ts'

const run = promisify(execFile)
const server = await startTestServer()
const dir = mkdtempSync(join(tmpdir(), 'records-openapi-'))
t.teardown(async () => {
  rmSync(dir, { recursive: true, force: true })
  await server.close()
})

const spec = (token?: string | null, headers?: Record<string, string>) =>
  server.request('GET', '/api/docs/spec.json', { token, headers })
const generic = (await spec(null)).body
const acme = (await spec(server.keys.acme)).body
const initech = (await spec(server.keys.initech)).body

t.test('the generic and the tenant documents validate as OpenAPI 3.1', async (t) => {
  for (const [name, doc] of [
    ['generic', generic],
    ['acme', acme],
    ['initech', initech]
  ] as const) {
    t.equal(doc.openapi, '3.1.0')
    const result = await new Validator().validate(doc)
    t.ok(result.valid, `${name} is valid${result.valid ? '' : `: ${JSON.stringify(result.errors).slice(0, 2000)}`}`)
  }
})

t.test('the documents lint clean with the Redocly recommended ruleset', async (t) => {
  for (const [name, doc] of [
    ['generic', generic],
    ['acme', acme]
  ] as const) {
    const file = join(dir, `${name}.json`)
    writeFileSync(file, JSON.stringify(doc))
    const out = await run(
      process.execPath,
      [join(projectRoot, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js'), 'lint', '--format=stylish', file],
      {
        cwd: dir,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' }
      }
    ).then(
      (r) => ({ code: 0, text: r.stdout + r.stderr }),
      (err) => ({ code: err.code as number, text: `${err.stdout}${err.stderr}` })
    )
    t.equal(out.code, 0, `${name}: no errors`)
    // (Redocly's banner about Node 20 support is a "Deprecation warning" too: count lint warnings only.)
    t.notMatch(
      out.text,
      /You have \d+ warning/,
      `${name}: no warnings${/You have \d+ warning/.test(out.text) ? `\n${out.text}` : ''}`
    )
  }
})

t.test('every endpoint of the service is described, with its scope and problem responses', async (t) => {
  const ops = Object.entries(generic.paths).flatMap(([path, item]: [string, any]) =>
    Object.keys(item)
      .filter((k) => k !== 'parameters')
      .map((verb) => `${verb.toUpperCase()} ${path}`)
  )
  for (const op of [
    'GET /api/v1/records',
    'POST /api/v1/records',
    'GET /api/v1/records/{id}',
    'PATCH /api/v1/records/{id}',
    'DELETE /api/v1/records/{id}',
    'POST /api/v1/records/{id}:transition',
    'POST /api/modules/{moduleKey}/bulk',
    'POST /api/v1/attachments',
    'GET /api/v1/attachments/{id}',
    'POST /api/v1/exports',
    'GET /api/v1/exports/{id}',
    'GET /api/v1/modules',
    'GET /api/v1/modules/{moduleKey}',
    'GET /api/v1/audit-log',
    'GET /api/v1/tokens',
    'POST /api/v1/tokens',
    'DELETE /api/v1/tokens/{id}',
    'GET /api/v1/me',
    'GET /api/docs/spec.json'
  ]) {
    t.ok(ops.includes(op), op)
  }
  const create = generic.paths['/api/v1/records'].post
  t.same(create.security, [{ bearerAuth: ['records:write'] }, { sessionCookie: ['records:write'] }])
  t.same(Object.keys(create.responses).sort(), [
    '201',
    '400',
    '401',
    '403',
    '404',
    '409',
    '413',
    '414',
    '415',
    '422',
    '429',
    '431',
    '500',
    // module.unavailable: the module is installed but its package did not load
    '503'
  ])
  t.equal(create.responses['409'].$ref, '#/components/responses/Conflict')
  t.ok(
    create.parameters.some((p: any) => p.in === 'header' && p.name === 'Idempotency-Key' && p.example),
    'Idempotency-Key, with an example of its own'
  )
  t.ok(create.responses['201'].headers['X-RateLimit-Reset'], 'rate-limit headers on responses')
  t.same(generic.components.schemas.Problem.required, ['type', 'title', 'status', 'detail', 'code', 'traceId'])
  t.match(generic.components.responses.TooManyRequests.headers, { 'Retry-After': {} })
  t.match(generic.components.securitySchemes.bearerAuth.description, /records:read/)
})

t.test("without a credential the document is generic; with an API key it types the tenant's modules", async (t) => {
  t.notOk(generic.components.schemas.IncidentPayload, 'no module schemas in the generic document')
  t.match(acme.info.title, /Acme Chemicals/)
  for (const name of ['Incident', 'CorrectiveAction', 'Inspection'])
    t.ok(acme.components.schemas[`${name}Payload`], `${name}Payload`)
  t.same(
    Object.keys(initech.components.schemas).filter((k) => k.endsWith('Payload')),
    ['IncidentPayload'],
    'initech has only incidents'
  )

  const incident = server.platform.registry.get('incident')!
  t.same(
    acme.components.schemas.IncidentPayload.properties,
    toDocumentSchema(incident.schema).properties,
    'the payload schema is the one the validator uses'
  )
  t.same(acme.components.schemas.IncidentPayload.required, incident.schema.required)
  t.same(
    acme.components.schemas.IncidentState.enum,
    incident.definition.workflow.states.map((s) => s.key)
  )
  t.same(
    acme.components.schemas.IncidentTransition.enum,
    incident.definition.workflow.transitions.map((x) => x.key)
  )
  t.same(acme.paths['/api/v1/records'].get.parameters[0].schema.enum, ['corrective-action', 'incident', 'inspection'])
  const body = acme.paths['/api/v1/records'].post.requestBody.content['application/json']
  t.equal(body.schema.discriminator.propertyName, 'moduleKey')
  t.equal(body.schema.discriminator.mapping.incident, '#/components/schemas/IncidentRecordCreate')
  t.equal(
    body.example.moduleKey,
    'incident',
    'an example built from the required fields of the first module that references no other record (corrective-action needs an incident)'
  )
})

t.test('a user sees the modules their roles reach, and a bad token is refused', async (t) => {
  const reporter = await userWithToken(server, 'acme', ['reporter'])
  const doc = (await spec(reporter.token)).body
  const payloads = Object.keys(doc.components.schemas)
    .filter((k) => k.endsWith('Payload'))
    .sort()
  t.ok(payloads.includes('IncidentPayload'))
  t.ok(payloads.length < 3, `a reporter does not get every module (${payloads.join(', ')})`)
  const bad = await spec('svc_k_notatoken')
  t.equal(bad.status, 401)
  t.match(bad.headers.get('content-type'), /^application\/problem\+json/)
})

t.test('documents are cached per tenant and module versions, with an ETag', async (t) => {
  const first = await spec(server.keys.acme)
  const again = await spec(server.keys.acme)
  const etag = first.headers.get('etag')!
  t.ok(etag)
  t.equal(again.headers.get('etag'), etag, 'same tenant, same modules: same document')
  t.not((await spec(server.keys.initech)).headers.get('etag'), etag, 'another tenant, another document')
  t.equal(first.headers.get('cache-control'), 'private, no-cache')
  const notModified = await spec(server.keys.acme, { 'if-none-match': etag })
  t.equal(notModified.status, 304)
  t.equal(notModified.text, '')
})

t.test('problem type URIs in the document resolve to human-readable pages', async (t) => {
  const type: string = acme.components.responses.Conflict.content['application/problem+json'].example.type
  t.match(type, /\/errors\/conflict$/)
  const page = await fetch(type)
  t.equal(page.status, 200)
  t.match(page.headers.get('content-type'), /text\/html/)
  t.match(await page.text(), /Conflict/)
})
