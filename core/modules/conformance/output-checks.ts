import { setTimeout as sleep } from 'node:timers/promises'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { pascal } from '../../openapi/builder.ts'
import { describeReply, expect } from './client.ts'
import type { KitContext, KitRecord } from './kit.ts'

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void

/** What each export format must download as: its content type, and how its bytes begin. */
const formats = {
  csv: { type: /^text\/csv/, magic: undefined },
  xlsx: { type: /^application\/vnd\.openxmlformats-officedocument\.spreadsheetml\.sheet/, magic: 'PK\x03\x04' },
  pdf: { type: /^application\/pdf/, magic: '%PDF-' }
} as const

/** Rows of a CSV text (quoted fields may hold line breaks and doubled quotes), the header included. */
export function csvRowCount(text: string): number {
  let rows = 0
  let quoted = false
  let content = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === '"') quoted = !quoted
    else if (c === '\n' && !quoted) {
      if (content) rows++
      content = false
      continue
    } else if (c === '\r' && !quoted) continue
    content = true
  }
  return rows + (content ? 1 : 0)
}

/** Bulk (NDJSON, one bad row), exports in every format, the OpenAPI document, the GraphQL schema. */
export async function outputChecks(ctx: KitContext): Promise<void> {
  await bulkCheck(ctx)
  await exportChecks(ctx)
  const record = await openApiCheck(ctx)
  await graphqlCheck(ctx, record)
}

/** Three NDJSON rows, the second with an unknown field: two created, one refused naming the field, and the summary. */
async function bulkCheck(ctx: KitContext): Promise<void> {
  const { m, http, admin } = ctx
  const unknown = 'conformanceKitUnknownField'
  await ctx.check('loads NDJSON rows in bulk with one outcome per row, the bad row refused', async () => {
    const rows = [
      { payload: ctx.sample(false) },
      { payload: { ...ctx.sample(false), [unknown]: 1 } },
      { payload: ctx.sample(true) }
    ]
    const res = await http.request('POST', `/api/modules/${encodeURIComponent(m.key)}/bulk`, {
      token: admin,
      raw: rows.map((r) => JSON.stringify(r)).join('\n') + '\n',
      headers: { 'content-type': 'application/x-ndjson' }
    })
    expect(res.status === 200, `bulk answered ${describeReply(res)}`)
    const lines = res.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    const [first, bad, third, summary] = lines
    expect(
      first?.status === 'created' && third?.status === 'created',
      `the good rows: ${first?.status}, ${third?.status}`
    )
    expect(bad?.status === 'error', `the bad row: ${bad?.status}`)
    expect(
      bad.problem?.errors?.some((e: { field: string }) => e.field === `payload.${unknown}`),
      `the bad row's problem does not name payload.${unknown}: ${JSON.stringify(bad.problem)}`
    )
    expect(
      summary?.summary?.created === 2 && summary.summary.errors === 1 && summary.summary.complete === true,
      `summary ${JSON.stringify(summary?.summary)}`
    )
    return `lines 1 and 3 created, line 2 ${bad.problem.code}`
  })
}

/** Each format: the job completes, the file downloads as its type, and holds a row per live record. */
async function exportChecks(ctx: KitContext): Promise<void> {
  const { m, http, admin } = ctx
  /** The module's live records, as the list counts them (every page). */
  async function liveCount(): Promise<number> {
    let n = 0
    let cursor: string | null = null
    for (let page = 0; page < 50; page++) {
      const res = await http.request(
        'GET',
        `/api/v1/records?moduleKey=${encodeURIComponent(m.key)}&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { token: admin }
      )
      expect(res.status === 200, `the list answered ${describeReply(res)}`)
      n += res.body.items.length
      cursor = res.body.nextCursor
      if (!cursor) return n
    }
    return n
  }

  for (const [format, expected] of Object.entries(formats)) {
    await ctx.check(`exports its records to ${format.toUpperCase()} and downloads the file`, async () => {
      const records = await liveCount()
      const started = await http.request('POST', '/api/v1/exports', {
        token: admin,
        body: { moduleKey: m.key, format }
      })
      expect(started.status === 202, `POST /api/v1/exports answered ${describeReply(started)}`)
      let job = started.body
      const deadline = Date.now() + ctx.options.exportTimeoutMs
      while (!['succeeded', 'failed', 'expired'].includes(job.status)) {
        expect(Date.now() < deadline, `still ${job.status} after ${ctx.options.exportTimeoutMs / 1000} s`)
        await sleep(250)
        const polled = await http.request('GET', `/api/v1/exports/${job.id}`, { token: admin })
        expect(polled.status === 200, `GET of the export answered ${describeReply(polled)}`)
        job = polled.body
      }
      expect(job.status === 'succeeded', `the export ${job.status}: ${JSON.stringify(job.problem)}`)
      expect(job.progress.rowsDone === records, `${job.progress.rowsDone} rows exported of ${records} listed`)
      const file = await http.request('GET', job.download.url, { headers: job.download.headers ?? {} })
      expect(file.status === 200, `the download answered ${file.status}`)
      const type = file.headers.get('content-type') ?? ''
      expect(expected.type.test(type), `the file came as ${type}`)
      if (expected.magic)
        expect(file.bytes.subarray(0, expected.magic.length).toString('latin1') === expected.magic, 'not a real file')
      if (format === 'csv') {
        const rows = csvRowCount(file.text.replace(/^\uFEFF/, '')) - 1
        expect(rows === records, `the CSV holds ${rows} rows for ${records} records`)
      }
      return `${records} rows, ${file.bytes.length} bytes`
    })
  }
}

/** The module's schemas and bulk path in the OpenAPI document; a full payload and a record read validate. */
async function openApiCheck(ctx: KitContext): Promise<KitRecord | undefined> {
  const { m, http, admin } = ctx
  let record: KitRecord | undefined
  await ctx.check('describes the module in the OpenAPI document, and a record validates against it', async () => {
    const doc = await http.request('GET', '/api/docs/spec.json', { token: admin })
    expect(doc.status === 200, `the document answered ${describeReply(doc)}`)
    const name = pascal(m.key)
    const schemas = doc.body.components?.schemas ?? {}
    const missing = [`${name}Payload`, `${name}Record`, `${name}State`, `${name}Transition`].filter((s) => !schemas[s])
    expect(!missing.length, `no schema ${missing.join(', ')}`)
    const bulkPath = `/api/modules/${m.key}/bulk`
    expect(doc.body.paths?.[bulkPath], `no path ${bulkPath}`)
    const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true })
    addFormats(ajv)
    ajv.addSchema(doc.body, 'doc')
    const payload = ctx.sample(true)
    const payloadValid = ajv.validate({ $ref: `doc#/components/schemas/${name}Payload` }, payload)
    expect(payloadValid, `a full payload breaks ${name}Payload: ${ajv.errorsText()}`)
    record = await ctx.create(payload)
    const got = await http.request('GET', `/api/v1/records/${record.id}`, { token: admin })
    const valid = ajv.validate({ $ref: `doc#/components/schemas/${name}Record` }, got.body)
    expect(valid, `a record read breaks ${name}Record: ${ajv.errorsText()}`)
    return `${name}Payload, ${name}Record, ${bulkPath}`
  })
  return record
}

/** The record's GraphQL type (from the `record` query), its payload type's fields, and their values for a record. */
async function graphqlCheck(ctx: KitContext, made: KitRecord | undefined): Promise<void> {
  const { m, http, admin } = ctx
  let record = made
  await ctx.check('types the module in the GraphQL schema, and a query of a record returns its fields', async () => {
    record ??= await ctx.create(ctx.sample(true))
    const gql = async (query: string, variables: Record<string, unknown> = {}) => {
      const res = await http.request('POST', '/api/graphql', { token: admin, body: { query, variables } })
      expect(
        res.status === 200 && !res.body.errors,
        `GraphQL answered ${describeReply(res)} ${JSON.stringify(res.body?.errors ?? '')}`
      )
      return res.body.data
    }
    const typename = (await gql('query($id: ID!) { record(id: $id) { __typename } }', { id: record.id })).record
      ?.__typename
    expect(typename, 'the record query found no record')
    const payloadType = (
      await gql(
        'query($name: String!) { __type(name: $name) { fields { name type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }',
        { name: `${typename}Payload` }
      )
    ).__type
    expect(payloadType, `no type ${typename}Payload`)
    type TypeRef = { kind: string; name: string | null; ofType?: TypeRef | null }
    const leaf = (t: TypeRef): TypeRef => (t.ofType ? leaf(t.ofType) : t)
    const fields = new Map<string, TypeRef>(
      payloadType.fields.map((f: { name: string; type: TypeRef }) => [f.name, leaf(f.type)])
    )
    const absent = m.fields.filter((f) => !fields.has(f.key)).map((f) => f.key)
    expect(!absent.length, `${typename}Payload lacks ${absent.join(', ')}`)
    const selection = m.fields
      .map((f) => (fields.get(f.key)!.kind === 'OBJECT' ? `${f.key} { __typename }` : f.key))
      .join(' ')
    const data = await gql(
      `query($id: ID!) { record(id: $id) { ... on ${typename} { id state payload { ${selection} } } } }`,
      {
        id: record.id
      }
    )
    const got = data.record.payload
    const empty = Object.keys(record.payload).filter((k) => got[k] === null || got[k] === undefined)
    expect(!empty.length, `the query returns no value for ${empty.join(', ')}`)
    const plain = m.fields.filter((f) => ['text', 'longText', 'integer', 'number', 'boolean', 'date'].includes(f.type))
    const differ = plain.filter((f) => f.key in record!.payload && got[f.key] !== record!.payload[f.key])
    expect(!differ.length, `the query returns other values for ${differ.map((f) => f.key).join(', ')}`)
    return `type ${typename}, ${Object.keys(record.payload).length} fields`
  })
}
