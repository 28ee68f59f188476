import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * The served Postman collection writes to the tenant of the token it runs with: nothing it
 * sends may land on data the tenant already has. The bulk request upserted `externalRef:
 * HR-2291`, the reference the bulk docs use, and so turned a real incident into the example.
 */
const server = await startTestServer()
t.teardown(() => server.close())
const token = server.keys.acme

const collection = (await server.request('GET', '/api/docs/postman.json', { token })).body
const requests: any[] = collection.item.flatMap((f: any) => f.item)
const writes = requests.filter((r) => !['GET', 'HEAD', 'OPTIONS'].includes(r.request.method))

/** The JSON values of a raw body: one for JSON, one per line for NDJSON. */
function bodyValues(raw: string | undefined): any[] {
  if (!raw) return []
  try {
    return [JSON.parse(raw)]
  } catch {
    return raw
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l))
  }
}

/** Every value of `name` at any depth. */
function valuesOf(value: unknown, name: string): unknown[] {
  if (Array.isArray(value)) return value.flatMap((v) => valuesOf(v, name))
  if (!value || typeof value !== 'object') return []
  return Object.entries(value).flatMap(([k, v]) => [...(k === name ? [v] : []), ...valuesOf(v, name)])
}

/** The references and keys the docs show as examples: a reader may well have loaded them. */
const documented = new Set(
  readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .flatMap((f) =>
      [
        ...readFileSync(`docs/${f}`, 'utf8').matchAll(/"?(?:externalRef|Idempotency-Key)"?\s*[:=]\s*"?([^"\s,}]+)/gi)
      ].map((m) => m[1])
    )
)

t.test('no request that writes sends a fixed externalRef or Idempotency-Key, nor one the docs use', async (t) => {
  const refs = writes.flatMap((r) =>
    bodyValues(r.request.body?.raw)
      .flatMap((v) => valuesOf(v, 'externalRef'))
      .map((ref) => [r.name, ref])
  )
  t.ok(refs.length, 'the collection has requests that send an externalRef (the bulk load)')
  for (const [name, ref] of refs) {
    t.match(ref, /\{\{\$guid\}\}/, `${name}: externalRef ${JSON.stringify(ref)} is fresh on every send`)
    t.notOk(documented.has(ref), `${name}: ${ref} is no reference the docs use`)
  }
  for (const r of writes) {
    for (const h of r.request.header.filter((h: any) => /^idempotency-key$/i.test(h.key))) {
      t.match(h.value, /\{\{\$guid\}\}/, `${r.name}: Idempotency-Key is fresh on every send`)
      t.notOk(documented.has(h.value), `${r.name}: the Idempotency-Key is none the docs use`)
    }
  }
})

t.test(
  'the bulk request as Postman sends it leaves the records with the references of the docs and the document alone',
  async (t) => {
    const spec = (await server.request('GET', '/api/docs/spec.json', { token })).body
    const examples = valuesOf(spec.paths, 'externalRef').filter((v): v is string => typeof v === 'string')
    const references = [...new Set([...documented, ...examples])].filter(
      (r) => /^\S(.*\S)?$/.test(r) && !r.includes('{')
    )
    t.ok(references.includes('HR-2291'), "the bulk docs' reference is among them")
    const real: any[] = []
    for (const externalRef of references) {
      const created = await server.request('POST', '/api/v1/records', {
        token,
        body: {
          moduleKey: 'incident',
          externalRef,
          payload: incidentPayload({ title: `Real incident ${externalRef}` })
        }
      })
      t.equal(created.status, 201, `a real incident with externalRef ${externalRef}`)
      real.push(created.body)
    }
    const bulk = writes.find((r) => r.request.url.raw.endsWith('/api/modules/incident/bulk'))
    t.ok(bulk, 'the collection has the incident bulk request')
    const raw = bulk.request.body.raw.replace(/\{\{\$guid\}\}/g, () => randomUUID())
    const path = bulk.request.url.raw.replace('{{baseUrl}}', '')
    const res = await fetch(server.url + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' },
      body: raw
    })
    t.equal(res.status, 200)
    t.match(await res.text(), /"status":"created"/, 'the example row creates a record of its own')
    for (const r of real) {
      const after = await server.request('GET', `/api/v1/records/${r.id}`, { token })
      t.same(
        [after.body.payload.title, after.body.version],
        [r.payload.title, r.version],
        `the incident with externalRef ${r.externalRef} is unchanged`
      )
    }
  }
)

t.test(
  'the collection says, before anything else, what its requests write and that their references are fresh',
  async (t) => {
    t.match(collection.info.description, /writes to the tenant of your `token`/)
    t.match(collection.info.description, /externalRef/)
    t.match(collection.info.description, /\{\{\$guid\}\}/)
  }
)
