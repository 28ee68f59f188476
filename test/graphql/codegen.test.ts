import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { codegen } from '@graphql-codegen/core'
import * as typedDocumentNode from '@graphql-codegen/typed-document-node'
import * as typescriptPlugin from '@graphql-codegen/typescript'
import * as typescriptOperations from '@graphql-codegen/typescript-operations'
import { buildSchema, parse } from 'graphql'
import ts from 'typescript'
import t from '../helpers/tap.ts'
import { projectRoot } from '../../core/paths.ts'
import { startTestServer } from '../helpers/server.ts'

/*
 * A client typed by GraphQL Code Generator from the SDL the service serves: the generated
 * types accept a correct client, refuse a wrong one, and the client runs against the service.
 */

const server = await startTestServer()
t.teardown(() => server.close())
// Outside the project, so that the project's own type check never meets the deliberately wrong
// client; node_modules is linked in so the client resolves graphql there, for tsc and for tsx alike.
const dir = mkdtempSync(join(tmpdir(), 'records-graphql-codegen-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
symlinkSync(join(projectRoot, 'node_modules'), join(dir, 'node_modules'), 'dir')

const operations = /* GraphQL */ `
  query ListIncidents($first: Int, $after: String) {
    incidents(first: $first, after: $after) {
      nodes {
        id
        number
        state
        version
        createdAt
        payload { title site occurredAt severity category injuredPeople regulatorNotified }
      }
      pageInfo { hasNextPage endCursor }
    }
  }

  mutation CreateIncident($payload: IncidentPayloadInput!) {
    createIncident(payload: $payload) { id number state version payload { title severity } }
  }
`

const client = `import type { TypedDocumentNode } from '@graphql-typed-document-node/core'
import { print } from 'graphql'
import { CreateIncidentDocument, ListIncidentsDocument, type IncidentSeverity } from './operations.ts'
import type { IncidentPayload } from './schema.ts'

/** Works on the schema's own type, so a selection of the operations' types must fit it. */
export const headline = (p: Pick<IncidentPayload, 'title' | 'severity'>) => (p.severity ?? 'UNRATED') + ': ' + (p.title ?? '')

/** One GraphQL request, its variables and result typed by the document. */
export async function request<Result, Variables>(url: string, token: string, document: TypedDocumentNode<Result, Variables>, variables: Variables): Promise<Result> {
  const res = await fetch(url + '/api/graphql', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    body: JSON.stringify({ query: print(document), variables })
  })
  const body = (await res.json()) as { data?: Result | null; errors?: Array<{ message: string }> }
  if (!body.data) throw new Error(res.status + ': ' + (body.errors ?? []).map((e) => e.message).join('; '))
  return body.data
}

export async function reportAndList(url: string, token: string) {
  const severity: IncidentSeverity = 'HIGH'
  const payload = { title: 'Solvent spill', description: 'Drum tipped in bay 3', occurredAt: '2026-11-20T08:30:00Z', site: 'Leeds DC', category: 'NEAR_MISS' as const, severity }
  const { createIncident } = await request(url, token, CreateIncidentDocument, { payload })
  // A mutation field is nullable (a failed one is null beside the others' results), so the type says check it.
  if (!createIncident) throw new Error('the incident was not created')
  const created: { number: string; version: number; title: string | null | undefined } = { number: createIncident.number, version: createIncident.version, title: createIncident.payload.title }
  const { incidents } = await request(url, token, ListIncidentsDocument, { first: 10 })
  const listed: Array<{ number: string; title?: string | null; severity?: IncidentSeverity | null; injured?: number | null }> = incidents.nodes.map((n) => ({
    number: n.number,
    title: n.payload.title,
    severity: n.payload.severity,
    injured: n.payload.injuredPeople
  }))
  const more: boolean = incidents.pageInfo.hasNextPage
  return { created, listed, more, headlines: incidents.nodes.map((n) => headline(n.payload)) }
}
`

// Each line marked `// wrong:` must get a diagnostic, and no other line.
const wrongClient = `import { CreateIncidentDocument, ListIncidentsDocument } from './operations.ts'
import type { IncidentPayload } from './schema.ts'
import { request } from './client.ts'

export async function wrong(url: string, token: string) {
  const { incidents } = await request(url, token, ListIncidentsDocument, { first: 10 })
  const title: number = incidents.nodes[0].payload.title // wrong: a text field is a string
  const cause = incidents.nodes[0].payload.rootCause // wrong: not selected by the document
  const page: string = incidents.pageInfo.hasNextPage // wrong: a Boolean! is a boolean
  await request(url, token, ListIncidentsDocument, { first: '10' }) // wrong: first is an Int
  const base = { title: 'x', description: 'y', occurredAt: '2026-11-20T08:30:00Z', site: 'Leeds DC', category: 'NEAR_MISS' as const }
  await request(url, token, CreateIncidentDocument, { payload: { ...base, severity: 'medium' } }) // wrong: not a value of IncidentSeverity
  await request(url, token, CreateIncidentDocument, { payload: { title: 'x' } }) // wrong: required payload fields missing
  const lost: IncidentPayload['lostTimeDays'] = 'two days' // wrong: a Float is a number
  return { title, cause, page, lost }
}
`

t.test('a client generated from the served SDL type-checks, refuses wrong field types and runs', async (t) => {
  const sdl = await server.request('GET', '/api/graphql/schema.graphql', { token: server.keys.acme })
  t.equal(sdl.status, 200)
  t.match(sdl.headers.get('content-type'), /^application\/graphql/)

  // Two files, as a client project would keep them: the schema's types (typescript) and the
  // operations' types with their typed documents (typescript-operations, which since v6 emits the
  // inputs and enums it needs itself, so the two cannot share a file without duplicates).
  const schema = { schema: parse(sdl.text), schemaAst: buildSchema(sdl.text) }
  // strictScalars: a scalar the service adds without a mapping here fails generation, not a silent `any`.
  const config = {
    strictScalars: true,
    scalars: { Date: 'string', DateTime: 'string', JSON: 'unknown' },
    enumsAsTypes: true,
    useTypeImports: true
  }
  const [schemaTypes, operationTypes] = await Promise.all([
    codegen({
      ...schema,
      filename: join(dir, 'schema.ts'),
      documents: [],
      plugins: [{ typescript: {} }],
      pluginMap: { typescript: typescriptPlugin },
      config
    }),
    codegen({
      ...schema,
      filename: join(dir, 'operations.ts'),
      documents: [{ location: 'operations.graphql', document: parse(operations) }],
      plugins: [{ typescriptOperations: {} }, { typedDocumentNode: {} }],
      pluginMap: { typescriptOperations, typedDocumentNode },
      config
    })
  ])
  t.match(schemaTypes, /export type IncidentPayload = \{/, 'the incident payload is a generated type')
  t.match(operationTypes, /export const CreateIncidentDocument = /, 'each operation is a typed document')
  writeFileSync(join(dir, 'schema.ts'), schemaTypes)
  writeFileSync(join(dir, 'operations.ts'), operationTypes)
  writeFileSync(join(dir, 'client.ts'), client)
  writeFileSync(join(dir, 'wrong.ts'), wrongClient)

  const program = ts.createProgram(
    ['schema.ts', 'operations.ts', 'client.ts', 'wrong.ts'].map((f) => join(dir, f)),
    {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      allowImportingTsExtensions: true,
      skipLibCheck: true,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
      types: []
    }
  )
  const diagnostics = ts.getPreEmitDiagnostics(program)
  const show = (d: ts.Diagnostic) => {
    const at =
      d.file && d.start !== undefined
        ? `${d.file.fileName.slice(dir.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1} `
        : ''
    return `${at}TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`
  }
  const inWrong = (d: ts.Diagnostic) => d.file?.fileName === join(dir, 'wrong.ts')
  t.same(diagnostics.filter((d) => !inWrong(d)).map(show), [], 'the generated types and the client have no diagnostics')

  const marked = wrongClient.split('\n').flatMap((line, i) => (line.includes('// wrong:') ? [i + 1] : []))
  const flagged = [
    ...new Set(diagnostics.filter(inWrong).map((d) => d.file!.getLineAndCharacterOfPosition(d.start!).line + 1))
  ]
  t.same(
    flagged.sort((a, b) => a - b),
    marked,
    'each wrong use is refused, and nothing else',
    { diagnostics: diagnostics.filter(inWrong).map(show) }
  )

  // Imported by URL (tsx compiles it): the project's type check must not follow it.
  const run: { reportAndList(url: string, token: string): Promise<any> } = await import(
    pathToFileURL(join(dir, 'client.ts')).href
  )
  const result = await run.reportAndList(server.url, server.keys.acme)
  t.match(result.created, { number: /^INC-\d{4}-\d{5}$/, version: 1, title: 'Solvent spill' })
  t.match(
    result.listed,
    [{ number: result.created.number, title: 'Solvent spill', severity: 'HIGH', injured: null }],
    'the listed record has the shapes the types promise'
  )
  t.equal(result.more, false)
  t.same(result.headlines, ['HIGH: Solvent spill'])
})
