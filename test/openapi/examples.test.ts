import t from '../helpers/tap.ts'
import type { Json } from '../../core/openapi/builder.ts'
import { defaultTenants, startTestServer } from '../helpers/server.ts'

// A fresh tenant: nothing exists but what the examples themselves create.
const server = await startTestServer({ webhooks: { allowedCidrs: ['203.0.113.0/24'] } })
t.teardown(() => server.close())
const token = server.keys.acme
const doc: Json = (await server.request('GET', '/api/docs/spec.json', { token })).body

interface Example {
  verb: string
  path: string
  contentType: string
  value: unknown
}

/** The request body example of every POST and PATCH of the document. */
const examples: Example[] = Object.entries(doc.paths as Json).flatMap(([path, item]) =>
  ['post', 'patch'].flatMap((verb) => {
    const [contentType, media] = Object.entries((item as Json)[verb]?.requestBody?.content ?? {})[0] ?? []
    return media && (media as Json).example !== undefined
      ? [{ verb: verb.toUpperCase(), path, contentType, value: (media as Json).example }]
      : []
  })
)
const find = (verb: string, path: string) => examples.find((e) => e.verb === verb && e.path === path)
const send = (e: Example, path = e.path, value = e.value) =>
  server.request(e.verb, path, {
    token,
    ...(e.contentType === 'application/x-ndjson'
      ? { raw: `${JSON.stringify(value)}\n`, headers: { 'content-type': e.contentType } }
      : { body: value })
  })

t.test('the tenant document has request examples for every write that takes a body', async (t) => {
  for (const op of [
    'POST /api/v1/records',
    'PATCH /api/v1/records/{id}',
    'POST /api/v1/records/{id}:transition',
    'POST /api/v1/attachments',
    'POST /api/v1/exports',
    'POST /api/v1/tokens',
    'POST /api/modules/incident/bulk'
  ]) {
    t.ok(
      examples.some((e) => `${e.verb} ${e.path}` === op),
      op
    )
  }
})

t.test('each request example of the tenant document is accepted as sent on a fresh tenant', async (t) => {
  // Create first: the examples that act on a record get the one it made, in place of the
  // `{id}` of the path and the body's `recordId` (ids a fresh tenant cannot know in advance).
  const create = await send(find('POST', '/api/v1/records')!)
  t.equal(
    create.status,
    201,
    `POST /api/v1/records as documented${create.status === 201 ? '' : `: ${create.text.slice(0, 500)}`}`
  )
  const id: string = create.body.id
  // The same for a webhook subscription: its example is made first, and its id goes into the paths of its methods.
  const subscribe = await send(find('POST', '/api/v1/webhooks')!)
  t.equal(
    subscribe.status,
    201,
    `POST /api/v1/webhooks as documented${subscribe.status === 201 ? '' : `: ${subscribe.text.slice(0, 500)}`}`
  )
  const idFor = (path: string) => (path.startsWith('/api/v1/webhooks/') ? subscribe.body.id : id)
  const order = (e: Example) => (e.path.endsWith(':transition') ? 1 : 0)
  const rest = examples
    .filter((e) => !(e.verb === 'POST' && ['/api/v1/records', '/api/v1/webhooks'].includes(e.path)))
    .sort((a, b) => order(a) - order(b))
  t.ok(rest.length >= 6, `${rest.length} more examples`)
  for (const e of rest) {
    const value =
      e.value && typeof e.value === 'object' && 'recordId' in e.value ? { ...e.value, recordId: id } : e.value
    const r = await send(e, e.path.replace('{id}', idFor(e.path)), value)
    t.ok(
      r.status >= 200 && r.status < 300,
      `${e.verb} ${e.path} answers ${r.status}${r.status >= 300 ? `: ${r.text.slice(0, 500)}` : ''}`
    )
    if (e.contentType !== 'application/x-ndjson') continue
    // A bulk call is 200 even when its row fails: the row must load, unless the document says
    // the example needs a record of another module first.
    const moduleKey = /^\/api\/modules\/([^/]+)\/bulk$/.exec(e.path)![1]
    const needsRecord = /must be replaced by the id of a live record/.test(
      doc.paths[e.path].post.requestBody.description
    )
    const [row] = r.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    if (needsRecord)
      t.equal(
        row.problem?.code,
        'field.invalid',
        `${moduleKey}: the placeholder reference is refused, as the document warns`
      )
    else t.equal(row.status, 'created', `${moduleKey}: the example row loads (${JSON.stringify(row)})`)
  }
})

t.test(
  'only examples of modules that reference another record need one, and the records example is not one of them',
  async (t) => {
    // The tenant's modules: the registry holds every bundled one, the document only those acme installed.
    const modules = server.platform.registry
      .all()
      .map((m) => m.definition)
      .filter((m) => defaultTenants.acme.modules.includes(m.key))
    const referencing = modules
      .filter((m) => m.fields.some((f) => f.type === 'recordRef' && f.required))
      .map((m) => m.key)
    t.ok(referencing.length, 'a bundled module has a required reference (corrective-action)')
    for (const m of modules) {
      const note = doc.paths[`/api/modules/${m.key}/bulk`].post.requestBody.description
      t.equal(
        /must be replaced/.test(note),
        referencing.includes(m.key),
        `${m.key}: the bulk example says so exactly when it needs a record`
      )
    }
    t.notOk(
      referencing.includes((find('POST', '/api/v1/records')!.value as Json).moduleKey),
      'the create example needs no other record'
    )
  }
)
